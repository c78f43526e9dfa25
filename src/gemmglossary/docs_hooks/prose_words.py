"""The prose of a built page, and its words: what a reader reads as running text.

Counted from the page's HTML as either engine writes it (the content ``<article>`` of
Material's and Zensical's theme), so a budget is held against what the site shows, after
the facts and figures are expanded. Counted: paragraphs, lists, block quotes, the bodies
of admonitions shown open, and code annotations (the numbered notes a reader opens from a
code block's markers). An inline code span in a sentence is a word of it. Not counted:

- code blocks, with their titles, and each excerpt's line of source link and coverage;
- tables, figures (the drawing and its caption), and images;
- headings, admonition titles and tab labels;
- folded blocks (``??? note``, ``<details>``): the collapsed project notes and the
  exercises' reference solutions a reader opens on purpose.

A word is a run of non-space characters holding a letter or a digit (a lone ``·`` or
``—`` is not one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
#: Elements whose whole content is not prose.
SKIPPED_TAGS = {"pre", "table", "figure", "svg", "img", "details", "script", "style", "nav", "form", "button",
                "h1", "h2", "h3", "h4", "h5", "h6"}
#: Classes whose element is not prose, wherever it is.
SKIPPED_CLASSES = {"highlight", "admonition-title", "tabbed-labels", "headerlink", "filename", "md-source-file"}
WORD = re.compile(r"\S*[^\W_]\S*")


class ProseError(ValueError):
    """The HTML is not a built page: it has no content article."""


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str]
    children: list = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())


class _Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = _Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = _Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(_Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):  # close up to the matching open tag
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def _article(node: _Node) -> _Node | None:
    for child in node.children:
        if isinstance(child, _Node):
            if child.tag == "article" and "md-content__inner" in child.classes:
                return child
            found = _article(child)
            if found is not None:
                return found
    return None


def _is_excerpt_source(node: _Node) -> bool:
    """The paragraph under an excerpt's title: its source link and line coverage."""
    return node.tag == "p" and any(isinstance(c, _Node) and c.tag == "a" and "excerpt-source" in c.classes
                                   for c in node.children)


def _skipped(node: _Node) -> bool:
    return node.tag in SKIPPED_TAGS or bool(node.classes & SKIPPED_CLASSES) or _is_excerpt_source(node)


BLOCKS = {"p", "li", "blockquote", "div", "dd", "dt", "ol", "ul", "article", "section"}


def prose_passages(page_html: str) -> list[str]:
    """The counted text of a built page, one passage per block (paragraph, list item...)."""
    tree = _Tree()
    tree.feed(page_html)
    tree.close()
    article = _article(tree.root)
    if article is None:
        raise ProseError("no <article class=\"md-content__inner\">: not a page of the built site")
    passages: list[str] = []
    current: list[str] = []

    def flush():
        text = " ".join("".join(current).split())
        if text:
            passages.append(text)
        current.clear()

    def walk(node: _Node):
        for child in node.children:
            if isinstance(child, str):
                current.append(child)
            elif not _skipped(child):
                block = child.tag in BLOCKS
                if block:
                    flush()
                walk(child)
                if block:
                    flush()
            elif child.tag not in VOID:
                current.append(" ")  # a skipped inline element still separates the words around it

    walk(article)
    flush()
    return passages


def prose_words(page_html: str) -> int:
    """The number of words of prose on a built page (see the module docstring)."""
    return sum(len(WORD.findall(p)) for p in prose_passages(page_html))
