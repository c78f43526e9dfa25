"""The kernel MLX dispatches for square products over a grid of shapes.

Each cell is :func:`gemmglossary.mlx.matmul.route` for ``M = N`` (rows) and ``K``
(columns), both powers of two, for one dtype on one device. No kernel runs: the decision is
MLX's host code (``Matmul::eval_gpu`` in matmul.cpp) as restated and tested in
``gemmglossary.mlx.matmul``; this module only asks it.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np

from .base import Figure, FigureError, Int
from .svg import SMALL, Drawing, category, text_width

#: Every kernel route() may return, in the order of the legend (and of the colours).
KINDS = ("dot_product", "gemv", "gemv_t", "gemv_wide", "splitk", "splitk_nax", "fused", "fused_nax")
#: The short label of each kernel inside a cell.
SHORT = {"dot_product": "dot", "gemv": "gv", "gemv_t": "gvT", "gemv_wide": "gvW", "splitk": "sK",
         "splitk_nax": "sKN", "fused": "F", "fused_nax": "FN"}
DEVICE = re.compile(r"^(?P<letter>[a-z])(?P<generation>\d{1,2})$")


def device_of(text: str):
    """``g13`` -> Device("g", 13): a class letter and an architecture generation."""
    from ..mlx import matmul

    m = DEVICE.match(text)
    if not m:
        raise FigureError(f"device= is a class letter and a generation, such as g13 or s17; got {text!r}")
    return matmul.Device(m["letter"], int(m["generation"]))


def route_grid(dtype: str, device, sizes, depths) -> np.ndarray:
    """(len(sizes) x len(depths)) array of the kernel route() picks for M = N = size, K = depth."""
    from ..mlx import matmul

    return np.array([[matmul.route(matmul.Problem(m, m, k, dtype), device).kernel for k in depths]
                     for m in sizes], dtype=object)


def matmul_route(*, dtype: Literal["float32", "float16", "bfloat16"] = "float32", device: str = "g13",
                 max_mn: Int(0, 14) = 12, min_k: Int(0, 15) = 4, max_k: Int(1, 16) = 14) -> Figure:
    """The kernel for M = N = 2**0 .. 2**max_mn against K = 2**min_k .. 2**max_k."""
    if min_k >= max_k:
        raise FigureError(f"min_k= must be below max_k=, got min_k={min_k} max_k={max_k}")
    dev = device_of(device)
    sizes = [2 ** i for i in range(max_mn + 1)]
    depths = [2 ** i for i in range(min_k, max_k + 1)]
    grid = route_grid(dtype, dev, sizes, depths)
    unknown = sorted(set(grid.ravel()) - set(KINDS))
    if unknown:
        raise FigureError(f"route() returned kernels this figure has no colour for: {', '.join(unknown)}")
    present = [k for k in KINDS if (grid == k).any()]

    left, top, cw, rh = 64, 70, min(40.0, 440 / len(depths)), 24
    plot_w, plot_h = cw * len(depths), rh * len(sizes)
    legend_x = left + plot_w + 20
    d = Drawing(680, max(top + plot_h + 64, top + 26 * len(KINDS)))
    nax = "NAX available" if dev.nax_available else "no NAX"
    d.text(12, 20, f"The kernel MLX picks for a square {dtype} product, class {dev.letter!r} generation "
                   f"{dev.generation} ({nax})", anchor="start", bold=True)
    d.text(12, 42, "rows: M = N; columns: K; each cell is gemmglossary.mlx.matmul.route for that product",
           anchor="start", size=SMALL, cls="muted")
    for (i, j), kind in np.ndenumerate(grid):
        y = top + (len(sizes) - 1 - i) * rh  # M = N grows upwards
        x = left + j * cw
        d.rect(x, y, cw, rh, category(KINDS.index(kind)) + " strong edge",
               title=f"M = N = {sizes[i]}, K = {depths[j]}: {kind}")
        d.text(x + cw / 2, y + rh / 2, SHORT[kind], size=SMALL)
    for i, m in enumerate(sizes):
        d.text(left - 6, top + (len(sizes) - 1 - i) * rh + rh / 2, str(m), anchor="end", size=SMALL)
    for j, k in enumerate(depths):
        label = str(k) if k < 1024 else f"{k // 1024}K"
        d.text(left + j * cw + cw / 2, top + plot_h + 14, label, size=SMALL)
    d.text(left + plot_w / 2, top + plot_h + 36, "K (1K = 1024)", size=SMALL, cls="muted")
    d.text(16, top + plot_h / 2, "M = N", size=SMALL, cls="muted", rotate=-90)
    for n, kind in enumerate(present):
        y = top + n * 26
        d.rect(legend_x, y, 40, 20, category(KINDS.index(kind)) + " strong")
        d.text(legend_x + 20, y + 10, SHORT[kind], size=SMALL)
        d.text(legend_x + 48, y + 10, kind, anchor="start", size=SMALL, mono=True)
    if legend_x + 48 + max(text_width(k, SMALL) for k in present) > d.width:
        raise FigureError("the legend does not fit the figure")

    regions = []
    for kind in present:
        cells = np.argwhere(grid == kind)
        first = min(cells, key=lambda c: (c[0], c[1]))
        regions.append(f"{kind} in {len(cells)} cells (the first at M = N = {sizes[first[0]]}, "
                       f"K = {depths[first[1]]})")
    alt = (f"A grid of the kernel MLX dispatches for square {dtype} products on a device of class "
           f"{dev.letter!r}, generation {dev.generation} ({nax}), M = N from {sizes[0]} to {sizes[-1]} (rows) "
           f"against K from {depths[0]} to {depths[-1]} (columns), powers of two: " + "; ".join(regions) + ".")
    title = f"MLX's kernel choice for {dtype}, class {dev.letter} generation {dev.generation}"
    return Figure(d.svg(title, alt), title, alt,
                  "Computed when the site was built from `gemmglossary.mlx.matmul.route`, the tested restatement "
                  "of MLX's host decision in matmul.cpp; no kernel runs.")
