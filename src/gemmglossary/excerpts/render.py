"""Expand excerpt blocks into plain fenced code (what the excerpts Markdown extension emits).

For ``--8<-- "kernels/matmul_tiled.metal:31:52"`` with ``annotate="36 44" hl_lines="40"``::

    Source: [kernels/matmul_tiled.metal, lines 31–52](../kernels/matmul_tiled.metal){ .excerpt-source }

    ```metal title="kernels/matmul_tiled.metal · lines 31–52" linenums="31" hl_lines="10"
    ...line 36... // (1)!
    ...
    ```

Annotation markers go into C++ comments, where Material for MkDocs looks for them:
``// (1)!`` on a line without a comment (the ``!`` hides the comment characters), or
`` (1)`` at the end of the line's own trailing comment.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..msl.lexer import Tok, assign_lines, tokenize
from .blocks import Block, find_blocks, parse_numbers
from .check import expected_title, span

#: Attributes the expansion writes itself (author copies are replaced).
_OWN_ATTRS = {"annotate", "hl_lines", "linenums", "title"}


def _comments(text: str) -> list[Tok]:
    """The comment tokens of ``text`` with their lines, those inside a preprocessor
    directive (``#include <x>  // why``) included."""
    toks = tokenize(text)
    assign_lines(toks, "")
    out = []
    for t in toks:
        if t.kind == "comment":
            out.append(t)
        elif t.kind == "pp":
            inner = tokenize(t.text[1:])
            assign_lines(inner, "")
            out += [Tok(x.kind, x.text, x.line + t.line - 1) for x in inner if x.kind == "comment"]
    return out


def comment_states(lines: list[str]) -> list[tuple[bool, bool]]:
    """Per line: (ends inside a /* */ comment, has a trailing // comment), read with the
    project's tokenizer (strings, character literals and directives understood)."""
    in_block = [False] * len(lines)
    line_comment = [False] * len(lines)
    for t in _comments("\n".join(lines) + "\n"):
        if t.text.startswith("//"):
            line_comment[t.line - 1] = True
            continue
        last = t.line + t.text.count("\n")
        closed = t.text.endswith("*/") and len(t.text) >= 4
        for n in range(t.line, last if closed else last + 1):
            if n <= len(lines):
                in_block[n - 1] = True
    return list(zip(in_block, line_comment))


def add_markers(line: str, numbers: list[int], in_block: bool, line_comment: bool) -> str:
    marks = " ".join(f"({k})" for k in numbers)
    text = line.rstrip()
    if in_block or line_comment:
        return f"{text} {marks}"
    if text.endswith("\\"):  # macro continuation: keep the backslash last
        return f"{text[:-1].rstrip()} /* {marks} */ \\"
    if len(numbers) == 1:
        return f"{text} // {marks}!"
    return f"{text} // {marks}"


def annotated_lines(all_lines: list[str], start: int, end: int, annotate: list[int]) -> list[str]:
    """Lines start..end of a file, with markers (1), (2), ... on the ``annotate`` lines."""
    states = comment_states(all_lines[:end])
    marks: dict[int, list[int]] = {}
    for k, n in enumerate(annotate, 1):
        marks.setdefault(n, []).append(k)
    out = []
    for n in range(start, end + 1):
        text = all_lines[n - 1]
        if n in marks:
            text = add_markers(text, marks[n], *states[n - 1])
        out.append(text)
    return out


def _quote(value: str) -> str:
    return '"' + value.replace('"', "&quot;") + '"'


def render_block(block: Block, all_lines: list[str], link: str, notes: list[str] = ()) -> list[str]:
    """The expanded lines (without indentation) replacing one block.

    ``notes`` are Markdown fragments shown after the source link, on its line, each after
    a middle dot (:mod:`.notes` says where they come from)."""
    start, end = block.start, block.end
    annotate = parse_numbers(block.attr("annotate"), ranges=False).numbers
    hl = parse_numbers(block.attr("hl_lines"), ranges=True).numbers
    code = annotated_lines(all_lines, start, end, annotate)
    char = block.fence[0]
    longest = max((len(m.group(0)) for t in code if (m := re.match(re.escape(char) + "+", t.lstrip()))),
                  default=0)
    fence = char * max(len(block.fence), longest + 1)
    info = ["metal"]
    info += [f"{k}={_quote(v)}" for k, v in block.attrs if k not in _OWN_ATTRS]
    if block.extra_attr_text:
        info.append(block.extra_attr_text)
    info.append(f"title={_quote(expected_title(block.file, start, end))}")
    info.append(f'linenums="{start}"')
    if hl:
        info.append('hl_lines="' + " ".join(str(n - start + 1) for n in hl) + '"')
    head = " · ".join([link, *notes])
    return [head, "", fence + " ".join(info), *code, fence]


def expand(markdown: str, read_lines: Callable[[str], list[str]], link_for: Callable[[Block], str],
           notes_for: Callable[[Block, list[str]], list[str]] | None = None) -> str:
    """Replace every excerpt block of a page by its expansion.

    ``read_lines(file)`` gives a file's lines; ``link_for(block)`` the Markdown source
    link; ``notes_for(block, file_lines)`` the notes shown after it. Blocks must already
    be valid (the extension checks them first).
    """
    lines = markdown.split("\n")
    for block in reversed(find_blocks(markdown)):
        all_lines = read_lines(block.file)
        notes = notes_for(block, all_lines) if notes_for else []
        new = render_block(block, all_lines, link_for(block), notes)
        ind = block.indent
        new = [ind + t if t else "" for t in new]
        if block.open_index > 0 and lines[block.open_index - 1].strip():
            new.insert(0, "")
        lines[block.open_index : block.close_index + 1] = new
    return "\n".join(lines)


def source_link(text: str, url: str) -> str:
    return f"Source: [{text}]({url}){{ .excerpt-source }}"


def link_text(display: str, start: int, end: int) -> str:
    return f"{display}, {span(start, end)}"
