"""Who loads what: the threads that wrote each element of the threadgroup tiles in the first
K step, and what happens to that partition when the launch has fewer threads.

Both figures run the unmodified kernel on the emulator with a trace and read the snapshot
taken as the first barrier of threadgroup (0, 0) released: the race checker's shadow
memory knows the last writer of every element.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .base import Figure, FigureError, Int
from .kernel_facts import FIRST_PARTY, constants, first_party
from .runs import tile_writers, traced_gemm
from .svg import SMALL, Drawing
from .tiles import draw_tile, runs, simdgroup_legend

WIDTH = 680


def _describe(name: str, writers: np.ndarray) -> str:
    """A sentence about which elements a few threads wrote."""
    rs = [r for r in runs(writers) if r.thread >= 0]
    threads = sorted({r.thread for r in rs})
    picks = [t for t in dict.fromkeys([threads[0], threads[min(1, len(threads) - 1)],
                                        threads[min(32, len(threads) - 1)], threads[-1]])]
    parts = []
    for t in picks:
        mine = [r for r in rs if r.thread == t]
        spans = ", ".join(f"row {r.row} columns {r.start} to {r.stop - 1}" if r.stop - r.start > 1
                          else f"row {r.row} column {r.start}" for r in mine)
        parts.append(f"thread {t} writes {spans}")
    passes = 1 + max(r.index for r in rs)
    return (f"{name} ({writers.shape[0]} by {writers.shape[1]}), {len(threads)} threads, "
            f"{passes} pass{'es' if passes > 1 else ''}: " + "; ".join(parts) + ".")


def cooperative_load(*, kernel: FIRST_PARTY = "tiled_gemm", operand: Literal["A", "B", "both"] = "both") -> Figure:
    """Which thread wrote each element of tileA and tileB before the first barrier."""
    spec = first_party(kernel)
    c = constants(spec, ("BM", "BN", "BK") if kernel != "matmul_tiled" else ("TILE",))
    bm = c.get("BM", c.get("TILE"))
    bn = c.get("BN", c.get("TILE"))
    bk = c.get("BK", c.get("TILE"))
    run = traced_gemm(spec, bm, bn, bk)
    first = next((s for s in run.trace.snapshots), None)
    if first is None:
        raise FigureError(f"{kernel}: threadgroup (0, 0) released no barrier")
    names = {"A": ["tileA"], "B": ["tileB"], "both": ["tileB", "tileA"]}[operand]
    tiles = {n: tile_writers(spec, first, n) for n in names}
    for n, w in tiles.items():
        if (w < 0).any():
            raise FigureError(f"{kernel}: {int((w < 0).sum())} elements of {n} were not written before the barrier")
    threads = int(max(w.max() for w in tiles.values())) + 1
    # lay out: measure each tile at the full width
    probe = Drawing(WIDTH, 10)
    heights = {n: draw_tile(probe, 0, 0, w, WIDTH - 24) for n, w in tiles.items()}
    d = Drawing(WIDTH, 70 + sum(h + 34 for h in heights.values()) + 30)
    d.text(12, 20, f"{spec.path.name}: who writes each tile element (threadgroup (0, 0), first K step)",
           anchor="start", bold=True)
    simdgroup_legend(d, 12, 46, (threads + 31) // 32)
    y = 72
    for n, w in tiles.items():
        d.text(12, y + 6, f"{n}, {w.shape[0]}×{w.shape[1]}", anchor="start", bold=True, size=13)
        draw_tile(d, 0, y + 16, w, WIDTH - 24)
        y += heights[n] + 34
    d.text(12, y + 8, f"Each box: the elements one thread wrote in one go, labelled with its "
                      f"thread_index_in_threadgroup ({threads} threads).", anchor="start", size=SMALL, cls="muted")
    alt = (f"Threadgroup tiles of {spec.path.name}, each element coloured by the simdgroup of the thread that "
           "wrote it in the first K step. " + " ".join(_describe(n, w) for n, w in tiles.items()))
    line = first.line
    return Figure(d.svg(f"Cooperative load of {spec.path.name}", alt), f"Cooperative load of {spec.path.name}", alt,
                  f"Computed when the site was built: `kernels/{spec.path.name}` run on the site's emulator with a "
                  f"trace; the writers are the race checker's record as the barrier at line {line} released.")


def thread_count(*, kernel: FIRST_PARTY = "tiled_gemm", operand: Literal["A", "B"] = "B",
                 fewer: Int(2, 1024) = 2) -> Figure:
    """tileA or tileB after the first barrier, with the threads the kernel is written for and
    with ``1/fewer`` of them: the missing threads' share of the tile is never written."""
    spec = first_party(kernel)
    c = constants(spec, ("BM", "BN", "BK", "THREADS"))
    if c["THREADS"] % fewer:
        raise FigureError(f"fewer= must divide the kernel's {c['THREADS']} threads, got {fewer}")
    name = f"tile{operand}"
    panels = []
    for threads in (c["THREADS"], c["THREADS"] // fewer):
        run = traced_gemm(spec, c["BM"], c["BN"], c["BK"], threads_per_threadgroup=(threads, 1, 1),
                          check=threads == c["THREADS"])
        snap = run.trace.snapshots[0]
        panels.append((threads, tile_writers(spec, snap, name), run, snap.line))
    probe = Drawing(WIDTH, 10)
    heights = [draw_tile(probe, 0, 0, w, WIDTH - 24, label_threads=False) for _, w, _, _ in panels]
    d = Drawing(WIDTH, 76 + sum(h + 40 for h in heights) + 10)
    d.text(12, 20, f"{spec.path.name}: {name} after the first barrier, by thread count", anchor="start", bold=True)
    simdgroup_legend(d, 12, 46, c["THREADS"] // 32, extra="never written")
    y = 74
    summary = []
    for (threads, w, run, _), h in zip(panels, heights):
        missing = int((w < 0).sum())
        err = float(np.abs(run.C - run.A @ run.B).max())
        head = (f"{threads} threads (max_total_threads_per_threadgroup): every element written"
                if not missing else f"{threads} threads: {missing} of {w.size} elements never written, "
                                    f"max |C − A·B| = {err:.2g}")
        d.text(12, y + 6, head, anchor="start", size=13, bold=True)
        draw_tile(d, 0, y + 16, w, WIDTH - 24, label_threads=False)
        y += h + 40
        summary.append(f"with {threads} threads {missing} of the {w.size} elements are never written"
                       + (f" and C differs from A·B by up to {err:.2g}" if missing else ""))
    alt = (f"Two drawings of {name} of {spec.path.name} ({panels[0][1].shape[0]} by {panels[0][1].shape[1]}), each "
           "element coloured by the simdgroup that wrote it in the first K step: " + "; ".join(summary) +
           ". The unwritten elements are the share of the threads that were not launched.")
    return Figure(d.svg(f"{name} of {spec.path.name} with too few threads", alt),
                  f"{name} of {spec.path.name} with too few threads", alt,
                  f"Computed when the site was built: `kernels/{spec.path.name}` run on the site's emulator with "
                  f"{panels[0][0]} and with {panels[1][0]} threads per threadgroup, traced at the barrier at "
                  f"line {panels[0][3]}.")
