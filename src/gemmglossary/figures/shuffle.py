"""The five ``simd_shuffle_down`` steps of a 32-lane sum, read back from a run.

``shuffle_down_sum`` of ``kernels/reductions.metal`` records every lane's value before the
first step and after each of the five (its ``steps`` buffer). The figure runs it on the
emulator with lane ``i`` holding ``i`` (every partial sum is then an exact integer),
checks the recorded values against the halving the kernel's comment describes (after the
step with offset ``o``, lane ``i < o`` holds the sum of lanes ``i, i + o, i + 2o, ...``) and
that lane 0 ends with the total, and draws them: one column per step, one row per lane, a
line from each lane to the lane it added.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..paths import kernels_dir
from .base import Figure, FigureError
from .svg import SMALL, Drawing, category

LANES = 32
LEVELS = 5  # log2(32) halving steps


def shuffle_steps(source: str | Path | None = None) -> np.ndarray:
    """(LEVELS + 1) x 32 values of every lane before and after each step, from a run of
    ``shuffle_down_sum`` (``source``: the kernel file or text, kernels/reductions.metal by
    default); a run that does not halve as described is a FigureError."""
    from ..emulator import load_kernel

    kernel = load_kernel(source if source is not None else kernels_dir() / "reductions.metal", "shuffle_down_sum")
    values = np.arange(LANES, dtype=np.float32)
    out = np.full(1, np.nan, np.float32)
    steps = np.full((LEVELS + 1) * LANES, np.nan, np.float32)
    kernel(values, out, steps, LANES, threads=(LANES, 1, 1), threads_per_threadgroup=(LANES, 1, 1))
    steps = steps.reshape(LEVELS + 1, LANES)
    for level in range(LEVELS + 1):
        live = LANES >> level
        expected = values.reshape(1 << level, live).sum(0)
        if not np.array_equal(steps[level, :live], expected):
            raise FigureError(f"shuffle_down_sum's lanes 0..{live - 1} after step {level} are "
                              f"{steps[level, :live].tolist()}, not the halving {expected.tolist()}")
    if out[0] != values.sum():
        raise FigureError(f"shuffle_down_sum's lane 0 ends with {out[0]}, not {values.sum()}")
    return steps


def shuffle_tree() -> Figure:
    """Every lane's value before and after each simd_shuffle_down step of a 32-lane sum."""
    steps = shuffle_steps()
    left, top, col, rh = 60, 92, 104, 16
    d = Drawing(680, top + LANES * rh + 40)
    d.text(12, 20, "shuffle_down_sum: every lane after every step, lane i starting with the value i",
           anchor="start", bold=True)
    d.text(12, 42, "step with offset o: lane i < o adds lane i + o (the lines); the other lanes hold nothing the "
           "sum uses (blank)", anchor="start", size=SMALL, cls="muted")
    cw = 44
    for level in range(LEVELS + 1):
        x = left + level * col
        d.text(x + cw / 2, top - 28, "start" if level == 0 else f"offset {LANES >> level}", size=SMALL, bold=True)
        d.text(x + cw / 2, top - 12, f"{LANES >> level} lanes", size=SMALL, cls="muted")
        live = LANES >> level
        for lane in range(live):
            y = top + lane * rh
            d.rect(x, y + 1, cw, rh - 2, category(level) + " strong",
                   title=f"lane {lane} {'at the start' if level == 0 else f'after offset {live}'}: "
                         f"{steps[level, lane]:.0f}")
            d.text(x + cw / 2, y + rh / 2, f"{steps[level, lane]:.0f}", size=SMALL, mono=True)
            if level:
                src = lane + live
                px = left + (level - 1) * col + cw
                d.line(px, top + lane * rh + rh / 2, x, y + rh / 2, "muted")
                d.line(px, top + src * rh + rh / 2, x, y + rh / 2, category(level))
    for lane in range(LANES):
        d.text(left - 8, top + lane * rh + rh / 2, f"lane {lane}", anchor="end", size=SMALL)
    d.text(left + LEVELS * col + cw / 2, top + rh + 14, f"= {steps[LEVELS, 0]:.0f}", size=SMALL, bold=True)
    alt = ("Six columns, the 32 lanes of a simdgroup before the first simd_shuffle_down step and after each step, "
           "lane i starting with the value i. At the step with offset o, lane i below o adds the value of lane "
           "i + o: " + "; ".join(
               f"after offset {LANES >> level} lanes 0 to {(LANES >> level) - 1} hold "
               + ", ".join(f"{v:.0f}" for v in steps[level, :min(4, LANES >> level)])
               + (", ..." if (LANES >> level) > 4 else "")
               for level in range(1, LEVELS + 1))
           + f". Lane 0 ends with {steps[LEVELS, 0]:.0f}, the sum of 0 to 31.")
    title = "The five shuffle-down steps of a simdgroup sum"
    return Figure(d.svg(title, alt), title, alt,
                  "Computed when the site was built: `shuffle_down_sum` of `kernels/reductions.metal` run on the "
                  "site's emulator, every lane's value read back from the buffer the kernel records its steps in.")
