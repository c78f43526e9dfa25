"""Find excerpt blocks in a page.

An excerpt block is a fenced block with the language ``metal`` whose only content is
one excerpt line naming a line range of a file (the ``--8<--`` syntax of
pymdownx.snippets, which the hook expands itself)::

    ```metal annotate="36 44" hl_lines="40"
    --8<-- "kernels/matmul_tiled.metal:31:52"
    ```

Line numbers in ``annotate`` and ``hl_lines`` are the quoted file's own numbers.

Nothing else expands an excerpt line, so one anywhere else (outside any fence, or in a
fence of another language) would show as text where a writer expected code: it is
reported as a *stray* excerpt line. A ``markdown`` or ``text`` fence may show the syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LANG = "metal"
EXCERPT_MARK = "--8<--"
#: Fence languages in which an excerpt line is shown, not quoted.
SHOWN_IN = frozenset({"markdown", "md", "text", "txt"})

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*?)[ \t]*$")
_EXCERPT_LINE = re.compile(r"""^--8<--[ \t]+(?P<q>["'])(?P<spec>.*)(?P=q)[ \t]*$""")
_SPEC = re.compile(r"^(?P<file>.+?):(?P<start>-?\d+):(?P<end>-?\d+)$")
_ATTR = re.compile(r"""(?P<key>[\w-]+)=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"']+))""")
_LIST_ITEM = re.compile(r"^(?P<indent>[ \t]*)\d+[.)][ \t]+\S")


@dataclass
class Block:
    """One excerpt block of a page. Indexes are 0-based lines of the page."""

    open_index: int
    close_index: int | None  # None: the fence is never closed
    line_index: int  # of the excerpt line
    indent: str
    fence: str
    attrs: list[tuple[str, str]]  # in the author's order; values unquoted
    excerpt_line: str  # the --8<-- line, stripped
    file: str | None = None
    start: int | None = None
    end: int | None = None
    error: str | None = None  # why the block is malformed, if it is
    list_items: int | None = None  # items of the ordered list right after the block
    extra_attr_text: str = ""  # anything in the info string that is not key=value

    @property
    def page_line(self) -> int:
        """1-based page line of the excerpt line (where messages point)."""
        return self.line_index + 1

    def attr(self, key: str) -> str | None:
        for k, v in self.attrs:
            if k == key:
                return v
        return None


@dataclass
class NumberList:
    numbers: list[int] = field(default_factory=list)
    error: str | None = None


def parse_numbers(value: str | None, *, ranges: bool) -> NumberList:
    """``"36 44"`` → [36, 44]; with ``ranges``, ``"3-5"`` → [3, 4, 5] (as pymdownx does)."""
    out = NumberList()
    if value is None:
        return out
    for token in value.replace(",", " ").split():
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", token)
        if not m or (m.group(2) and not ranges):
            out.error = f"{token!r} is not a line number"
            return out
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        if b < a:
            out.error = f"{token!r} is a reversed range"
            return out
        out.numbers.extend(range(a, b + 1))
    return out


@dataclass
class StrayLine:
    """An excerpt line outside an excerpt block (0-based page line)."""

    index: int
    text: str
    fence_lang: str | None  # None: outside any fence

    @property
    def page_line(self) -> int:
        return self.index + 1

    @property
    def where(self) -> str:
        if self.fence_lang is None:
            return "outside any fence"
        return f"in a {self.fence_lang!r} fence" if self.fence_lang else "in a fence without a language"


def parse_excerpt_line(line: str) -> tuple[str | None, int | None, int | None, str | None]:
    """Parse ``--8<-- "path:start:end"`` → (file, start, end, error)."""
    text = line.strip()
    m = _EXCERPT_LINE.match(text)
    spec = m.group("spec") if m else None
    s = _SPEC.match(spec) if spec is not None else None
    if not s:
        return None, None, None, (
            f"malformed excerpt line {text!r}: expected {EXCERPT_MARK} \"path:start:end\" "
            "(path relative to the repository root, 1-based inclusive line numbers)"
        )
    return s.group("file").strip(), int(s.group("start")), int(s.group("end")), None


def _parse_info(info: str) -> tuple[str, list[tuple[str, str]], str]:
    lang, _, rest = info.partition(" ")
    if "\t" in lang:
        lang, _, more = lang.partition("\t")
        rest = more + " " + rest
    attrs = []
    leftover = []
    pos = 0
    for m in _ATTR.finditer(rest):
        leftover.append(rest[pos : m.start()])
        pos = m.end()
        value = next(v for v in (m.group("dq"), m.group("sq"), m.group("bare")) if v is not None)
        attrs.append((m.group("key"), value))
    leftover.append(rest[pos:])
    return lang.strip(), attrs, " ".join("".join(leftover).split())


def _count_list_items(lines: list[str], after: int, indent: str) -> int | None:
    """Items of the ordered list that follows line ``after`` (None when there is none)."""
    i = after + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    width = len(indent.expandtabs(4))
    count = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        line_width = len(line) - len(line.lstrip())
        m = _LIST_ITEM.match(line)
        if m and len(m.group("indent").expandtabs(4)) == width:
            count += 1
        elif count and line_width > width:
            pass  # continuation of the current item
        else:
            break
        i += 1
    return count or None


def scan(markdown: str) -> tuple[list[Block], list[StrayLine]]:
    """Every excerpt block of a page, and every stray excerpt line, in page order."""
    lines = markdown.split("\n")
    blocks: list[Block] = []
    strays: list[StrayLine] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            if lines[i].strip().startswith(EXCERPT_MARK):
                strays.append(StrayLine(i, lines[i].strip(), None))
            i += 1
            continue
        fence = m.group("fence")
        closer = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        close = next((j for j in range(i + 1, len(lines)) if closer.match(lines[j])), None)
        lang, attrs, extra = _parse_info(m.group("info"))
        body_end = close if close is not None else len(lines)
        body = [(j, lines[j]) for j in range(i + 1, body_end) if lines[j].strip()]
        marked = [(j, t) for j, t in body if t.strip().startswith(EXCERPT_MARK)]
        if lang == LANG and marked:
            line_index, excerpt_line = marked[0]
            block = Block(
                open_index=i,
                close_index=close,
                line_index=line_index,
                indent=m.group("indent"),
                fence=fence,
                attrs=attrs,
                excerpt_line=excerpt_line.strip(),
                extra_attr_text=extra,
            )
            block.file, block.start, block.end, block.error = parse_excerpt_line(excerpt_line)
            if close is None:
                block.error = f"the fence opened on line {i + 1} is never closed"
            elif len(body) != 1:
                block.error = (
                    "an excerpt block must contain only its excerpt line "
                    f"(found {len(body)} non-blank lines)"
                )
            else:
                block.list_items = _count_list_items(lines, close, block.indent)
            blocks.append(block)
        elif lang.lower() not in SHOWN_IN:
            strays += [StrayLine(j, t.strip(), lang) for j, t in marked]
        i = (close if close is not None else len(lines)) + 1
    return blocks, strays


def find_blocks(markdown: str) -> list[Block]:
    """Every excerpt block of a page, in page order."""
    return scan(markdown)[0]
