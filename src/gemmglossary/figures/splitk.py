"""MLX's split-K: how K is cut into partitions, and the second pass that sums them.

Everything drawn comes from MLX's host decision as restated and tested in
``gemmglossary.mlx.matmul`` (``route`` and ``splitk_plan``): whether the product goes to
split-K, the tile, the number of partitions, their size and both grids. Which elements of
K a partition covers is the kernel's rule (``steel_gemm_splitk.h``): partition ``p`` starts
at ``p * split_k_partition_size`` and stops one partition later, except the last, which
runs to the end of K. :func:`partition_bounds` states that rule once; the tests check it
against the partial products MLX's kernel writes on the emulator.
"""

from __future__ import annotations

from .base import Figure, FigureError, Int
from .route import device_of
from .svg import SMALL, Drawing, category


def partition_bounds(partitions: int, partition_size: int, K: int) -> list[tuple[int, int]]:
    """[(k0, k1)] of each partition: whole partitions, the last one running to K."""
    return [(p * partition_size, K if p == partitions - 1 else (p + 1) * partition_size)
            for p in range(partitions)]


def plan_of(M: int, N: int, K: int, device: str):
    """(route, bounds) for a float32 M x N x K product that MLX sends to split-K."""
    from ..mlx import matmul

    r = matmul.route(matmul.Problem(M, N, K), device_of(device))
    if r.kernel != "splitk":
        raise FigureError(f"MLX sends a {M}×{N}×{K} float32 product on {device} to {r.kernel}, not split-K")
    return r, partition_bounds(r.splitk.partitions, r.splitk.partition_size, K)


def splitk_partitions(*, M: Int(1, 4096) = 33, N: Int(1, 4096) = 50, K: Int(1, 2 ** 20) = 1000,
                      device: str = "g13") -> Figure:
    """The K axis in partitions, the threadgroups of the first kernel, and the second pass."""
    r, bounds = plan_of(M, N, K, device)
    s = r.splitk
    P = s.partitions
    tiles_n, tiles_m, _ = s.threadgroups
    d = Drawing(680, 380)
    d.text(12, 20, f"Split-K for a {M}×{N} C with K = {K}: {P} partitions, then one sum per element",
           anchor="start", bold=True)

    # 1. the K axis
    left, width, y = 40, 600, 62
    d.text(12, y - 14, f"kernel 1: partition p covers k = p·{s.partition_size} up to the next; the last runs to K",
           anchor="start", size=SMALL, cls="muted")
    for p, (k0, k1) in enumerate(bounds):
        x0, x1 = left + width * k0 / K, left + width * k1 / K
        d.rect(x0, y, x1 - x0, 28, category(p) + " strong edge", title=f"partition {p}: k = {k0} .. {k1 - 1}")
        if x1 - x0 >= 22:
            d.text((x0 + x1) / 2, y + 14, str(p), size=SMALL)
    for k in sorted({0, bounds[-1][0], K}):
        d.line(left + width * k / K, y + 28, left + width * k / K, y + 34, "fg")
        d.text(left + width * k / K, y + 44, str(k), size=SMALL)
    d.text(left + width / 2, y + 62, "k", size=SMALL, cls="muted")

    # 2. the partial buffer, one slice of M x N per partition, and C
    shown = min(P, 8)
    top = 170
    cell_w, cell_h, dx, dy = 92, 64, 10, 7
    d.text(12, top - 30, f"kernel 1: {tiles_m} × {tiles_n} tiles of {s.config.bm}×{s.config.bn} "
                         f"× {P} partitions = {tiles_n * tiles_m * P} threadgroups,", anchor="start", size=SMALL,
           cls="muted")
    d.text(12, top - 14, f"each writing its product into slice p of a {P}×{M}×{N} float32 buffer", anchor="start",
           size=SMALL, cls="muted")
    x0, y0 = 60, top + 4
    for i in reversed(range(shown)):
        p = i if i < shown - 1 or shown == P else P - 1
        d.rect(x0 + i * dx, y0 + (shown - 1 - i) * dy, cell_w, cell_h, category(p) + " strong edge",
               title=f"slice {p}: the product of partition {p}")
    d.text(x0 + cell_w / 2 + shown * dx / 2, y0 + shown * dy + cell_h + 12, f"{P} partial products"
           + (f" (8 of {P} drawn)" if shown < P else ""), size=SMALL)
    cx = 330
    d.polyline([(x0 + cell_w + shown * dx + 16, y0 + cell_h / 2 + 20), (cx - 12, y0 + cell_h / 2 + 20)],
               "fg", arrow=True)
    d.text((x0 + cell_w + shown * dx + cx) / 2, y0 + cell_h / 2 + 6, "kernel 2", size=SMALL, bold=True)
    d.rect(cx, y0 + 20, cell_w, cell_h, "tint outline", title=f"C, {M}×{N}")
    d.text(cx + cell_w / 2, y0 + 20 + cell_h / 2, f"C {M}×{N}", size=SMALL)
    notes = [f"{s.accum_grid_threads[0]}×{s.accum_grid_threads[1]} threads, one per element of C",
             "C[i, j] = partial[0][i, j] + … + " + f"partial[{P - 1}][i, j]",
             "in order, partition 0 first (float32)"]
    for n, line in enumerate(notes):
        d.text(cx - 40, y0 + cell_h + 40 + n * 18, line, anchor="start", size=SMALL)

    sizes = ", ".join(f"{k1 - k0}" for k0, k1 in bounds)
    alt = (f"MLX's split-K ({r.kernel_name}) for a float32 product of {M}×{K} by {K}×{N}: K from 0 to {K} is cut into {P} "
           f"partitions of {s.partition_size} elements, the last running to K (lengths {sizes}). The first kernel "
           f"runs {tiles_n} by {tiles_m} tiles of {s.config.bm} by {s.config.bn} times {P} partitions = "
           f"{tiles_n * tiles_m * P} threadgroups, each writing its partition's product into its slice of a "
           f"{P} by {M} by {N} float32 buffer; the second kernel runs one thread per element of C and adds the "
           f"{P} slices in order.")
    title = f"Split-K partitions of a {M}×{N}×{K} product"
    return Figure(d.svg(title, alt), title, alt,
                  f"Computed when the site was built from `gemmglossary.mlx.matmul.route` (MLX's host decision, "
                  f"tested) for a device of class {device[0]!r}, generation {device[1:]}; the partition bounds are "
                  "the kernel's rule, which the tests check against MLX's split-K run on the emulator.")
