"""Who reads what in a first-party matrix-vector kernel (gemv.metal, qmv4.metal).

Both kernels split the work the same way, and say so in their header comments: simdgroup
``s`` of threadgroup ``g`` owns ``ROWS`` consecutive rows, starting at
``g * ROWS_PER_THREADGROUP + s * ROWS``; along a row, a step covers ``STEP`` elements, and
lane ``l`` reads the ``STEP / 32`` consecutive ones starting at ``l * STEP / 32`` (four
floats in gemv.metal, one packed word of eight weights in qmv4.metal), with the same
elements of ``x``, once per step for all its rows. The constants are read from the kernel
files (``gemmglossary.kernels.MATVEC_KERNELS``); the tests check the map against runs of the
kernels on the emulator (a threadgroup or a simdgroup left out of the launch leaves exactly
its rows unwritten; one lane's partial sums read back cover exactly its columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from typing import Literal

from ..kernels import MATVEC_KERNELS
from .base import Figure, FigureError, Int
from .svg import SMALL, Drawing, category

#: What one element along a row is, per kernel (for the labels).
ELEMENT = {"gemv": "float", "qmv4": "weight"}


@dataclass
class MatvecMap:
    kernel: str
    M: int
    K: int
    rows: int            # ROWS: rows per simdgroup
    simdgroups: int      # SIMDGROUPS
    step: int            # STEP: elements of a row one simdgroup covers per step
    per_lane: int        # STEP / 32
    owner: np.ndarray    # (M, 2): threadgroup, simdgroup of each row
    lane: np.ndarray     # (K,): the lane reading each column
    step_of: np.ndarray  # (K,): the step in which it is read


def matvec_map(kernel: str, M: int, K: int) -> MatvecMap:
    if kernel not in MATVEC_KERNELS:
        raise FigureError(f"kernel= must be one of {', '.join(MATVEC_KERNELS)}, got {kernel!r}")
    if M < 1 or K < 1:
        raise FigureError("M= and K= must be at least 1")
    c = MATVEC_KERNELS[kernel].constants()
    rows, sgs, step = c["ROWS"], c["SIMDGROUPS"], c["STEP"]
    if c["ROWS_PER_THREADGROUP"] != rows * sgs or step % 32:
        raise FigureError(f"kernels/{kernel}.metal: ROWS_PER_THREADGROUP is not ROWS × SIMDGROUPS or STEP is not "
                          "a multiple of 32; this figure's reading of the kernel no longer holds")
    if kernel == "qmv4" and K % c["GROUP_SIZE"]:
        raise FigureError(f"qmv4 takes whole groups: K= must be a multiple of GROUP_SIZE = {c['GROUP_SIZE']}")
    r = np.arange(M)
    owner = np.stack([r // (rows * sgs), (r % (rows * sgs)) // rows], axis=1)
    k = np.arange(K)
    return MatvecMap(kernel, M, K, rows, sgs, step, step // 32, owner, (k % step) // (step // 32), k // step)


def gemv_rows(*, kernel: Literal[tuple(MATVEC_KERNELS)] = "gemv", M: Int(1, 256) = 40,  # type: ignore[valid-type]
              K: Int(1, 8192) = 300) -> Figure:
    """Rows of the matrix by owning simdgroup; columns of one step by lane."""
    m = matvec_map(kernel, M, K)
    steps = -(-K // m.step)
    elem = ELEMENT[kernel]
    d = Drawing(680, 0)
    d.text(12, 20, f"kernels/{kernel}.metal: who reads which part of the matrix and of x (M = {M}, K = {K})",
           anchor="start", bold=True)
    d.text(12, 42, f"{m.simdgroups} simdgroups of {m.rows} rows per threadgroup; a step covers {m.step} {elem}s of "
           f"a row, {m.per_lane} per lane", anchor="start", size=SMALL, cls="muted")

    # the matrix: rows coloured by their simdgroup, steps marked along K
    left, top, width = 172, 92, 480
    rh = max(3.0, min(12.0, 260 / M))
    height = rh * M
    sx = width / K
    d.text(left - 8, top - 26, "x", anchor="end", size=SMALL, bold=True)
    d.rect(left, top - 34, width, 14, "tint outline", title=f"x, {K} elements")
    groups = []
    for first in range(0, M, m.rows):
        tg, sg = (int(v) for v in m.owner[first])
        n = min(m.rows, M - first)
        cls = category(tg * m.simdgroups + sg)
        d.rect(left, top + first * rh, width, n * rh, cls + " strong edge",
               title=f"rows {first}–{first + n - 1}: threadgroup {tg}, simdgroup {sg}")
        groups.append((first, n, tg, sg))
    label_every = max(1, -(-len(groups) * 16 // int(height)))  # keep labels 16 px apart
    for i, (first, n, tg, sg) in enumerate(groups):
        if i % label_every == 0:
            d.text(left - 8, top + (first + n / 2) * rh, f"tg {tg}, sg {sg}: rows {first}–{first + n - 1}",
                   anchor="end", size=SMALL)
    for s in range(steps + 1):
        k = min(s * m.step, K)
        d.line(left + k * sx, top - 36, left + k * sx, top + height + 4, "fg", dash=0 < k < K)
        d.text(left + k * sx, top + height + 16, str(k), size=SMALL, cls="muted")
    for s in range(steps):
        k0, k1 = s * m.step, min((s + 1) * m.step, K)
        label = f"step {s}" + (" (partial)" if k1 - k0 < m.step else "")
        if (k1 - k0) * sx >= len(label) * 7.5:
            d.text(left + (k0 + k1) / 2 * sx, top - 27, label, size=SMALL)
    d.text(left + width / 2, top + height + 34, f"k: the {K} {elem}s of a row", size=SMALL, cls="muted")

    # one step of one row, lane by lane
    zy = top + height + 64
    d.text(12, zy, f"step 0 of any row: lane l reads {elem}s {m.per_lane}·l … {m.per_lane}·l + {m.per_lane - 1} "
           f"of the step, and the same elements of x", anchor="start", size=SMALL)
    zl, lw = 20, 640 / 32
    in_step = min(m.step, K)
    for lane in range(32):
        k0 = lane * m.per_lane
        present = max(0, min(m.per_lane, in_step - k0))
        cls = (category(lane % 2) + (" strong" if lane % 2 else "")) if present else "frame"
        d.rect(zl + lane * lw, zy + 14, lw, 22, cls + " edge",
               title=f"lane {lane}: k = {k0} … {k0 + m.per_lane - 1}" + ("" if present else " (past K: skipped)"))
        d.text(zl + lane * lw + lw / 2, zy + 25, str(lane), size=SMALL)
    d.text(zl, zy + 50, "k = 0", anchor="start", size=SMALL, cls="muted")
    d.text(zl + 640, zy + 50, f"k = {m.step - 1}", anchor="end", size=SMALL, cls="muted")
    d.text(zl + 320, zy + 50, "lanes (numbers): neighbouring lanes read neighbouring addresses", size=SMALL,
           cls="muted")
    d.height = zy + 66

    alt = (f"The {M} × {K} matrix of kernels/{kernel}.metal with x above it. Rows are grouped by the simdgroup that "
           f"owns them, {m.rows} consecutive rows per simdgroup and {m.simdgroups} simdgroups per threadgroup: "
           + "; ".join(f"rows {f}–{f + n - 1} to threadgroup {tg} simdgroup {sg}" for f, n, tg, sg in groups[:6])
           + ("; and so on" if len(groups) > 6 else "")
           + f". Along K the row is read in {steps} steps of {m.step} {elem}s"
           + (", the last one partial" if K % m.step else "")
           + f"; in each step lane l reads the {m.per_lane} consecutive {elem}s starting at {m.per_lane}·l and the "
           "same elements of x, which it applies to all its simdgroup's rows.")
    title = f"Who reads what in {kernel}.metal"
    return Figure(d.svg(title, alt), title, alt,
                  f"Computed when the site was built from the constants of `kernels/{kernel}.metal` (ROWS, "
                  "SIMDGROUPS, STEP, read through `gemmglossary.kernels`); the tests check this map against runs "
                  "of the kernel on the emulator.")
