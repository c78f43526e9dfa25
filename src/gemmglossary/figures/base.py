"""What a figure generator returns, and how a page's arguments reach it.

A generator is a function with keyword-only arguments, each with a type annotation
(``int``, ``bool``, ``str`` or a ``Literal`` of strings) and, where it has one, a default.
The Markdown tag ``{{figure NAME key=value ...}}`` gives the arguments as text;
:func:`call` converts them by the annotations and refuses what does not fit, naming
the argument.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import Callable, Literal


class FigureError(ValueError):
    """A figure that cannot be generated: bad arguments, or the kernel or its run does
    not give what the figure needs. The extension adds the page and line."""


@dataclass(frozen=True)
class Figure:
    """One generated figure.

    ``svg`` is the ``<svg>`` element (ids still holding :data:`svg.ID`), ``title`` its
    short accessible name, ``alt`` what it shows in words (its long description: what a
    reader who cannot see it needs), ``source`` one sentence saying what it was computed
    from (shown under the figure; Markdown code spans allowed)."""

    svg: str
    title: str
    alt: str
    source: str

    def to_json(self) -> dict:
        return {"svg": self.svg, "title": self.title, "alt": self.alt, "source": self.source}

    @classmethod
    def from_json(cls, data: dict) -> "Figure":
        return cls(data["svg"], data["title"], data["alt"], data["source"])


Generator = Callable[..., Figure]


def _convert(key: str, text: str, annotation) -> object:
    if annotation is bool:
        if text not in ("true", "false"):
            raise FigureError(f"argument {key}= must be true or false, got {text!r}")
        return text == "true"
    if annotation is int:
        try:
            return int(text, 10)
        except ValueError:
            raise FigureError(f"argument {key}= must be an integer, got {text!r}") from None
    if typing.get_origin(annotation) is Literal:
        choices = typing.get_args(annotation)
        if text not in choices:
            raise FigureError(f"argument {key}= must be one of {', '.join(choices)}, got {text!r}")
        return text
    return text


def parameters(func: Generator) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(func).parameters)


def call(name: str, func: Generator, args: dict[str, str]) -> Figure:
    """``func(**args)`` with each text argument converted by its annotation."""
    params = parameters(func)
    hints = typing.get_type_hints(func)
    kwargs: dict[str, object] = {}
    for key, text in args.items():
        if key not in params:
            raise FigureError(f"figure {name} has no argument {key!r}; it takes "
                              f"{', '.join(params) or 'no arguments'}")
        kwargs[key] = _convert(key, text, hints.get(key, str))
    missing = [k for k, p in params.items() if p.default is inspect.Parameter.empty and k not in kwargs]
    if missing:
        raise FigureError(f"figure {name} needs {', '.join(f'{k}=' for k in missing)}")
    figure = func(**kwargs)
    if not isinstance(figure, Figure):
        raise TypeError(f"figure generator {name} returned {type(figure).__name__}, not a Figure")
    return figure
