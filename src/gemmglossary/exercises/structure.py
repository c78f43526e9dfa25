"""Where a barrier goes: the loops and statements of a learner's source, by line.

A race hint has to say where the missing barrier belongs. Lines alone are not enough:
"after line 56" is inside the inner multiply loop of a tiled matmul, where a barrier
would be wrong. This module finds the brace-delimited blocks of the source (with the
project's tokenizer, so comments and strings do not confuse it), which of them are loop
bodies, and for two lines the innermost loop holding both and the statements of that
loop's body that contain each line.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..msl.lexer import assign_lines, tokenize

LOOP_KEYWORDS = ("for", "while", "do")


@dataclass(frozen=True)
class Block:
    open_line: int  # line of `{`
    close_line: int  # line of the matching `}`
    head_line: int  # first line of the statement the block belongs to (`for (...)`, `if (...)`, ...)
    keyword: str | None  # "for", "while", "do", "if", "else", ... or None for a plain block

    @property
    def is_loop(self) -> bool:
        return self.keyword in LOOP_KEYWORDS

    def holds(self, line: int) -> bool:
        return self.open_line < line < self.close_line or (self.open_line == line == self.close_line)


def blocks(source: str) -> list[Block]:
    toks = tokenize(source)
    assign_lines(toks, "<source>")
    code = [t for t in toks if t.kind not in ("ws", "nl", "comment")]
    out, stack = [], []
    for i, t in enumerate(code):
        if t.text == "{":
            stack.append(i)
        elif t.text == "}" and stack:
            j = stack.pop()
            head, keyword = _head(code, j)
            out.append(Block(code[j].line, t.line, head, keyword))
    return sorted(out, key=lambda b: (b.open_line, -b.close_line))


def _head(code, brace: int) -> tuple[int, str | None]:
    """First line and keyword of the construct whose block opens at ``code[brace]``."""
    k = brace - 1
    if k < 0:
        return code[brace].line, None
    if code[k].text == ")":
        depth = 0
        while k >= 0:
            depth += {")": 1, "(": -1}.get(code[k].text, 0)
            if depth == 0:
                break
            k -= 1
        if k > 0 and code[k - 1].kind == "id":
            return code[k - 1].line, code[k - 1].text
        return code[max(k, 0)].line, None
    if code[k].kind == "id" and code[k].text in ("do", "else"):
        return code[k].line, code[k].text
    return code[brace].line, None


def outermost(source: str, line: int) -> Block | None:
    """The outermost block holding ``line``: for code, the body of the function it is in."""
    around = [b for b in blocks(source) if b.holds(line)]
    return max(around, key=lambda b: b.close_line - b.open_line) if around else None


def call_lines(source: str, name: str) -> list[int]:
    """Lines where ``name(`` is called in code (a call in a comment or a string is not one)."""
    toks = tokenize(source)
    assign_lines(toks, "<source>")
    code = [t for t in toks if t.kind not in ("ws", "nl", "comment")]
    return sorted({t.line for t, after in zip(code, code[1:]) if t.kind == "id" and t.text == name
                   and after.text == "("})


@dataclass(frozen=True)
class Placement:
    loop: Block | None  # innermost loop holding both lines, if any
    first: int  # first line of the statement (of the block holding both) that holds the earlier line
    first_last: int  # last line of that statement
    second: int  # first line of the statement that holds the later line
    second_last: int  # last line of that statement


def placement(source: str, a: int, b: int) -> Placement:
    """For lines ``a`` < ``b``: the loop holding both and the statements of its body holding each."""
    bs = blocks(source)
    around = [x for x in bs if x.holds(a) and x.holds(b)]
    loops = [x for x in around if x.is_loop]
    loop = min(loops, key=lambda x: x.close_line - x.open_line) if loops else None
    container = loop or (min(around, key=lambda x: x.close_line - x.open_line) if around else None)

    def statement(line: int) -> tuple[int, int]:
        inside = [x for x in bs if x.holds(line) and container is not None and x is not container
                  and container.open_line <= x.head_line and x.close_line < container.close_line]
        if not inside:
            return line, line
        outer = max(inside, key=lambda x: x.close_line - x.head_line)
        return outer.head_line, outer.close_line

    first, first_last = statement(a)
    second, second_last = statement(b)
    return Placement(loop, first, first_last, second, second_last)
