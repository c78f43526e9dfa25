"""The small expression language of ``exercise.toml``.

Sizes, dispatches, scalar values, tolerances and owners are written as Python
expressions over the case's variables (``"ceil(N / 16)"``, ``"2e-5 * sqrt(K)"``,
``"col // 32"``); numpy references are expressions over the inputs
(``"alpha * A + beta * B"``). Only the names given here and the case's variables are
visible: no builtins, no imports, no attribute access except on ``np``.
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ..kernels import tolerance as gemm_tolerance
from ..tiles import cdiv

#: Functions every expression may call.
FUNCTIONS = {
    "ceil": math.ceil, "floor": math.floor, "sqrt": math.sqrt, "min": min, "max": max, "abs": abs,
    "cdiv": cdiv, "int": int, "float": float,
    # gemmglossary.kernels.tolerance: the error accepted for a float32 GEMM of depth K
    "gemm_tolerance": gemm_tolerance,
}


class ExpressionError(ValueError):
    """An expression of an exercise description is malformed or does not evaluate."""


def _check_names(tree: ast.AST, allowed: set[str], text: str, numpy_ok: bool) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise ExpressionError(f"{text!r}: unknown name {node.id!r} (known here: {known})")
        if isinstance(node, ast.Attribute):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if not (numpy_ok and isinstance(base, ast.Name) and base.id == "np"):
                raise ExpressionError(f"{text!r}: attribute access is only allowed on np")
            if node.attr.startswith("_"):
                raise ExpressionError(f"{text!r}: private attribute {node.attr!r}")
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.comprehension, ast.Starred)):
            raise ExpressionError(f"{text!r}: {type(node).__name__} is not allowed in an exercise expression")


def evaluate(text, variables: dict, *, numpy_ok: bool = False):
    """Value of ``text`` (a str expression, or a plain number) with ``variables`` in scope."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ExpressionError(f"{text!r}: expected an expression (a string) or a number")
    if not isinstance(text, str):
        return text
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{text!r}: not an expression ({exc.msg})") from None
    scope = dict(FUNCTIONS)
    if numpy_ok:
        scope["np"] = np
    scope.update(variables)
    _check_names(tree, set(scope), text, numpy_ok)
    try:
        return eval(compile(tree, "<exercise expression>", "eval"), {"__builtins__": {}}, scope)  # noqa: S307
    except Exception as exc:  # the expression is data; say which one failed and how
        raise ExpressionError(f"{text!r}: {type(exc).__name__}: {exc}") from None


def integer(text, variables: dict) -> int:
    value = evaluate(text, variables)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer)):
        raise ExpressionError(f"{text!r}: expected an integer, got {value!r}")
    return int(value)


def triple(texts, variables: dict) -> tuple[int, int, int]:
    values = [integer(t, variables) for t in texts]
    if not 1 <= len(values) <= 3:
        raise ExpressionError(f"{texts!r}: expected 1 to 3 sizes")
    return tuple(values + [1] * (3 - len(values)))
