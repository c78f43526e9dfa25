"""Walking a token list from :mod:`.lexer`: skip trivia, match brackets, read attributes.

Every reader of Metal source works on one token list and indexes into it, so these
helpers take ``(toks, i)`` and return indexes. An unbalanced bracket raises
:class:`SourceError` naming the file and line of the bracket.
"""

from __future__ import annotations

from .lexer import Tok

#: Tokens that carry no meaning for a parser.
TRIVIA = frozenset({"ws", "nl", "comment"})

_OPENER = {")": "(", "]": "[", "}": "{", ">": "<", ">>": "<"}
_CLOSER = {"(": ")", "[": "]", "{": "}"}


class SourceError(ValueError):
    """Metal source that cannot be read (the message starts with ``file:line: error:``)."""


def error(tok: Tok, message: str) -> SourceError:
    return SourceError(f"{tok.file}:{tok.line}: error: {message}")


def next_sig(toks: list[Tok], i: int) -> int:
    """Index of the first significant token at or after ``i`` (``len(toks)`` if none)."""
    n = len(toks)
    while i < n and toks[i].kind in TRIVIA:
        i += 1
    return i


def prev_sig(toks: list[Tok], i: int) -> int:
    """Index of the last significant token at or before ``i`` (-1 if none)."""
    while i >= 0 and toks[i].kind in TRIVIA:
        i -= 1
    return i


def match(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing the one at ``i``: ``(`` ``[`` ``{``, or ``<`` of a
    template argument list (where ``>>`` closes two)."""
    if toks[i].text == "<":
        depth = 0
        for j in range(i, len(toks)):
            t = toks[j]
            if t.kind != "punct":
                continue
            if t.text in ("(", "[", "{", "<"):
                depth += 1
            elif t.text in (")", "]", "}", ">", ">>"):
                depth -= 2 if t.text == ">>" else 1
                if depth <= 0:
                    return j
        raise error(toks[i], "unbalanced '<'")
    # Each closer must close the innermost open bracket: the one left open is named (a
    # missing ')' before a '}' is the '(' line's mistake, not an unbalanced '{' above it).
    open_: list[int] = []
    for j in range(i, len(toks)):
        t = toks[j]
        if t.kind != "punct":
            continue
        if t.text in ("(", "[", "{"):
            open_.append(j)
        elif t.text in (")", "]", "}"):
            k = open_.pop()
            if toks[k].text != _OPENER[t.text]:
                raise error(toks[k], f"unclosed '{toks[k].text}': '{t.text}' on line {t.line} comes before its "
                                     f"'{_CLOSER[toks[k].text]}'")
            if not open_:
                return j
    raise error(toks[open_[-1]], f"unbalanced '{toks[open_[-1]].text}'")


def match_back(toks: list[Tok], i: int) -> int:
    """Index of the bracket opening the one that closes at ``i``, or -1.

    Counts only brackets of the same kind; ``>>`` closes two ``<``."""
    open_ = _OPENER[toks[i].text]
    closers = (">", ">>") if open_ == "<" else (toks[i].text,)
    depth = 0
    for k in range(i, -1, -1):
        t = toks[k].text
        if t in closers:
            depth += 2 if t == ">>" else 1
        elif t == open_:
            depth -= 1
            if depth == 0:
                return k
    return -1


def text(toks: list[Tok], a: int, b: int) -> str:
    """The significant tokens ``a..b`` (inclusive) joined by single spaces."""
    return " ".join(t.text for t in toks[a:b + 1] if t.kind not in TRIVIA).strip()


def is_attribute_start(toks: list[Tok], i: int) -> bool:
    """Whether ``toks[i]`` opens a C++11 attribute list ``[[``."""
    return toks[i].text == "[" and i + 1 < len(toks) and toks[i + 1].text == "["


def attribute_end(toks: list[Tok], i: int) -> int:
    """``toks[i]`` opens ``[[``: index of the second ``]`` of its ``]]``."""
    return next_sig(toks, match(toks, i + 1) + 1)


def attribute_items(toks: list[Tok], a: int, b: int) -> list[tuple[str, str]]:
    """The items of the attribute list from ``[[`` at ``a`` to ``]]`` ending at ``b``:
    ``[[kernel, max_total_threads_per_threadgroup(128)]]`` ->
    ``[("kernel", ""), ("max_total_threads_per_threadgroup", "128")]``."""
    items: list[tuple[str, str]] = []
    i, end = a + 2, b - 1
    while i <= end:
        i = next_sig(toks, i)
        if i > end:
            break
        if toks[i].kind != "id":
            i += 1
            continue
        name = toks[i].text
        j = next_sig(toks, i + 1)
        arg = ""
        if j <= end and toks[j].text == "(":
            k = match(toks, j)
            arg = text(toks, j + 1, k - 1)
            j = next_sig(toks, k + 1)
        items.append((name, arg))
        i = j
        if i <= end and toks[i].text == ",":
            i += 1
    return items


def gnu_attribute_items(toks: list[Tok], a: int, e: int) -> list[tuple[str, str]]:
    """The items of ``__attribute__((...))`` from the ``__attribute__`` token at ``a``."""
    p = next_sig(toks, a + 1)
    q = next_sig(toks, p + 1)
    if q >= len(toks) or toks[q].text != "(":
        return []
    inner_end = match(toks, q)
    items = []
    k = q + 1
    while k < inner_end:
        k = next_sig(toks, k)
        if k >= inner_end:
            break
        if toks[k].kind == "id":
            name = toks[k].text
            j = next_sig(toks, k + 1)
            arg = ""
            if toks[j].text == "(":
                m = match(toks, j)
                arg = text(toks, j + 1, m - 1)
                j = m + 1
            items.append((name, arg))
            k = j
        else:
            k += 1
    return items


def split_top_level(toks: list[Tok], a: int, b: int, sep: str = ",") -> list[tuple[int, int]]:
    """Ranges ``(first, last)`` of the pieces of ``toks[a..b]`` split at ``sep`` outside
    any bracket (``<...>`` counts as one); an empty last piece is dropped."""
    parts = []
    depth = 0
    cur = a
    for k in range(a, b + 1):
        x = toks[k].text
        if toks[k].kind != "punct":
            continue
        if x in ("(", "[", "{", "<"):
            depth += 1
        elif x in (")", "]", "}", ">"):
            depth -= 1
        elif x == ">>":
            depth -= 2
        elif x == sep and depth == 0:
            parts.append((cur, k - 1))
            cur = k + 1
    if text(toks, cur, b):
        parts.append((cur, b))
    return parts
