"""Notes shown after an excerpt's source link: per-excerpt data beyond the quoted lines.

The excerpts Markdown extension (:mod:`gemmglossary.docs_hooks.excerpts`) calls
:func:`notes_for` for every block it expands, under every engine, and shows each note on
the source link's line after a middle dot::

    Source: [kernels/x.metal, lines 31–52](../kernels/x.metal){ .excerpt-source } · NOTE

A note is a Markdown fragment (an inline span with a class of its own, say). This is the
one place a new kind of per-excerpt data goes (issue #16's "N of M lines executed" from a
coverage run): compute it here from ``block.file``, ``block.start``, ``block.end`` and the
file's lines, and return it; a note that cannot be computed honestly raises, naming the
file and range, rather than showing a guess.
"""

from __future__ import annotations

from .blocks import Block


def notes_for(block: Block, file_lines: list[str]) -> list[str]:
    """The notes of one excerpt block (none yet)."""
    return []
