"""Register blocks over the C tile: which simdgroup computes each 8 x 8 fragment of a
threadgroup's tile of C, read from a run.

The first-party kernels stage their accumulators through ``tileC`` with
``simdgroup_store`` before the masked store, so the trace snapshot taken as that barrier
releases knows, for every element of the tile, which lane of which simdgroup wrote it.
"""

from __future__ import annotations

import numpy as np

from .base import Figure, FigureError, Int
from .kernel_facts import FIRST_PARTY, constants, first_party
from .runs import tile_writers, traced_gemm
from .svg import SMALL, Drawing, category
from .tiles import simdgroup_legend

FRAGMENT = 8


def fragment_owners(writers: np.ndarray) -> np.ndarray:
    """(rows/8) x (cols/8) array: the simdgroup that wrote each whole fragment."""
    rows, cols = writers.shape
    if rows % FRAGMENT or cols % FRAGMENT:
        raise FigureError(f"tileC is {rows}×{cols}, not a whole number of 8×8 fragments")
    out = np.full((rows // FRAGMENT, cols // FRAGMENT), -1, int)
    for fi in range(rows // FRAGMENT):
        for fj in range(cols // FRAGMENT):
            block = writers[fi * 8:(fi + 1) * 8, fj * 8:(fj + 1) * 8]
            sgs = set((block // 32).ravel().tolist())
            if (block < 0).any() or len(sgs) != 1 or len(set(block.ravel().tolist())) != 32:
                raise FigureError(f"fragment ({fi}, {fj}) of tileC was not written by the 32 lanes of one simdgroup")
            out[fi, fj] = sgs.pop()
    return out


def register_blocks(*, kernel: FIRST_PARTY = "tiled_gemm", TM: Int(0, 8) = 0, TN: Int(0, 8) = 0) -> Figure:
    """The threadgroup's C tile as fragments coloured by the simdgroup that holds them,
    each labelled with its (row, column) among that simdgroup's fragments."""
    spec = first_party(kernel)
    defines = {k: v for k, v in dict(TM=TM, TN=TN).items() if v}
    c = constants(spec, ("BM", "BN", "BK", "THREADS"), defines)
    run = traced_gemm(spec, c["BM"], c["BN"], c["BK"], defines=defines or None)
    staged = [s for s in run.trace.snapshots if "tileC" in s.regions and s["tileC"].written_since_barrier().all()]
    if not staged:
        raise FigureError(f"{kernel}: no barrier released with the whole of tileC just written")
    snap = staged[-1]
    owners = fragment_owners(tile_writers(spec, snap, "tileC", defines or None))
    fr, fc = owners.shape
    cell = min(64.0, 600 / fc, 480 / fr)
    left, top = 40, 84
    d = Drawing(680, top + fr * cell + 64)
    d.text(12, 20, f"{spec.path.name}: which simdgroup holds each 8×8 fragment of the {c['BM']}×{c['BN']} tile of C",
           anchor="start", bold=True)
    sgs = c["THREADS"] // 32
    simdgroup_legend(d, 12, 48, sgs)
    index = {}
    for s in range(sgs):
        rr, cc = np.nonzero(owners == s)
        rows, cols = sorted(set(rr.tolist())), sorted(set(cc.tolist()))
        for r, q in zip(rr, cc):
            index[(r, q)] = (rows.index(r), cols.index(q))
    for (r, q), s in np.ndenumerate(owners):
        x, y = left + q * cell, top + r * cell
        i, j = index[(r, q)]
        d.rect(x, y, cell, cell, category(s) + " edge",
               title=f"rows {8 * r}–{8 * r + 7}, columns {8 * q}–{8 * q + 7}: simdgroup {s}, its fragment ({i}, {j})")
        if cell >= 34:
            d.text(x + cell / 2, y + cell / 2, f"{i},{j}", size=SMALL)
    # outline each simdgroup's fragments where they form one rectangle
    blocks = []
    for s in range(sgs):
        rr, cc = np.nonzero(owners == s)
        r0, r1, c0, c1 = rr.min(), rr.max() + 1, cc.min(), cc.max() + 1
        contiguous = (r1 - r0) * (c1 - c0) == len(rr)
        if contiguous:
            d.rect(left + c0 * cell, top + r0 * cell, (c1 - c0) * cell, (r1 - r0) * cell, "outline")
        blocks.append((s, r0, r1, c0, c1, len(rr), contiguous))
    for k in range(0, fc + 1):
        if k < fc:
            d.text(left + (k + 0.5) * cell, top - 10, str(8 * k), size=SMALL, cls="muted")
    for k in range(fr):
        d.text(left - 8, top + (k + 0.5) * cell, str(8 * k), size=SMALL, anchor="end", cls="muted")
    d.text(left, top + fr * cell + 22, "i,j: the fragment's row and column among its simdgroup's fragments",
           anchor="start", size=SMALL, cls="muted")
    d.text(left, top + fr * cell + 40, "edges: the first row and column of each fragment in the tile",
           anchor="start", size=SMALL, cls="muted")
    side = left + fc * cell + 32
    if 680 - side >= 200:
        per_sg = [b[5] for b in blocks][0]
        notes = [f"{sgs} simdgroups, {c['THREADS']} threads", f"{per_sg} accumulator fragments each",
                 f"= {2 * per_sg} floats of registers per lane"]
        if all(b[6] for b in blocks):
            b = blocks[0]
            notes.append(f"a block of {b[2] - b[1]}×{b[4] - b[3]} fragments ({8 * (b[2] - b[1])}×{8 * (b[4] - b[3])})")
        for k, line in enumerate(notes):
            d.text(side, top + 12 + 20 * k, line, anchor="start", size=13)
    per = blocks[0][5]
    shape = f"{blocks[0][2] - blocks[0][1]} by {blocks[0][4] - blocks[0][3]}"
    alt = (f"The {c['BM']} by {c['BN']} tile of C of {spec.path.name} as a grid of {fr} by {fc} fragments of 8 by 8, "
           f"coloured by the simdgroup that holds each as an accumulator: {sgs} simdgroups, {per} fragments each"
           + (f", each simdgroup a contiguous block of {shape} fragments; " if all(b[6] for b in blocks) else "; ")
           + "; ".join(f"simdgroup {s} holds rows {8 * r0} to {8 * r1 - 1}, columns {8 * c0} to {8 * c1 - 1}"
                       for s, r0, r1, c0, c1, _, ok in blocks if ok) + ".")
    over = " ".join(f"`-D{k}={v}`" for k, v in defines.items())
    return Figure(d.svg(f"Register blocks of {spec.path.name}", alt), f"Register blocks of {spec.path.name}", alt,
                  f"Computed when the site was built: `kernels/{spec.path.name}`{' built with ' + over if over else ''} "
                  f"run on the site's emulator with a trace; who wrote each element of `tileC` as the barrier at line "
                  f"{snap.line} released.")
