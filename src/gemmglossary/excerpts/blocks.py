"""Find excerpt blocks in a page.

An excerpt block is a fenced block with the language ``metal`` whose only content is
one pymdownx.snippets line naming a line range::

    ```metal annotate="36 44" hl_lines="40"
    --8<-- "kernels/matmul_tiled.metal:31:52"
    ```

Other fenced blocks are skipped whole (so a ``markdown`` block that *shows* the syntax
is not mistaken for an excerpt). Line numbers in ``annotate`` and ``hl_lines`` are the
quoted file's own numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LANG = "metal"
SNIPPET_MARK = "--8<--"

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*?)[ \t]*$")
_SNIPPET = re.compile(r"""^--8<--[ \t]+(?P<q>["'])(?P<spec>.*)(?P=q)[ \t]*$""")
_SPEC = re.compile(r"^(?P<file>.+?):(?P<start>-?\d+):(?P<end>-?\d+)$")
_ATTR = re.compile(r"""(?P<key>[\w-]+)=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"']+))""")
_LIST_ITEM = re.compile(r"^(?P<indent>[ \t]*)\d+[.)][ \t]+\S")

#: The attributes the hook sets itself; an author may only repeat the right values.
GENERATED_ATTRS = ("linenums", "title")


@dataclass
class Block:
    """One excerpt block of a page. Indexes are 0-based lines of the page."""

    open_index: int
    close_index: int | None  # None: the fence is never closed
    snippet_index: int
    indent: str
    fence: str
    attrs: list[tuple[str, str]]  # in the author's order; values unquoted
    snippet: str  # the snippet line, stripped
    file: str | None = None
    start: int | None = None
    end: int | None = None
    error: str | None = None  # why the block is malformed, if it is
    list_items: int | None = None  # items of the ordered list right after the block
    extra_attr_text: str = ""  # anything in the info string that is not key=value

    @property
    def page_line(self) -> int:
        """1-based page line of the snippet line (where messages point)."""
        return self.snippet_index + 1

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


def parse_snippet(line: str) -> tuple[str | None, int | None, int | None, str | None]:
    """Parse ``--8<-- "path:start:end"`` → (file, start, end, error)."""
    text = line.strip()
    m = _SNIPPET.match(text)
    spec = m.group("spec") if m else None
    s = _SPEC.match(spec) if spec is not None else None
    if not s:
        return None, None, None, (
            f"malformed snippet line {text!r}: expected {SNIPPET_MARK} \"path:start:end\" "
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


def find_blocks(markdown: str) -> list[Block]:
    """Every excerpt block of a page, in page order."""
    lines = markdown.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            i += 1
            continue
        fence = m.group("fence")
        closer = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        close = next((j for j in range(i + 1, len(lines)) if closer.match(lines[j])), None)
        lang, attrs, extra = _parse_info(m.group("info"))
        body_end = close if close is not None else len(lines)
        body = [(j, lines[j]) for j in range(i + 1, body_end) if lines[j].strip()]
        has_snippet = any(text.strip().startswith(SNIPPET_MARK) for _, text in body)
        if lang == LANG and has_snippet:
            snippet_index, snippet = next((j, t) for j, t in body if t.strip().startswith(SNIPPET_MARK))
            block = Block(
                open_index=i,
                close_index=close,
                snippet_index=snippet_index,
                indent=m.group("indent"),
                fence=fence,
                attrs=attrs,
                snippet=snippet.strip(),
                extra_attr_text=extra,
            )
            block.file, block.start, block.end, block.error = parse_snippet(snippet)
            if close is None:
                block.error = f"the fence opened on line {i + 1} is never closed"
            elif len(body) != 1:
                block.error = (
                    "an excerpt block must contain only its snippet line "
                    f"(found {len(body)} non-blank lines)"
                )
            else:
                block.list_items = _count_list_items(lines, close, block.indent)
            blocks.append(block)
        i = (close if close is not None else len(lines)) + 1
    return blocks
