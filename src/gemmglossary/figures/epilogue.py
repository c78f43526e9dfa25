"""The epilogue's masked edge: which elements of the edge tiles a kernel stores, from a run.

C is passed as a block of a larger buffer (``ldc`` wider than N, rows beyond M) filled
with NaN; after the run, whatever still holds NaN was not written. The tiles of the grid
cover more than C at the right and bottom edges; the figure shows, per threadgroup tile,
the part inside C (stored) and the part the mask skipped.
"""

from __future__ import annotations

import numpy as np

from ..emulator import load_kernel
from .base import Figure, FigureError, Int
from .kernel_facts import FIRST_PARTY, constants, first_party
from .svg import SMALL, Drawing, category


def rectangles(mask: np.ndarray) -> list[tuple[int, int, int, int]]:
    """(row, col, rows, cols) rectangles covering exactly the True cells: runs of each row,
    merged with the row below while the runs are the same."""
    rects: list[list[int]] = []
    open_: dict[tuple[int, int], list[int]] = {}
    for r, row in enumerate(mask):
        runs, c = [], 0
        while c < len(row):
            if row[c]:
                e = c
                while e < len(row) and row[e]:
                    e += 1
                runs.append((c, e))
                c = e
            else:
                c += 1
        nxt = {}
        for c0, c1 in runs:
            if (c0, c1) in open_:
                open_[(c0, c1)][2] += 1
                nxt[(c0, c1)] = open_[(c0, c1)]
            else:
                rect = [r, c0, 1, c1 - c0]
                rects.append(rect)
                nxt[(c0, c1)] = rect
        open_ = nxt
    return [tuple(x) for x in rects]


def masked_edge(*, kernel: FIRST_PARTY = "tiled_gemm", M: Int(1, 512) = 100, N: Int(1, 512) = 150,
                K: Int(1, 512) = 20) -> Figure:
    """C of M x N inside a NaN-filled buffer of whole tiles; what the kernel's masked
    store wrote, per threadgroup tile."""
    spec = first_party(kernel)
    if spec.params_dtype is None or "ldc" not in spec.params_dtype.names:
        raise FigureError(f"{kernel} takes no row stride for C (ldc), so writes past column N cannot be told "
                          "from the next row's elements; this figure needs a kernel with a parameter struct "
                          "holding ldc (tiled_gemm)")
    c = constants(spec, ("BM", "BN"))
    bm, bn = c["BM"], c["BN"]
    ty, tx = -(-M // bm), -(-N // bn)
    if M % bm == 0 and N % bn == 0:
        raise FigureError(f"M={M} and N={N} are multiples of the {bm}×{bn} tile: there is no edge to draw")
    rows, ldc = ty * bm, tx * bn
    rng = np.random.default_rng(4)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    buf = np.full((rows, ldc), np.nan, np.float32)
    k = load_kernel(spec.path, spec.name)
    d = spec.dispatch(M, N, K)
    params = spec.params(M, N, K, ldc=ldc)
    args = [A, B, buf.reshape(-1), params] if [p.name for p in spec.signature().buffers] == ["A", "B", "C", "p"] \
        else None
    if args is None:
        raise FigureError(f"{kernel}: expected buffers A, B, C and a parameter struct")
    k(*args, threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
    written = ~np.isnan(buf)
    inside = np.zeros_like(written)
    inside[:M, :N] = True
    if not np.allclose(buf[:M, :N], A @ B, atol=1e-4):
        raise FigureError(f"{kernel} on the emulator does not compute A·B inside C; no figure from a wrong run")
    stray = int((written & ~inside).sum())

    scale = min(560 / ldc, 380 / rows)
    left, top = 40, 78
    dr = Drawing(680, top + rows * scale + 70)
    dr.text(12, 20, f"{spec.path.name}: the masked store at the edges of C ({M}×{N}, tiles of {bm}×{bn})",
            anchor="start", bold=True)
    dr.rect(12, 40, 16, 16, category(0) + " strong")
    dr.text(34, 48, "written", size=SMALL, anchor="start")
    dr.rect(112, 40, 16, 16, "frame")
    dr.text(134, 48, "masked: inside the tile, outside C", size=SMALL, anchor="start")
    if stray:
        dr.rect(380, 40, 16, 16, category(3) + " strong")
        dr.text(402, 48, "written outside C", size=SMALL, anchor="start")
    for r0, c0, nr, nc in rectangles(written & inside):
        dr.rect(left + c0 * scale, top + r0 * scale, nc * scale, nr * scale, category(0) + " strong")
    for r0, c0, nr, nc in rectangles(written & ~inside):
        dr.rect(left + c0 * scale, top + r0 * scale, nc * scale, nr * scale, category(3) + " strong")
    for j in range(tx + 1):
        dr.line(left + j * bn * scale, top, left + j * bn * scale, top + rows * scale, "fg")
    for i in range(ty + 1):
        dr.line(left, top + i * bm * scale, left + ldc * scale, top + i * bm * scale, "fg")
    dr.rect(left, top, N * scale, M * scale, "outline")
    for i in range(ty):
        for j in range(tx):
            r0, c0 = i * bm, j * bn
            r1, c1 = min(M, r0 + bm), min(N, c0 + bn)
            full = r1 - r0 == bm and c1 - c0 == bn
            cx, cy = left + (c0 + c1) / 2 * scale, top + (r0 + r1) / 2 * scale
            if (r1 - r0) * scale >= 34 and (c1 - c0) * scale >= 70:
                dr.text(cx, cy - 9, f"({j}, {i})", size=SMALL)
                dr.text(cx, cy + 9, "whole tile" if full else "edge tile", size=SMALL, cls="muted")
            for mr0, mr1, mc0, mc1 in ((r0, r1, c1, c0 + bn), (r1, r0 + bm, c0, c0 + bn)):  # right, below
                if (mr1 - mr0) * scale >= 22 and (mc1 - mc0) * scale >= 56:
                    dr.text(left + (mc0 + mc1) / 2 * scale, top + (mr0 + mr1) / 2 * scale, "masked",
                            size=SMALL, cls="muted")
    dr.text(left + N * scale, top + rows * scale + 18, f"N = {N}", size=SMALL, anchor="middle")
    dr.line(left + N * scale, top + rows * scale, left + N * scale, top + rows * scale + 8, "fg")
    dr.text(left + ldc * scale + 8, top + M * scale, f"M = {M}", size=SMALL, anchor="start")
    dr.text(left, top + rows * scale + 44,
            f"threadgroups (x, y): {tx}×{ty}; each stores only the elements of its tile that lie inside C",
            size=SMALL, anchor="start", cls="muted")
    edge_tiles = tx * ty - (M // bm) * (N // bn)
    alt = (f"C of {M} by {N} covered by {tx} by {ty} threadgroup tiles of {bm} by {bn}; {edge_tiles} of them are edge "
           f"tiles that extend past C, to {rows} rows and {ldc} columns. The run wrote all {M * N} elements of C and "
           f"{stray} elements outside it: the parts of the edge tiles past row {M - 1} and past column {N - 1} "
           "were masked.")
    return Figure(dr.svg(f"Masked edge of {spec.path.name}", alt), f"Masked edge of {spec.path.name}", alt,
                  f"Computed when the site was built: `kernels/{spec.path.name}` run on the site's emulator with C "
                  f"as a block of a NaN-filled {rows}×{ldc} buffer (ldc = {ldc}); what is drawn as written is what "
                  "no longer held NaN.")
