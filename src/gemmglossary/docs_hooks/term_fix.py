"""Write the links the glossary-link check asks for: ``python -m gemmglossary.docs_hooks.term_links --fix``.

The check (:mod:`.term_links`) fails a page whose first mention of a glossary term does not
link its entry, and names the link to write. When an entry gains a term, every page that
mentions it fails at once; this module writes those links into the page files, so that
the fix is a command that can be run again after other edits are merged.

It finds the mentions exactly as the check does, by converting each page with the site's
own Markdown extensions (from ``mkdocs.yml``) under a stand-in for MkDocs' ``relpath``
processor, so that what counts as prose is the check's decision, not a second reading of
the Markdown. Figure tags are set aside first (a figure is never prose, and drawing one
can mean running a kernel). Each mention is then located in the file as the check locates
it for its error message (:func:`.term_links.source_span`: never in front matter, a
heading, a fenced block, a code span, a link's text, a table's header row or an admonition,
folded block or tab title), and its words become the link's text: ``[Threadgroups](...)``
keeps the page's own spelling, case and line break.

A page is written only when converting the edited text passes the check; a page where a
mention cannot be placed, or where the placed link does not satisfy the check, is left as
it was and reported, so the command never leaves a page worse than it found it.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import markdown
import yaml
from markdown.preprocessors import Preprocessor

from . import figures as figure_tags
from .glossary_terms import FRONT_MATTER, load_index
from . import facts
from .term_links import Mention, _front_matter_end, _not_prose, first_mentions, source_spans

#: Extensions of mkdocs.yml left out: figures are set aside by this module instead, and the
#: engine check only guards a plain Zensical build.
LEFT_OUT = {"gemmglossary.docs_hooks.figures", "gemmglossary.docs_hooks.engine_check"}


@dataclass(frozen=True)
class PageFix:
    page: str                  # relative to docs_dir
    links: list[str]           # the links written, "phrase -> target"
    unplaced: list[str]        # mentions that could not be fixed, with why


class _NoFigures(Preprocessor):
    """Figure tags become empty lines (their drawing and caption are never prose)."""

    def run(self, lines):
        return ["" if figure_tags.TAG.match(line) else line for line in lines]


def _site_extensions(config_file: Path) -> tuple[list, dict]:
    """The markdown_extensions of ``config_file``, as names and configs, less :data:`LEFT_OUT`."""
    config = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
    names, configs = [], {}
    for entry in config.get("markdown_extensions", []):
        name, options = (next(iter(entry.items())) if isinstance(entry, dict) else (entry, None))
        if name in LEFT_OUT:
            continue
        names.append(name)
        if options:
            configs[name] = options
    return names, configs


class Converter:
    """Converts a page's text as MkDocs would for the check, and returns its first mentions."""

    def __init__(self, docs_dir: Path, config_file: Path):
        self.docs_dir = docs_dir
        self.names, self.configs = _site_extensions(config_file)

    def mentions(self, page: str, text: str) -> list[Mention]:
        md = markdown.Markdown(extensions=self.names, extension_configs=self.configs)
        md.preprocessors.register(_NoFigures(md), "gemmglossary_no_figures", 25)
        file = types.SimpleNamespace(src_uri=page, abs_src_path=str(self.docs_dir / page))
        md.treeprocessors.register(types.SimpleNamespace(file=file, run=lambda root: None), "relpath", 0)
        found: list[Mention] = []
        index = load_index(self.docs_dir)

        def collect(root):
            found.extend(first_mentions(md, root, page, index))
            return None

        md.treeprocessors.register(types.SimpleNamespace(run=collect), "gemmglossary_term_fix", 14)
        md.treeprocessors.deregister("gemmglossary_term_links")
        m = FRONT_MATTER.match(text)
        md.convert(text[m.end():] if m else text)
        return found


def _wrap(text: str, span: tuple[int, int], target: str) -> str:
    start, end = span
    return f"{text[:start]}[{text[start:end]}]({target}){text[end:]}"


def fact_spans(text: str, mention: Mention):
    """The fact tags of ``text`` in running prose whose value holds ``mention``'s words, as
    (start, end) offsets of the whole tag: a mention a fact writes (``1×2 simdgroups``) has
    no words in the file to wrap, so the tag becomes the link's text. Not a tag inside a
    link's target, a code span or any other place that is not prose."""
    words = re.compile(r"(?<![\w-])" + r"\s+".join(re.escape(w) for w in mention.phrase.split()) + r"(?![\w-])",
                       re.IGNORECASE)
    for m in facts.FACT.finditer(text, _front_matter_end(text)):
        if text[:m.start()].endswith("](") or _not_prose(text, m.start()):
            continue
        try:
            value = facts.evaluate(m["body"])
        except Exception:  # a fact the build would refuse is the build's to report
            continue
        if "\n" not in value and words.search(value):
            yield m.start(), m.end()


def candidates(text: str, mention: Mention):
    """Where ``mention`` may be wrapped, best first: its words in the file, then a fact."""
    yield from source_spans(text, mention)
    yield from fact_spans(text, mention)


def linked(text: str, page: str, mentions: list[Mention], choice: dict[str, int] | None = None
           ) -> tuple[str, list[str], list[str]]:
    """``text`` with each mention wrapped in a link to its entry, at its best place or at the
    place ``choice`` gives by entry (an index into :func:`candidates`); the links written
    and the mentions that could not be placed."""
    choice = choice or {}
    spans, unplaced = [], []
    for m in mentions:
        places = list(candidates(text, m))
        k = choice.get(m.entry, 0)
        if k >= len(places):
            unplaced.append(f"{_words(m.phrase)!r}: " + ("not found in the file outside code, headings and links"
                                                       if not places else "no place for its link satisfies the check"))
            continue
        spans.append((places[k], m))
    spans.sort(key=lambda s: s[0][0], reverse=True)
    links, last = [], len(text) + 1
    for span, m in spans:
        if span[1] > last:  # overlaps the link after it: leave it to the next round
            unplaced.append(f"{_words(m.phrase)!r}: its place overlaps another link")
            continue
        target = _target(m, page)
        text = _wrap(text, span, target)
        links.append(f"{_words(m.phrase)} -> {target}")
        last = span[0]
    return text, links[::-1], unplaced


def _target(mention: Mention, page: str) -> str:
    return posixpath.relpath(mention.entry, posixpath.dirname(page) or ".")


def _words(phrase: str) -> str:
    return " ".join(phrase.split())


def fix_page(converter: Converter, page: str, *, write: bool = True) -> PageFix:
    """Link every first mention of ``page`` the check reports. Each is placed at its best
    place first; one whose link the check does not see there (an occurrence in a code
    annotation, say, found before the one in prose) is moved to its next place, until the
    check is satisfied or the places run out. The page is written only if it then passes."""
    path = converter.docs_dir / page
    original = path.read_text(encoding="utf-8")
    mentions = converter.mentions(page, original)
    if not mentions:
        return PageFix(page, [], [])
    choice: dict[str, int] = {}
    while True:
        text, links, unplaced = linked(original, page, mentions, choice)
        if unplaced:
            return PageFix(page, [], unplaced)
        left = {m.entry for m in converter.mentions(page, text)}
        if not left:
            break
        for entry in left:
            choice[entry] = choice.get(entry, 0) + 1
    if write and text != original:
        path.write_text(text, encoding="utf-8")
    return PageFix(page, links, [])


def pages_of(docs_dir: Path) -> list[str]:
    """Every Markdown page of ``docs_dir`` the check reads (not hidden folders, not the
    Markdown the Zensical staging writes for a snippet)."""
    out = []
    for p in sorted(docs_dir.rglob("*.md")):
        rel = p.relative_to(docs_dir)
        if any(part.startswith(".") for part in rel.parts) or p.with_suffix(".py").is_file():
            continue
        out.append(rel.as_posix())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gemmglossary.docs_hooks.term_links",
        description="Link the first mention of every glossary term on the site's pages (the build's "
                    "glossary-link check). With --fix, write the links into the page files; without it, "
                    "list them. Exit status 1 when a mention is left unlinked.")
    parser.add_argument("--fix", action="store_true", help="write the links into the pages")
    parser.add_argument("--config", type=Path, default=Path("mkdocs.yml"), help="the site's mkdocs.yml")
    parser.add_argument("pages", nargs="*", help="pages relative to docs_dir (default: every page)")
    args = parser.parse_args(argv)
    # The excerpts' line-coverage marks are no prose, and making them can mean a coverage run.
    os.environ.setdefault("GEMMGLOSSARY_SITE_COVERAGE", "off")
    if not args.config.is_file():
        print(f"{args.config}: no such file (run from the project root, or give --config)", file=sys.stderr)
        return 2
    config = yaml.safe_load(args.config.read_text(encoding="utf-8")) or {}
    docs_dir = (args.config.parent / config.get("docs_dir", "docs")).resolve()
    converter = Converter(docs_dir, args.config)
    pages = args.pages or pages_of(docs_dir)
    unknown = [p for p in pages if not (docs_dir / p).is_file()]
    if unknown:
        print(f"no such page under {docs_dir}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    status = 0
    for page in pages:
        result = fix_page(converter, page, write=args.fix)
        for link in result.links:
            print(f"docs/{page}: {'linked' if args.fix else 'to link'} {link}")
        for problem in result.unplaced:
            print(f"docs/{page}: left unlinked: {problem}", file=sys.stderr)
        if result.unplaced or (result.links and not args.fix):
            status = 1
    return status

