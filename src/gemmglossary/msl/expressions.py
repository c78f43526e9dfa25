"""Evaluate the integer constant expressions of a kernel's source.

``WM * WN * 32``, ``(BM * BK + BK * BN) * 4``, ``0x10``, ``16u``: the arithmetic that
compile-time constants, attribute arguments and buffer indexes are written in. The
expression is parsed as Python and only integer literals, names from ``names`` and the
operators ``+ - * / % << >> & | ^ ~`` and parentheses are accepted; ``/`` and ``%``
truncate toward zero as in C. Anything else raises :class:`ExpressionError` naming the
construct, so a value is never guessed.
"""

from __future__ import annotations

import ast
import operator
import re

_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)\b")


class ExpressionError(ValueError):
    """An expression that is not plain integer arithmetic over known names."""


def _c_div(a: int, b: int) -> int:
    if b == 0:
        raise ExpressionError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _c_mod(a: int, b: int) -> int:
    return a - b * _c_div(a, b)


_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: _c_div, ast.FloorDiv: _c_div, ast.Mod: _c_mod,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


def evaluate(expression: str, names: dict[str, int] | None = None) -> int:
    """The value of ``expression``; ``names`` gives the known constants."""
    names = names or {}
    text = _SUFFIX.sub(r"\1", expression.strip())
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ExpressionError(f"{expression!r} is not an integer expression") from None

    def value(node) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ExpressionError(f"{expression!r}: unknown name {node.id!r}")
            return int(names[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](value(node.operand))
        raise ExpressionError(f"{expression!r}: {ast.unparse(node)!r} is not integer arithmetic")

    return value(tree.body)
