"""Simdgroups of one threadgroup through the barriers of its K loop, from a traced run.

One row per simdgroup, the unit a GPU schedules; the x axis is the trace's step, the order
in which the emulator ran the threadgroup's events under the given schedule. A simdgroup
is drawn

- running, from the first of its lanes leaving a barrier (or starting) to the last of
  them arriving at the next one (its colour);
- waiting at a barrier, from its last lane's arrival to the barrier's release (grey);
- released but not yet run again, from the release to its first lane's departure (light);

and a vertical line marks each release. The default schedule, simdgroup-major, runs the
lowest-numbered ready thread first, so simdgroup 0 gets ahead and waits longest: the
order of events is the emulator's choice (the specification promises none), and a step is
not a unit of time.
"""

from __future__ import annotations

from typing import Literal

from .base import Figure, FigureError, Int
from .kernel_facts import FIRST_PARTY, constants, first_party
from .runs import traced_gemm
from .svg import SMALL, Drawing, category

WIDTH = 680


def intervals(events, threads: int):
    """Per simdgroup: [(kind, first step, stop step)] with kind 'run', 'wait' or 'released',
    covering its steps from its first start to its last end; and the (step, line) of every
    barrier release.

    A simdgroup runs at the steps where one of its lanes runs (from a start or a departure
    to its next arrival or its end); it waits at a barrier from its last lane's arrival to
    the release; at any other step it is waiting its turn (the emulator runs another thread).
    """
    import numpy as np

    sgs = (threads + 31) // 32
    last = max(e.step for e in events) + 1
    running = np.zeros((sgs, last + 1), bool)
    waiting = np.zeros((sgs, last + 1), bool)
    active_from: dict[int, int] = {}
    arrived: dict[int, int] = {}
    first = [last] * sgs
    final = [0] * sgs
    releases = []
    for e in events:
        t, sg = e.thread, e.simdgroup
        if e.kind in ("start", "barrier-depart", "simd-depart"):
            active_from[t] = e.step
            if e.kind == "start":
                first[sg] = min(first[sg], e.step)
        elif e.kind in ("barrier-arrive", "simd-arrive", "end"):
            running[sg, active_from.pop(t, e.step):e.step + 1] = True
            if e.kind == "barrier-arrive":
                arrived[t] = e.step
            if e.kind == "end":
                final[sg] = max(final[sg], e.step + 1)
        elif e.kind == "barrier-release":
            releases.append((e.step, e.line))
            for s in range(sgs):
                lanes = [arrived[u] for u in range(32 * s, min(threads, 32 * s + 32)) if u in arrived]
                if lanes:
                    waiting[s, max(lanes):e.step + 1] = True
            arrived.clear()
    per = {}
    for s in range(sgs):
        spans, kind0, start = [], None, first[s]
        for step in range(first[s], final[s] + 1):
            kind = None if step == final[s] else ("run" if running[s, step] else "wait" if waiting[s, step]
                                                  else "released")
            if kind != kind0:
                if kind0 is not None:
                    spans.append((kind0, start, step))
                kind0, start = kind, step
        per[s] = spans
    return per, releases


def k_step_timeline(*, kernel: FIRST_PARTY = "tiled_gemm", steps: Int(1, 4) = 2, seed: Int(0, 2 ** 32 - 1) = 1,
                    schedule: Literal["random", "lockstep", "simdgroup-major"] = "simdgroup-major") -> Figure:
    """Threads of threadgroup (0, 0) through ``steps`` K steps (schedule: random with
    ``seed``, lockstep or simdgroup-major)."""
    spec = first_party(kernel)
    names = ("TILE",) if kernel == "matmul_tiled" else ("BM", "BN", "BK", "THREADS")
    c = constants(spec, names)
    bm, bn, bk = (c["TILE"],) * 3 if kernel == "matmul_tiled" else (c["BM"], c["BN"], c["BK"])
    sched = ("random", seed) if schedule == "random" else schedule
    run = traced_gemm(spec, bm, bn, bk * steps, schedule=sched, snapshots=False)
    events = run.trace.threadgroup((0, 0))
    threads = 1 + max(e.thread for e in events)
    per, releases = intervals(events, threads)
    if not releases:
        raise FigureError(f"{kernel}: threadgroup (0, 0) released no barrier")
    last = events[-1].step
    sgs = (threads + 31) // 32
    left, top, plot_w = 96, 104, WIDTH - 96 - 16
    row, gap = 30, 12
    height = sgs * row + (sgs - 1) * gap
    d = Drawing(WIDTH, top + height + 92)
    d.text(12, 20, f"{spec.path.name}: the simdgroups of threadgroup (0, 0) through {steps} K step"
           f"{'s' if steps > 1 else ''}", anchor="start", bold=True)
    legend = [(category(0) + " strong", "running"), ("wait", "waiting at the barrier"),
              (category(0), "released, waiting its turn")]
    x = 12
    for cls, label in legend:
        d.bars([(x, 38, 16, 14)], cls)
        d.text(x + 22, 45, label, anchor="start", size=SMALL)
        x += 44 + len(label) * 6.6

    def sx(step: float) -> float:
        return left + step / max(last, 1) * plot_w

    by_class: dict[str, list] = {}
    for sg, spans in per.items():
        y = top + sg * (row + gap)
        for kind, s0, s1 in spans:
            cls = {"wait": "wait", "run": category(sg) + " strong", "released": category(sg)}[kind]
            by_class.setdefault(cls, []).append((sx(s0), y, max(sx(s1) - sx(s0), 1.0), row))
    for cls, rects in sorted(by_class.items()):
        d.bars(rects, cls)
    for sg in range(sgs):
        d.text(left - 8, top + sg * (row + gap) + row / 2, f"simdgroup {sg}", anchor="end", size=SMALL)
    lines = sorted({ln for _, ln in releases})
    names_of = {ln: f"B{k + 1}" if len(lines) > 1 else "B" for k, ln in enumerate(lines)}
    for k, (step, ln) in enumerate(releases):
        x = sx(step)
        d.line(x, top - 6, x, top + height + 4, "fg")
        d.text(x, top - 16 - 14 * (k % 2), f"{names_of[ln]} :{ln}", size=SMALL)
    d.line(left, top + height + 10, left + plot_w, top + height + 10, "muted")
    for frac in (0, 0.25, 0.5, 0.75, 1):
        d.text(left + frac * plot_w, top + height + 24, str(round(frac * last)), size=SMALL, cls="muted")
    d.text(left + plot_w / 2, top + height + 44, "emulator event order, not time: which event the emulator ran next",
           size=SMALL, cls="muted")
    sched_text = f"schedule ('random', {seed})" if schedule == "random" else f"schedule '{schedule}'"
    d.text(left + plot_w / 2, top + height + 62, f"{threads} threads in {sgs} simdgroups; {sched_text}; B: barriers "
           f"by line of kernels/{spec.path.name}", size=SMALL, cls="muted")
    waits = []
    for step, ln in releases:
        reached = sorted((min((s0 for kind, s0, s1 in spans if kind == "wait" and s1 > step - 1 and s0 <= step),
                              default=step), sg) for sg, spans in per.items())
        waits.append(f"{names_of[ln]} (line {ln}) releases at step {step}; simdgroup {reached[0][1]} "
                     f"waited longest, simdgroup {reached[-1][1]} arrived last")
    alt = (f"A timeline of the {sgs} simdgroups of threadgroup (0, 0) of {spec.path.name}, one row each, over the "
           f"{last + 1} events of the emulator's run of {steps} K steps, in the order it ran them (the x axis is that order, "
           "not time). Each simdgroup runs, reaches a barrier, waits "
           "in grey until the last simdgroup arrives and the barrier releases, then runs again when its turn comes. "
           + "; ".join(waits) + ".")
    return Figure(d.svg(f"Barrier timeline of {spec.path.name}", alt), f"Barrier timeline of {spec.path.name}", alt,
                  f"Computed when the site was built: `kernels/{spec.path.name}` (M = {bm}, N = {bn}, K = {bk * steps}) "
                  f"run on the site's emulator under {sched_text}, traced; the x axis orders its events and measures no "
                  "time (docs/emulator.md, \"Tracing a run\").")
