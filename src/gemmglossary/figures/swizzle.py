"""The order in which threadgroups visit the tiles of C, with MLX's threadgroup swizzle.

MLX's fused steel GEMM remaps its threadgroup position by ``swizzle_log`` before choosing
its tile (``steel_gemm_fused.h``): the grid is launched ``2**swizzle_log`` times wider and
that much shorter, and consecutive threadgroups walk down a column of ``2**swizzle_log``
tiles before moving right. The figure runs MLX's own kernel (kernels/steel_gemm.metal, the
pinned headers) on the emulator with A[r, k] = r and B[k, c] = c and a trace snapshot at
each barrier: the rows of A and the columns of B a threadgroup loaded say which tile it
computes. Threadgroups are numbered by their linear index ``(y * width + x)``, the order a
GPU is commonly assumed to start them in; Metal does not promise any order, and the
emulator's workers run them in this one.
"""

from __future__ import annotations

import numpy as np

from .. import vendor
from ..emulator import Tracing, load_kernel
from .base import Figure, FigureError, Int
from .svg import SMALL, Drawing, category


def visit_map(M: int, N: int, swizzle_log: int, config: tuple | None = None) -> tuple[np.ndarray, int, tuple]:
    """(tiles_m x tiles_n array of the linear threadgroup index computing each tile (-1:
    none), how many threadgroups returned without a tile, the launch grid)."""
    vendor.ensure()
    from ..mlx import matmul, steel  # reads the pinned headers: only when the figure is drawn

    config = config or steel.CONFIGS[0]
    bm, bn, bk, wm, wn = config
    K = bk
    a = np.repeat(np.arange(M, dtype=np.float32)[:, None], K, axis=1)
    b = np.repeat(np.arange(N, dtype=np.float32)[None, :], K, axis=0)
    launch = steel.plan_fused(a, b, config=matmul.TileConfig(*config), swizzle_log=swizzle_log)
    kernel = load_kernel(steel.source_path(), launch.host_name, function_constants=launch.function_constants,
                         include_dirs=[str(d) for d in steel.include_dirs()])
    trace = kernel(launch.buffers, threadgroups=launch.threadgroups,
                   threads_per_threadgroup=launch.threads_per_threadgroup, trace=Tracing(snapshots=True))
    if not np.allclose(launch.out, a @ b):
        raise FigureError("MLX's steel GEMM on the emulator did not compute A·B; no figure from a wrong run")
    gx, gy, _ = launch.threadgroups
    tiles = np.full((-(-M // bm), -(-N // bn)), -1, int)
    seen = set()
    for snap in trace.snapshots:
        if snap.threadgroup in seen or "As" not in snap.regions:
            continue
        As, Bs = snap["As"], snap["Bs"]
        if not As.written_since_barrier().any():
            continue
        rows = As.values(np.float32).ravel()[As.written_since_barrier().ravel()]
        cols = Bs.values(np.float32).ravel()[Bs.written_since_barrier().ravel()]
        ty, tx = int(rows.min()) // bm, int(cols.min()) // bn
        x, y, _ = snap.threadgroup
        linear = y * gx + x
        if tiles[ty, tx] != -1:
            raise FigureError(f"tile ({tx}, {ty}) computed by two threadgroups")
        tiles[ty, tx] = linear
        seen.add(snap.threadgroup)
    idle = gx * gy - len(seen)
    if (tiles < 0).any():
        raise FigureError("some tiles of C were computed by no threadgroup")
    return tiles, idle, launch.threadgroups


def swizzle_order(*, M: Int(1, 512) = 256, N: Int(1, 512) = 256, swizzle_log: Int(0, 3) = 1,
                  first: Int(1, 64) = 12) -> Figure:
    """Tiles of C numbered by the threadgroup that computes them, without and with the swizzle;
    the path of the first ``first`` threadgroups drawn over each."""
    from ..mlx import steel

    panels = [(s, *visit_map(M, N, s)) for s in sorted({0, swizzle_log})]
    tm, tn = panels[0][1].shape
    cell = min(40.0, 300 / max(tn, 1) if len(panels) > 1 else 560 / tn, 320 / tm)
    top = 74
    d = Drawing(680, top + tm * cell + 74)
    d.text(12, 20, f"MLX's steel GEMM: which threadgroup computes each {steel.CONFIGS[0][0]}×{steel.CONFIGS[0][1]} "
                   f"tile of a {M}×{N} C", anchor="start", bold=True)
    d.text(12, 42, f"number: the threadgroup's linear index; colour: each run of {tn} consecutive threadgroups; "
                   f"line: threadgroups 0 to {first - 1}", anchor="start", size=SMALL, cls="muted")
    summary = []
    for k, (s, tiles, idle, grid) in enumerate(panels):
        x0 = 24 + k * (tn * cell + 40)
        for (r, c), lin in np.ndenumerate(tiles):
            d.rect(x0 + c * cell, top + r * cell, cell, cell, category(lin // tn) + " edge",
                   title=f"tile ({c}, {r}): threadgroup {lin}")
        path = []
        for lin in range(min(first, tiles.size)):
            hit = np.argwhere(tiles == lin)
            if len(hit):
                r, c = hit[0]
                path.append((x0 + (c + 0.5) * cell, top + (r + 0.5) * cell))
        if len(path) > 1:
            d.polyline(path, "muted thick", arrow=True)
        if cell >= 26:
            for (r, c), lin in np.ndenumerate(tiles):
                d.text(x0 + (c + 0.5) * cell, top + (r + 0.5) * cell, str(lin), size=SMALL, bold=lin < first)
        d.text(x0 + tn * cell / 2, top + tm * cell + 20, f"swizzle_log = {s}", size=13, bold=True)
        d.text(x0 + tn * cell / 2, top + tm * cell + 38, f"grid {grid[0]}×{grid[1]} threadgroups"
               + (f", {idle} without a tile" if idle else ""), size=SMALL, cls="muted")
        started = [np.argwhere(tiles == lin)[0] for lin in range(min(first, tiles.size)) if (tiles == lin).any()]
        a_panels, b_panels = len({int(r) for r, _ in started}), len({int(c) for _, c in started})
        d.text(x0 + tn * cell / 2, top + tm * cell + 54, f"threadgroups 0–{first - 1}: {a_panels} panels of A, "
               f"{b_panels} of B", size=SMALL, cls="muted")
        firsts = [tuple(int(v) for v in np.argwhere(tiles == lin)[0][::-1]) for lin in range(min(6, tiles.size))
                  if (tiles == lin).any()]
        summary.append(f"with swizzle_log {s} (a grid of {grid[0]} by {grid[1]} threadgroups"
                       + (f", {idle} of which return without a tile" if idle else "")
                       + f"), threadgroups 0 to {len(firsts) - 1} compute the tiles (column, row) "
                       + ", ".join(f"({c}, {r})" for c, r in firsts)
                       + f", and threadgroups 0 to {first - 1} read {a_panels} row panels of A and {b_panels} "
                       f"column panels of B, {a_panels + b_panels} in all")
    alt = (f"The {tm} by {tn} tiles of C of MLX's steel GEMM, each labelled with the linear index of the threadgroup "
           "that computes it: " + "; ".join(summary) + ".")
    return Figure(d.svg("Threadgroup swizzle of MLX's steel GEMM", alt), "Threadgroup swizzle of MLX's steel GEMM", alt,
                  "Computed when the site was built: MLX's `steel_gemm_fused` (the pinned headers, instantiated in "
                  "`kernels/steel_gemm.metal`) run on the site's emulator with a traced snapshot of each threadgroup's "
                  "tiles, for each `swizzle_log`.")
