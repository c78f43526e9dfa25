"""The first mention of a glossary term on a page links to its entry: a Python-Markdown
extension that fails the build otherwise, under MkDocs and Zensical alike.

Each entry declares its terms in its page's front matter, the lower-case phrases (plural
forms too) whose first mention on any other page must link to it::

    ---
    terms: [barrier, barriers, threadgroup barrier, threadgroup barriers]
    ---

The terms of every page of docs_dir are read from the files themselves
(:mod:`.glossary_terms`), so the check needs nothing from the engine but the page it is
converting (:mod:`.page`). On each page, the text is read in document order; for every
entry, the first *event* decides: a link to the entry (any link text, any anchor) passes;
a mention of one of its terms that is not inside such a link fails the build, naming the
page's line, the phrase and the entry. Later mentions are free.

What counts as a mention: the words a reader reads as running prose, matched
case-insensitively as whole words (not inside ``threadgroup_barrier`` or
``non-barrier``), the longest term first (``quantized GEMV`` is a mention of the quantized
entry, not of GEMV). That is the text of paragraphs, list items, table cells, block
quotes, and the bodies of admonitions and folded blocks. Not counted, neither as mention
nor as link:

- code: inline code spans and code blocks (a kernel's ``barrier`` is not prose);
- headings, table header cells, admonition titles, folded blocks' summaries, tab labels
  and a paragraph's run-in label (``**Dispatch.**`` opening it, in bold, ending in ``.`` or
  ``:``): titles a reader reads before the text, which links then follow;
- the text of a link to anything else (it already leads somewhere);
- code annotations (the numbered list after a code block that Material turns into the
  markers' tooltips): hidden until clicked, so a link there does not serve a first read,
  and a mention there need not carry one;
- generated HTML: figures and their captions, excerpts, raw HTML blocks;
- the entry's own terms on the entry's own page;
- the snippet pages, which are generated from ``snippets/*.py`` (mkdocs-jupyter renders
  them under MkDocs without Python-Markdown, so checking them under Zensical alone would
  make the engines disagree).

It runs as a tree processor after the inline patterns (the links and code spans exist)
and before MkDocs' ``relpath`` processor rewrites the links (they still name ``.md``
files). A page that no engine names (a bare ``markdown.markdown()`` call) is not checked.
"""

from __future__ import annotations

import posixpath
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from markdown import Extension
from markdown.treeprocessors import Treeprocessor
from markdown.util import STX, ETX

from .glossary_terms import TermIndex, docs_dir_of, is_snippet_page, load_index
from .page import current_page

try:  # MkDocs prints a PluginError as a message, not a traceback; Zensical prints any error.
    from mkdocs.exceptions import PluginError as _BuildError
except ImportError:  # pragma: no cover - mkdocs is a dependency of the package
    _BuildError = RuntimeError  # type: ignore[misc,assignment]

#: After the inline patterns (20), before attr_list (8), toc (5) and MkDocs' relpath (0).
PRIORITY = 15
#: Elements whose whole content is not prose (see the module docstring).
NOT_PROSE = {"code", "pre", "kbd", "samp", "script", "style", "h1", "h2", "h3", "h4", "h5", "h6",
             "th", "summary", "label", "figure", "figcaption", "svg"}
PLACEHOLDER = re.compile(f"{STX}wzxhzdk:(\\d+){ETX}")
#: A code annotation marker as Material finds it: ``(1)`` or ``(2)!`` in a comment of the
#: highlighted code (Pygments' comment classes).
ANNOTATION_MARKER = re.compile(r'<span class="c[1hms]?">[^<]*\(\d+\)!?')


class TermLinkError(_BuildError):
    """A page mentions a glossary term first without linking its entry."""


@dataclass(frozen=True)
class Mention:
    """The first event for an entry on a page that is a mention, not a link."""

    entry: str     # the entry's page, relative to docs_dir
    phrase: str    # the words as the page has them
    before: str    # the text just before them and after them, in the same run of text
    after: str     # (to find their line in the page's file)


def link_targets(href: str, page: str) -> tuple[str, ...]:
    """The pages (relative to docs_dir) a link of ``page`` may lead to: its ``.md`` file,
    or for a directory URL written by hand (``../split-k/``) both files it may stand for;
    none when it leaves the site's pages (another host, an anchor on the page itself)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return ()
    path = unquote(parts.path)
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    if path.endswith("/"):
        return (f"{target}.md", f"{target}/index.md")
    return (target,) if target.endswith(".md") else ()


def _stashed(md, text: str) -> str:
    """The raw HTML that the placeholders in ``text`` stand for."""
    out = []
    for m in PLACEHOLDER.finditer(text or ""):
        index = int(m.group(1))
        if index < len(md.htmlStash.rawHtmlBlocks):
            out.append(str(md.htmlStash.rawHtmlBlocks[index]))
    return "".join(out)


def _is_code_placeholder(md, el) -> bool:
    """``el`` is a paragraph holding only a stashed code block with annotation markers."""
    if el is None or el.tag != "p" or len(el) or not PLACEHOLDER.fullmatch((el.text or "").strip()):
        return False
    html = _stashed(md, el.text)
    return "<code" in html and bool(ANNOTATION_MARKER.search(html))


def _is_title(el) -> bool:
    return el.tag == "p" and "admonition-title" in (el.get("class") or "").split()


def _is_run_in_label(parent, child) -> bool:
    """``child`` is the bold label a paragraph or list item opens with (``**Shapes.**``)."""
    return (parent.tag in ("p", "li") and child is parent[0] and not (parent.text or "").strip()
            and child.tag in ("strong", "b") and not len(child)
            and (child.text or "").rstrip().endswith((".", ":")))


def first_mentions(md, root, page: str, index: TermIndex) -> list[Mention]:
    """The entries whose first event on ``page`` is an unlinked mention, in page order."""
    seen: set[str] = set()
    found: list[Mention] = []

    def read(text: str | None) -> None:
        if not text:
            return
        text = PLACEHOLDER.sub(" ", text)
        for m in index.pattern.finditer(text):
            entry = index.entry_of(m.group(0))
            if entry is None or entry == page or entry in seen:
                continue
            seen.add(entry)
            found.append(Mention(entry, m.group(0), text[:m.start()], text[m.end():]))

    def walk(el) -> None:
        if el.tag == "a":
            seen.update(t for t in link_targets(el.get("href", ""), page) if t in index.entries)
            return  # link text: neither a mention nor, for another target, prose
        read(el.text)
        previous = None
        for child in el:
            skip = (not isinstance(child.tag, str) or child.tag in NOT_PROSE or _is_title(child)
                    or _is_run_in_label(el, child)
                    or (child.tag == "ol" and _is_code_placeholder(md, previous)))
            if not skip:
                walk(child)
            read(child.tail)
            previous = child

    walk(root)
    return found


def source_line(source: str, mention: Mention) -> int | None:
    """The line of the page's file where ``mention`` is (see :func:`source_span`)."""
    span = source_span(source, mention)
    return None if span is None else source.count("\n", 0, span[0]) + 1


def source_span(source: str, mention: Mention) -> tuple[int, int] | None:
    """Where ``mention``'s words are in the page's file, as (start, end) offsets: the first
    of :func:`source_spans`, or None."""
    return next(source_spans(source, mention), None)


def source_spans(source: str, mention: Mention):
    """Every place of the page's file that may hold ``mention``, best first, as (start, end)
    offsets of its words: found by the words around it in its run of text (the tree has
    lost the file's lines), three words either side, then fewer; the page's own spelling
    first, then any case. An occurrence in front matter, a heading, a code span or block, a
    link's text, a table's header row or a title line is not the mention."""
    body = _front_matter_end(source)
    before, after, phrase = mention.before.split()[-3:], mention.after.split()[:3], mention.phrase.split()
    contexts = []
    for n in range(3, -1, -1):
        contexts += [(before[max(len(before) - n, 0):], after[:n]), (before[max(len(before) - n, 0):], []),
                     ([], after[:n])]
    seen = set()
    for flags in (0, re.IGNORECASE):
        for words_before, words_after in dict.fromkeys((tuple(b), tuple(a)) for b, a in contexts):
            words = [*words_before, *phrase, *words_after]
            pattern = re.compile(r"(?<![\w-])" + r"\s+".join(re.escape(w) for w in words) + r"(?![\w-])", flags)
            for m in pattern.finditer(source, body):
                starts = _word_starts(m.group(0))
                at = m.start() + starts[len(words_before)]
                end = m.start() + starts[len(words_before) + len(phrase) - 1] + len(phrase[-1])
                if (at, end) not in seen and not _not_prose(source, at):
                    seen.add((at, end))
                    yield at, end


def _word_starts(text: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\S+", text)]


def _front_matter_end(source: str) -> int:
    if not source.startswith("---"):
        return 0
    m = re.compile(r"^(---|\.\.\.)[ \t]*$", re.M).search(source, 3)
    return m.end() if m else 0


#: A line that titles what follows: an admonition or folded block with its title, a tab.
TITLE_LINE = re.compile(r"^\s*(?:!!!|\?\?\?\+?|===)\s")
#: The separator row under a table's header row.
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _not_prose(source: str, at: int) -> bool:
    """The text at ``at`` is in a heading, a title line, a table's header row, a fenced
    block, a code span or a link's text."""
    line_start = source.rfind("\n", 0, at) + 1
    before = source[line_start:at]
    if before.lstrip().startswith("#") or TITLE_LINE.match(before):
        return True
    line_end = source.find("\n", at)
    next_end = source.find("\n", line_end + 1) if line_end != -1 else -1
    following = source[line_end + 1:next_end if next_end != -1 else len(source)] if line_end != -1 else ""
    if "|" in source[line_start:line_end if line_end != -1 else len(source)] and TABLE_RULE.match(following):
        return True
    if len(re.findall(r"^\s*```", source[:line_start], re.M)) % 2 == 1:  # inside a fenced block
        return True
    return before.count("`") % 2 == 1 or before.count("[") > before.count("]")


def check(md, root) -> None:
    """Raise TermLinkError listing every first mention on the page that links nothing."""
    page = current_page(md)
    if page is None or page.path is None or is_snippet_page(page):
        return
    docs = docs_dir_of(page)
    index = load_index(docs)
    mentions = first_mentions(md, root, page.src_uri, index)
    if not mentions:
        return
    try:
        source = Path(page.path).read_text(encoding="utf-8")
    except OSError:
        source = ""
    problems = []
    for m in mentions:
        line = source_line(source, m)
        where = f"{page.label}:{line}" if line else f"{page.label} (line not found)"
        problems.append(f"  {where}: first mention of {m.phrase!r} does not link its entry: "
                        f"write [{m.phrase}]({posixpath.relpath(m.entry, posixpath.dirname(page.src_uri) or '.')})")
    raise TermLinkError("glossary terms mentioned before their entry is linked (the first mention of a term "
                        "on a page links to its entry; see gemmglossary.docs_hooks.term_links):\n"
                        + "\n".join(problems))


class TermLinksTreeprocessor(Treeprocessor):
    def run(self, root: ET.Element):
        check(self.md, root)
        return None


class TermLinksExtension(Extension):
    def extendMarkdown(self, md):
        md.treeprocessors.register(TermLinksTreeprocessor(md), "gemmglossary_term_links", PRIORITY)


def makeExtension(**kwargs):
    return TermLinksExtension(**kwargs)


if __name__ == "__main__":  # python -m gemmglossary.docs_hooks.term_links [--fix] [PAGE ...]
    from .term_fix import main

    raise SystemExit(main())
