"""The double-buffer rhythm: which K step each threadgroup tile buffer holds at every barrier.

The kernel runs on the emulator with every element of A and B equal to the number of its
K step (A[r, k] = B[k, c] = k // BK + 1), traced with a snapshot at each barrier release.
A buffer's contents then say which step it holds, and the race shadow says whether it was
written since the previous barrier. A single-buffered kernel (tiled_gemm) refills its one
tile per operand after every other barrier; a double-buffered one alternates two, loading
step k + 1 into one while the other still holds step k.

A buffer is a threadgroup array, or one half of an array declared with a first dimension
of 2 (``threadgroup float tileA[2][BM * BK]``).
"""

from __future__ import annotations

import numpy as np

from .base import Figure, FigureError, Int
from .kernel_facts import FIRST_PARTY, constants, first_party
from .runs import traced_gemm
from .svg import SMALL, Drawing, category


def buffers(snapshot, names: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{buffer label: (values, written since the previous barrier)} of the operand tiles."""
    out = {}
    for name, region in snapshot.regions.items():
        if not any(name.startswith(n) for n in names):
            continue
        values = region.values(np.float32).reshape(-1)
        fresh = region.written_since_barrier().reshape(-1)
        if len(region.shape) >= 2 and region.shape[0] == 2:
            half = values.size // 2
            out[f"{name}[0]"] = (values[:half], fresh[:half])
            out[f"{name}[1]"] = (values[half:], fresh[half:])
        else:
            out[name] = (values, fresh)
    return out


def held(values: np.ndarray) -> int | None:
    """The K step a buffer holds (its most common non-zero value), or None if empty."""
    v = values[values > 0]
    if not v.size:
        return None
    steps, counts = np.unique(np.rint(v).astype(int), return_counts=True)
    return int(steps[np.argmax(counts)])


def double_buffer(*, kernel: FIRST_PARTY = "tiled_gemm", steps: Int(2, 8) = 4) -> Figure:
    """Per barrier release of threadgroup (0, 0): the K step in each tile buffer, fresh
    loads marked."""
    spec = first_party(kernel)
    c = constants(spec, ("BM", "BN", "BK"))
    M, N, K = c["BM"], c["BN"], c["BK"] * steps
    step_of_k = (np.arange(K) // c["BK"] + 1).astype(np.float32)
    A = np.repeat(step_of_k[None, :], M, axis=0)
    B = np.repeat(step_of_k[:, None], N, axis=1)
    run = traced_gemm(spec, M, N, K, A=A, B=B)
    snaps = run.trace.snapshots
    table = [(s, buffers(s, ("tileA", "tileB", "As", "Bs"))) for s in snaps]
    labels = sorted({b for _, bufs in table for b in bufs})
    if not labels:
        raise FigureError(f"{kernel}: no threadgroup array named tileA/tileB (or As/Bs) in its snapshots")
    cols = len(table)
    left, top = 96, 96
    cw = min(64.0, (680 - left - 12) / cols)
    rh = 30
    d = Drawing(680, top + rh * len(labels) + 70)
    d.text(12, 20, f"{spec.path.name}: the K step each tile buffer holds at every barrier", anchor="start", bold=True)
    d.rect(12, 38, 16, 16, category(0) + " strong")
    d.text(34, 46, "loaded since the previous barrier", anchor="start", size=SMALL)
    d.rect(262, 38, 16, 16, category(0))
    d.text(284, 46, "held from before", anchor="start", size=SMALL)
    rhythm = []
    for j, (snap, bufs) in enumerate(table):
        x = left + j * cw
        d.text(x + cw / 2, top - 24, f":{snap.line}", size=SMALL, cls="muted")
        d.text(x + cw / 2, top - 10, str(j + 1), size=SMALL, cls="muted")
        cells = []
        for i, label in enumerate(labels):
            if label not in bufs:
                continue
            values, fresh = bufs[label]
            k = held(values)
            new = bool(fresh.any())
            y = top + i * rh
            if k is not None:
                d.rect(x + 1, y + 1, cw - 2, rh - 2, category((k - 1) % 8) + (" strong" if new else ""),
                       title=f"{label} at the barrier of line {snap.line}: K step {k}" + (" (just loaded)" if new else ""))
                if cw >= 30:
                    d.text(x + cw / 2, y + rh / 2, f"k{k}", size=SMALL, bold=new)
                cells.append(f"{label} {'loads' if new else 'holds'} step {k}")
        rhythm.append(f"barrier {j + 1} (line {snap.line}): " + (", ".join(cells) or "no tile holds a step"))
    for i, label in enumerate(labels):
        d.text(left - 8, top + i * rh + rh / 2, label, anchor="end", size=SMALL, mono=True)
    d.text(left, top + len(labels) * rh + 22, "columns: the barrier releases of threadgroup (0, 0), in order "
           "(above: their source line)", anchor="start", size=SMALL, cls="muted")
    alt = (f"A table of the threadgroup tile buffers of {spec.path.name} (rows) at each of its {cols} barrier releases "
           f"over {steps} K steps (columns), each cell the K step the buffer holds: " + "; ".join(rhythm) + ".")
    return Figure(d.svg(f"Tile buffers of {spec.path.name} by barrier", alt), f"Tile buffers of {spec.path.name}", alt,
                  f"Computed when the site was built: `kernels/{spec.path.name}` run on the site's emulator with every "
                  "element of A and B set to the number of its K step, and a traced snapshot of threadgroup memory at "
                  "each barrier.")
