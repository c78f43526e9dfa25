"""Calling a Python function with arguments written as text in a page: ``{{fact NAME k=v}}``
and ``{{figure NAME k=v}}`` both name a function and give its keyword arguments as words.

Each text is converted by the parameter's annotation (``bool``: ``true``/``false``; ``int``:
decimal digits; a ``Literal``: one of its values; anything else stays text), an argument
the function does not take or a required one left out is refused, and every refusal is the
caller's own error class, so a page reports it with its file and line.
"""

from __future__ import annotations

import inspect
import re
import typing
from typing import Callable, Literal


def convert(key: str, text: str, annotation, error: type[Exception]) -> object:
    """``text`` as the value of parameter ``key`` annotated ``annotation``."""
    if annotation is bool:
        if text not in ("true", "false"):
            raise error(f"argument {key}= must be true or false, got {text!r}")
        return text == "true"
    if annotation is int:
        if not re.fullmatch(r"-?\d+", text):
            raise error(f"argument {key}= must be an integer, got {text!r}")
        return int(text)
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
    hints = typing.get_type_hints(func)
    kwargs: dict[str, object] = {}
    for key, text in args.items():
        if key not in params:
            raise error(f"{what} has no argument {key!r}; it takes {', '.join(params) or 'no arguments'}")
        kwargs[key] = convert(key, text, hints.get(key, str), error)
    missing = [k for k, p in params.items() if p.default is inspect.Parameter.empty and k not in kwargs]
    if missing:
        raise error(f"{what} needs {', '.join(f'{k}=' for k in missing)}")
    return kwargs
