"""Calling a Python function with arguments written as text in a page: ``{{fact NAME k=v}}``
and ``{{figure NAME k=v}}`` both name a function and give its keyword arguments as words.

Each text is converted by the parameter's annotation (``bool``: ``true``/``false``; an
integer: decimal digits within the range the function declares with :func:`Int`; a
``Literal``: one of its values; anything else stays text), an argument the function does
not take or a required one left out is refused, and every refusal is the caller's own error
class, so a page reports it with its file and line.

Every integer argument declares its range (``M: Int(1, 512) = 40``): a typo in a page
(``M=100000000``) is refused in one line instead of drawing for minutes at gigabytes. A bare
``int`` annotation is a TypeError when the function is called, so a new figure or fact
cannot leave one out.
"""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass
from typing import Annotated, Callable, Literal


@dataclass(frozen=True)
class Range:
    """The integers a parameter accepts, ``low`` to ``high`` inclusive."""

    low: int
    high: int


def Int(low: int, high: int):  # noqa: N802 - used as a type: ``M: Int(1, 512)``
    """The annotation of an integer argument from ``low`` to ``high``."""
    return Annotated[int, Range(low, high)]


def _range(annotation) -> Range | None:
    if typing.get_origin(annotation) is Annotated:
        return next((m for m in annotation.__metadata__ if isinstance(m, Range)), None)
    return None


def convert(key: str, text: str, annotation, error: type[Exception]) -> object:
    """``text`` as the value of parameter ``key`` annotated ``annotation``."""
    if annotation is bool:
        if text not in ("true", "false"):
            raise error(f"argument {key}= must be true or false, got {text!r}")
        return text == "true"
    bounds = _range(annotation)
    if bounds is not None:
        if not re.fullmatch(r"-?\d+", text):
            raise error(f"argument {key}= must be an integer, got {text!r}")
        value = int(text)
        if not bounds.low <= value <= bounds.high:
            raise error(f"argument {key}= must be {bounds.low} to {bounds.high}, got {value}")
        return value
    if typing.get_origin(annotation) is Literal:
        choices = typing.get_args(annotation)
        if text not in choices:
            raise error(f"argument {key}= must be one of {', '.join(choices)}, got {text!r}")
        return text
    return text


def keyword_arguments(what: str, func: Callable, args: dict[str, str], error: type[Exception]) -> dict:
    """The keyword arguments of ``func`` from ``args`` (name: text); ``what`` names the call
    in messages ("fact mlx.tile", "figure gemv-rows")."""
    params = inspect.signature(func).parameters
    hints = typing.get_type_hints(func, include_extras=True)
    unbounded = [k for k in params if hints.get(k) is int]
    if unbounded:  # the author's mistake, not the page's: a traceback
        raise TypeError(f"{what}: argument {', '.join(unbounded)} is annotated int without a range; "
                        "annotate it text_args.Int(low, high)")
    kwargs: dict[str, object] = {}
    for key, text in args.items():
        if key not in params:
            raise error(f"{what} has no argument {key!r}; it takes {', '.join(params) or 'no arguments'}")
        try:
            kwargs[key] = convert(key, text, hints.get(key, str), error)
        except error as exc:  # name the call: a page may hold many tags on one line
            raise error(f"{what}: {exc}") from None
    missing = [k for k, p in params.items() if p.default is inspect.Parameter.empty and k not in kwargs]
    if missing:
        raise error(f"{what} needs {', '.join(f'{k}=' for k in missing)}")
    return kwargs
