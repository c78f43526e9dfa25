"""What a figure generator returns, and how a page's arguments reach it.

A generator is a function with keyword-only arguments, each with a type annotation
(``Int(low, high)``, ``bool``, ``str`` or a ``Literal`` of strings) and, where it has one, a
default. Every integer declares its range, which bounds the work a page can ask for.
The Markdown tag ``{{figure NAME key=value ...}}`` gives the arguments as text;
:func:`call` converts them by the annotations (:mod:`gemmglossary.text_args`, shared with
the facts) and refuses what does not fit, naming the argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..text_args import Int, keyword_arguments  # noqa: F401 - Int: the generators' ranges


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


def call(name: str, func: Generator, args: dict[str, str]) -> Figure:
    """``func(**args)`` with each text argument converted by its annotation."""
    kwargs = keyword_arguments(f"figure {name}", func, args, FigureError)
    figure = func(**kwargs)
    if not isinstance(figure, Figure):
        raise TypeError(f"figure generator {name} returned {type(figure).__name__}, not a Figure")
    return figure
