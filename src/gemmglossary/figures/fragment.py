"""Which lane holds which element of an 8 x 8 simdgroup_matrix, read from two runs.

- MLX's own code: a probe kernel includes steel's ``mma.h`` (from the pinned wheel) and has
  every lane store ``BaseMMAFrag<float, 8, 8>::get_coord(lane)``, the (column, row) of its
  first element, which is what steel's loads and stores use.
- The emulator's ``thread_elements()``: a probe kernel writes ``2 * lane + i`` into element
  ``i`` of its lane's share and stores the matrix with ``simdgroup_store``.

Both run on the emulator. The figure is drawn from MLX's coordinates; the two must agree
(MLX's steel GEMM, which relies on the layout, matches numpy on the emulator only if they
do), and a disagreement is a FigureError, not a figure.
"""

from __future__ import annotations

import numpy as np

from .. import vendor
from ..emulator import load_kernel
from .base import Figure, FigureError
from .svg import SMALL, Drawing, category

MMA_HEADER = "mlx/backend/metal/kernels/steel/gemm/mma.h"

#: Our probe of MLX's get_coord (the header is MLX's, the kernel is ours).
MLX_COORD_PROBE = f"""
#include "mlx/backend/metal/kernels/utils.h"
#include "{MMA_HEADER}"
using namespace metal;

kernel void mlx_fragment_coords(device short2* out  [[buffer(0)]],
                                ushort         lane [[thread_index_in_simdgroup]])
{{
    out[lane] = mlx::steel::BaseMMAFrag<float, 8, 8>::get_coord(lane);  // (column, row)
}}
"""

#: Our probe of the emulator's thread_elements().
THREAD_ELEMENTS_PROBE = """
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

kernel void thread_elements_map(device float* out  [[buffer(0)]],
                                uint          lane [[thread_index_in_simdgroup]])
{
    simdgroup_float8x8 m = make_filled_simdgroup_matrix<float, 8, 8>(-1.0f);
    m.thread_elements()[0] = float(2 * lane);
    m.thread_elements()[1] = float(2 * lane + 1);
    simdgroup_store(m, out, 8);
}
"""


def mlx_lane_map() -> np.ndarray:
    """8 x 8 array: the lane that holds each element, from MLX's get_coord (each lane's
    first element and the one to its right, ``kElemCols = 2``)."""
    include = vendor.ensure()
    k = load_kernel(MLX_COORD_PROBE, "mlx_fragment_coords", include_dirs=[str(include)])
    coords = np.full((32, 2), -1, np.int16)
    k(coords, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    lanes = np.full((8, 8), -1, int)
    for lane, (col, row) in enumerate(coords):
        for k2 in range(2):
            if not (0 <= row < 8 and 0 <= col + k2 < 8) or lanes[row, col + k2] != -1:
                raise FigureError(f"MLX's get_coord gives lane {lane} element ({row}, {col + k2}), "
                                  "outside the fragment or already held by another lane")
            lanes[row, col + k2] = lane
    return lanes


def emulator_lane_map() -> tuple[np.ndarray, np.ndarray]:
    """(lane, slot) of each element under the emulator's thread_elements()."""
    out = np.full((8, 8), -1, np.float32)
    load_kernel(THREAD_ELEMENTS_PROBE, "thread_elements_map")(out, threads=(32, 1, 1),
                                                               threads_per_threadgroup=(32, 1, 1))
    code = out.astype(int)
    if sorted(code.ravel()) != list(range(64)):
        raise FigureError("the emulator's thread_elements() probe did not fill the fragment once per element")
    return code // 2, code % 2


def fragment_lanes() -> Figure:
    """The 8 x 8 fragment with the lane (and thread_elements() index) of each element,
    coloured by the group of eight lanes that owns each 4 x 4 quadrant."""
    lanes = mlx_lane_map()
    emu_lanes, slot = emulator_lane_map()
    if not np.array_equal(lanes, emu_lanes):
        raise FigureError("MLX's get_coord and the emulator's thread_elements() disagree about the fragment layout")
    cell, left, top = 56, 74, 100
    d = Drawing(680, top + 8 * cell + 58)
    d.text(12, 20, "simdgroup_float8x8: the lane that holds each element", anchor="start", bold=True)
    d.text(12, 42, "each cell: the lane number, and [i], the element's index in that lane's thread_elements()",
           anchor="start", size=SMALL, cls="muted")
    for c in range(8):
        d.text(left + (c + 0.5) * cell, top - 12, str(c), size=SMALL, cls="muted")
    for r in range(8):
        d.text(left - 14, top + (r + 0.5) * cell, str(r), size=SMALL, cls="muted")
    d.text(left + 4 * cell, top - 32, "column", size=SMALL, cls="muted")
    d.text(left - 44, top + 4 * cell, "row", size=SMALL, cls="muted", rotate=-90)
    for (r, c), lane in np.ndenumerate(lanes):
        x, y = left + c * cell, top + r * cell
        d.rect(x, y, cell, cell, category(lane // 8), title=f"row {r}, column {c}: lane {lane}, element [{slot[r, c]}]")
        d.text(x + cell / 2, y + cell / 2 - 8, str(lane), size=16, bold=True)
        d.text(x + cell / 2, y + cell / 2 + 12, f"[{slot[r, c]}]", size=SMALL, cls="muted")
    for k in range(9):
        cls = "fg" if k in (0, 4, 8) else "grid"
        d.line(left + k * cell, top, left + k * cell, top + 8 * cell, cls)
        d.line(left, top + k * cell, left + 8 * cell, top + k * cell, cls)
    # legend: which lanes own each quadrant
    lx = left + 8 * cell + 24
    d.text(lx, top + 6, "quadrants", anchor="start", size=SMALL, bold=True)
    quads = []
    for g in range(4):
        rr, cc = np.nonzero(lanes // 8 == g)
        quads.append((g, rr.min(), cc.min()))
        y = top + 30 + 28 * g
        d.rect(lx, y - 9, 18, 18, category(g))
        d.text(lx + 26, y, f"lanes {8 * g}–{8 * g + 7}", anchor="start", size=SMALL)
    d.text(left, top + 8 * cell + 26, "Each lane holds two horizontally adjacent elements, [0] and [1].",
           anchor="start", size=SMALL)
    parts = []
    for g, r0, c0 in quads:
        parts.append(f"lanes {8 * g} to {8 * g + 7} hold rows {r0} to {r0 + 3}, columns {c0} to {c0 + 3}")
    row0 = ", ".join(f"{lanes[0, c]}" for c in range(8))
    alt = ("An 8 by 8 grid, each cell labelled with the simd lane that holds that element of a "
           "simdgroup_float8x8 and with its index in thread_elements(). Every lane holds two horizontally "
           f"adjacent elements. Row 0 reads, by column: {row0}. " + "; ".join(parts) + ".")
    return Figure(d.svg("Lane layout of an 8×8 simdgroup matrix", alt), "Lane layout of an 8×8 simdgroup matrix", alt,
                  "Computed when the site was built by running MLX's `BaseMMAFrag::get_coord` (steel/gemm/mma.h of the "
                  "pinned wheel) on the site's emulator, and checked against the emulator's own `thread_elements()`.")
