"""Figures generated from the kernels: SVG drawn at build time from kernel constants and
from emulator runs (lane maps, tile pyramids, who loads what, barrier timelines, ...).

A page asks for one with ``{{figure NAME key=value ...}}`` (the Markdown extension
:mod:`gemmglossary.docs_hooks.figures`); :func:`generate` makes it, through the cache.
:data:`FIGURES` lists every figure by name; each generator's docstring says what it
draws and from what.
"""

from __future__ import annotations

from pathlib import Path

from . import cache
from .base import Figure, FigureError, call
from .blocks import register_blocks
from .rhythm import double_buffer
from .epilogue import masked_edge
from .fragment import fragment_lanes
from .loads import cooperative_load, thread_count
from .matvec import gemv_rows
from .precision import precision_error
from .pyramid import tile_pyramid
from .quantized import quantized_word
from .route import matmul_route
from .shuffle import shuffle_tree
from .splitk import splitk_partitions
from .swizzle import swizzle_order
from .timeline import k_step_timeline

#: Every figure a page may ask for, by name.
FIGURES = {
    "cooperative-load": cooperative_load,
    "double-buffer": double_buffer,
    "fragment-lanes": fragment_lanes,
    "gemv-rows": gemv_rows,
    "k-step-timeline": k_step_timeline,
    "masked-edge": masked_edge,
    "matmul-route": matmul_route,
    "precision-error": precision_error,
    "quantized-word": quantized_word,
    "register-blocks": register_blocks,
    "shuffle-tree": shuffle_tree,
    "splitk-partitions": splitk_partitions,
    "swizzle-order": swizzle_order,
    "thread-count": thread_count,
    "tile-pyramid": tile_pyramid,
}


def generate(name: str, args: dict[str, str] | None = None, *, use_cache: bool = True) -> Figure:
    """The figure ``name`` for text arguments ``args`` (as a page writes them)."""
    args = dict(args or {})
    if name not in FIGURES:
        raise FigureError(f"unknown figure {name!r}; known figures: {', '.join(sorted(FIGURES))}")
    extra = [Path(v) for k, v in args.items() if k == "file"]
    k = cache.key(name, args, extra) if use_cache else None
    if k:
        hit = cache.load(k)
        if hit is not None:
            return hit
    figure = call(name, FIGURES[name], args)
    if k:
        cache.store(k, figure)
    return figure


__all__ = ["FIGURES", "Figure", "FigureError", "generate"]
