"""Figures generated from the kernels: SVG drawn at build time from kernel constants and
from emulator runs (lane maps, tile pyramids, who loads what, barrier timelines, ...).

A page asks for one with ``{{figure NAME key=value ...}}`` (the Markdown extension
:mod:`gemmglossary.docs_hooks.figures`); :func:`generate` makes it, through the cache.
:data:`FIGURES` lists every figure by name; each generator's docstring says what it
draws and from what.
"""

from __future__ import annotations

from pathlib import Path

import importlib
from collections.abc import MutableMapping

from . import cache
from .base import Figure, FigureError, Generator, call


class _Registry(MutableMapping):
    """Figure name -> generator, each imported when first asked for.

    Lazy on purpose: the snippets import this package for its matplotlib schemes only,
    and the snippet hook keys a snippet's cached output by the modules it imports; naming
    the generators here with import statements would make every generator a dependency
    of every snippet, re-executing all of them when one figure changes."""

    def __init__(self, names: dict[str, str]):
        self._items: dict[str, str | Generator] = dict(names)

    def __getitem__(self, name: str) -> Generator:
        item = self._items[name]
        if isinstance(item, str):
            module, _, attr = item.partition(":")
            item = self._items[name] = getattr(importlib.import_module(f".{module}", __name__), attr)
        return item

    def __setitem__(self, name: str, value: Generator) -> None:
        self._items[name] = value

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


#: Every figure a page may ask for, by name ("module:function" of this package).
FIGURES = _Registry({
    "cooperative-load": "loads:cooperative_load",
    "double-buffer": "rhythm:double_buffer",
    "fragment-lanes": "fragment:fragment_lanes",
    "gemv-rows": "matvec:gemv_rows",
    "k-step-timeline": "timeline:k_step_timeline",
    "masked-edge": "epilogue:masked_edge",
    "matmul-flow": "flow:matmul_flow",
    "memory-hierarchy": "hierarchy:memory_hierarchy",
    "matmul-route": "route:matmul_route",
    "precision-error": "precision:precision_error",
    "quantized-word": "quantized:quantized_word",
    "q4-0-block": "llama_block:q4_0_block_figure",
    "register-blocks": "blocks:register_blocks",
    "roofline": "roofline:roofline",
    "shuffle-tree": "shuffle:shuffle_tree",
    "splitk-partitions": "splitk:splitk_partitions",
    "swizzle-order": "swizzle:swizzle_order",
    "thread-count": "loads:thread_count",
    "tile-pyramid": "pyramid:tile_pyramid",
})


def cached(name: str, args: dict[str, str] | None = None) -> Figure | None:
    """The figure ``name`` for ``args`` if it is in the cache, else None (nothing drawn)."""
    args = dict(args or {})
    if name not in FIGURES:
        return None
    return cache.load(cache.key(name, args, [Path(v) for k, v in args.items() if k == "file"]))


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


__all__ = ["FIGURES", "Figure", "FigureError", "cached", "generate"]
