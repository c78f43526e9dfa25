"""Figures generated at build time (a Python-Markdown extension).

A page asks for a figure with a line of its own::

    {{figure NAME key=value key="a value with spaces" ...}}

``NAME`` is one of :data:`gemmglossary.figures.FIGURES`; the arguments are the
generator's (``key=value``, or ``key="..."`` for text with spaces). One argument belongs
to the extension: ``caption="..."``, a sentence shown under the figure before the
generated line that says what the figure was computed from (both may use `code`
spans). The line becomes ``<figure class="gg-figure">`` holding the inline SVG and its
caption; indentation is kept, so a figure may sit in an admonition or a list.

A figure that cannot be generated (an unknown name or argument, a kernel that does not
have what the figure needs, an emulator run that fails) fails the build with the page
and line of the tag. A tag that is not alone on its line is an error too, except inside
a code span or a fenced block (which is how a page shows the syntax).

It runs after the fenced blocks are set aside (SuperFences, priority 25) and before
raw HTML blocks are (20), and stores the figure's HTML in Python-Markdown's stash, so
no other Markdown processing touches the SVG. Like the facts extension it needs no
MkDocs hook, so any engine running Python-Markdown extensions expands figures the same
way; the page name comes from MkDocs' ``relpath`` tree processor when MkDocs is the engine.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from markdown import Extension
from markdown.preprocessors import Preprocessor

from ..figures import FIGURES, FigureError, cached, generate
from ..figures import cache as figure_cache
from ..figures.svg import with_id
from .facts import _page_file
from .page_errors import PageError

#: A figure tag alone on its line (indentation kept).
TAG = re.compile(r"^(?P<indent>[ \t]*)\{\{figure\b(?P<body>[^{}\n]*)\}\}[ \t]*$")
OPENER = re.compile(r"\{\{\s*figure\b")
NAME = re.compile(r"[a-z][a-z0-9-]*$")
ARG = re.compile(r'(?P<key>[A-Za-z][A-Za-z0-9_]*)=(?:"(?P<quoted>[^"]*)"|(?P<value>[^\s"]+))')
CODE_SPAN = re.compile(r"(`+).+?\1")


def parse(body: str) -> tuple[str, dict[str, str]]:
    """(name, {key: text}) of the text between ``{{figure`` and ``}}``."""
    body = body.strip()
    name, _, rest = body.partition(" ")
    if not name:
        raise FigureError("a figure needs a name: {{figure NAME key=value ...}}")
    if not NAME.match(name):
        raise FigureError(f"{name!r} is not a figure name (lower-case letters, digits and '-')")
    args: dict[str, str] = {}
    pos = 0
    rest = rest.strip()
    while pos < len(rest):
        m = ARG.match(rest, pos)
        if not m:
            word = rest[pos:].split()[0]
            raise FigureError(f"figure {name}: {word!r} is not key=value or key=\"text\"")
        key = m["key"]
        if key in args:
            raise FigureError(f"figure {name}: argument {key!r} given twice")
        args[key] = m["quoted"] if m["quoted"] is not None else m["value"]
        pos = m.end()
        while pos < len(rest) and rest[pos] in " \t":
            pos += 1
    return name, args


def inline(text: str) -> str:
    """Caption text as HTML: escaped, with `code` spans."""
    out, pos = [], 0
    for m in CODE_SPAN.finditer(text):
        out.append(html.escape(text[pos:m.start()], quote=False))
        out.append("<code>" + html.escape(m.group(0)[len(m.group(1)):-len(m.group(1))].strip(), quote=False) + "</code>")
        pos = m.end()
    out.append(html.escape(text[pos:], quote=False))
    return "".join(out)


#: Under ``mkdocs serve``'s first build (:mod:`.serve`), the figures not yet drawn: each is
#: shown as a placeholder and listed here, (name, arguments), to be drawn in the background.
#: None everywhere else: a figure is drawn before its page is written.
deferred: list[tuple[str, dict[str, str]]] | None = None

PLACEHOLDER = ('<figure class="gg-figure" id="{ident}" data-figure="{name}"><p><em>Being drawn: '
               "<code>mkdocs serve</code> showed this page before its figures were ready; it reloads "
               "when they are.</em></p></figure>")


def figure_html(name: str, args: dict[str, str], ident: str) -> str:
    """The ``<figure>`` element for one tag."""
    args = dict(args)
    caption = args.pop("caption", None)
    if deferred is not None:
        fig = cached(name, args)
        if fig is None:
            if name not in FIGURES:
                raise FigureError(f"unknown figure {name!r}; known figures: {', '.join(sorted(FIGURES))}")
            deferred.append((name, args))
            return PLACEHOLDER.format(ident=ident, name=html.escape(name, quote=True))
    else:
        fig = generate(name, args)
    parts = []
    if caption:
        parts.append(inline(caption))
    parts.append(f'<span class="gg-source">{inline(fig.source)}</span>')
    return (f'<figure class="gg-figure" id="{ident}" data-figure="{html.escape(name, quote=True)}">'
            f"{with_id(fig.svg, ident)}<figcaption>{' '.join(parts)}</figcaption></figure>")


_pruned = False


def _prune_once() -> None:
    global _pruned
    if not _pruned:
        figure_cache.prune()
        _pruned = True


class FigureTagError(PageError, FigureError):
    """A page's figure tag that cannot be drawn: one message under MkDocs too, no traceback."""


class FiguresPreprocessor(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        _prune_once()
        out: list[str] = []
        used: dict[str, int] = {}
        seen: dict[str, int] = {}  # tag text -> how many times it came before (to find its line)
        for index, line in enumerate(lines):
            m = TAG.match(line)
            if not m:
                if OPENER.search(CODE_SPAN.sub("", line)):
                    raise FigureTagError(f"{self._where(index, line, seen)}: a figure tag must be alone on its "
                                      "line: {{figure NAME key=value ...}}")
                out.append(line)
                continue
            try:
                name, args = parse(m["body"])
                used[name] = used.get(name, 0) + 1
                ident = f"figure-{name}" + (f"-{used[name]}" if used[name] > 1 else "")
                block = figure_html(name, args, ident)
            except FigureError as exc:  # the tag's own mistake: one message
                raise FigureTagError(f"{self._where(index, line, seen)}: {exc}") from None
            except Exception as exc:  # an emulator run or a kernel that failed: name the page, keep the traceback
                raise FigureError(f"{self._where(index, line, seen)}: figure {m['body'].split()[0]}: "
                                  f"{type(exc).__name__}: {exc}") from exc
            seen[line.strip()] = seen.get(line.strip(), 0) + 1
            indent = m["indent"]
            out.extend(["", indent + self.md.htmlStash.store(block), ""])
        return out

    def _where(self, index: int, line: str, seen: dict[str, int]) -> str:
        """``docs/page.md:LINE``: the line of the page's own file holding this tag (the
        text seen here has lost its front matter and fenced blocks)."""
        page = _page_file(self.md)
        if page is None:
            return f"<markdown>:{index + 1}"
        label, path = page
        try:
            source = Path(path).read_text(encoding="utf-8").split("\n")
        except OSError:
            return f"{label} (text line {index + 1})"
        wanted, skip = line.strip(), seen.get(line.strip(), 0)
        for number, text in enumerate(source, 1):
            if text.strip() == wanted:
                if skip == 0:
                    return f"{label}:{number}"
                skip -= 1
        return f"{label} (text line {index + 1})"


class FiguresExtension(Extension):
    def extendMarkdown(self, md):
        md.preprocessors.register(FiguresPreprocessor(md), "gemmglossary_figures", 24)


def makeExtension(**kwargs):
    return FiguresExtension(**kwargs)
