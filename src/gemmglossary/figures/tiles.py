"""Drawing a threadgroup tile whose elements are labelled by the thread that wrote them.

Shared by the cooperative-load, thread-count and register-blocks figures: the writers come
from a trace snapshot (the race checker's record of who last wrote each element)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .svg import SMALL, Drawing, category, text_width

MAX_ROWS = 32  # a taller tile is drawn in side-by-side chunks of rows


@dataclass(frozen=True)
class Run:
    row: int
    start: int
    stop: int     # one past the last column
    thread: int   # -1: never written
    index: int    # how many runs this thread wrote before (row-major): its pass


def runs(writers: np.ndarray) -> list[Run]:
    """Consecutive elements of a row with one writer, in row-major order."""
    out, seen = [], {}
    for r, row in enumerate(writers):
        c = 0
        while c < len(row):
            t = int(row[c])
            e = c + 1
            while e < len(row) and row[e] == t:
                e += 1
            out.append(Run(r, c, e, t, seen.get(t, 0)))
            seen[t] = seen.get(t, 0) + 1
            c = e
    return out


def chunks(rows: int) -> list[tuple[int, int]]:
    """(first row, stop row) of the pieces a tile of ``rows`` rows is drawn in, side by side."""
    n = -(-rows // MAX_ROWS)
    size = -(-rows // n)
    return [(r, min(rows, r + size)) for r in range(0, rows, size)]


def pass_starts(all_runs: list[Run]) -> dict[int, int]:
    """{row: pass} for each row where a new pass of the threads begins (its first run is
    a thread's (k+1)-th run, the previous row's are not)."""
    first: dict[int, int] = {}
    for rn in all_runs:
        if rn.thread >= 0 and rn.row not in first:
            first[rn.row] = rn.index
    return {r: p for r, p in first.items() if r > 0 and p != first.get(r - 1, p)}


def draw_tile(d: Drawing, x: float, y: float, writers: np.ndarray, width: float, *, label_threads: bool = True,
              row_height: float | None = None) -> float:
    """Draw ``writers`` (rows x cols of thread indices, -1 unwritten) at (x, y), in chunks
    fitting ``width``; elements coloured by simdgroup, runs labelled with their thread.
    Returns the height used."""
    all_runs = runs(writers)
    rows, cols = writers.shape
    pieces = chunks(rows)
    starts = pass_starts(all_runs)
    gap = 28
    margin = 52  # room for the "pass n" labels on the right
    ew = (width - margin - gap * (len(pieces) - 1) - 30 * len(pieces)) / (cols * len(pieces))
    min_run = min(rn.stop - rn.start for rn in all_runs)
    labels = label_threads and min_run * ew >= text_width("000", SMALL) + 4
    rh = row_height or (16 if labels else max(6.0, min(12.0, ew * 2)))
    tallest = max(stop - start for start, stop in pieces)
    titles = len(all_runs) <= 128  # hover text per run, where it does not bloat the page
    for k, (start, stop) in enumerate(pieces):
        px = x + 30 + k * (cols * ew + 30 + gap)
        if len(pieces) > 1:
            first_pass = next((rn.index for rn in all_runs if rn.row == start and rn.thread >= 0), None)
            head = f"rows {start}–{stop - 1}" + (f", pass {first_pass + 1}" if starts and first_pass is not None else "")
            d.text(px + cols * ew / 2, y + 8, head, size=SMALL, cls="muted")
        top = y + 22
        for rn in all_runs:
            if not start <= rn.row < stop:
                continue
            rx, ry = px + rn.start * ew, top + (rn.row - start) * rh
            w = (rn.stop - rn.start) * ew
            if rn.thread < 0:
                d.rect(rx, ry, w, rh, "frame",
                       title=f"row {rn.row}, columns {rn.start}–{rn.stop - 1}: never written" if titles else None)
                continue
            d.rect(rx, ry, w, rh, category(rn.thread // 32) + " edge",
                   title=f"row {rn.row}, columns {rn.start}–{rn.stop - 1}: thread {rn.thread} "
                         f"(simdgroup {rn.thread // 32}), pass {rn.index + 1}" if titles else None)
            if labels:
                d.text(rx + w / 2, ry + rh / 2, str(rn.thread), size=SMALL)
        every = 4 if stop - start > 8 or rh < 14 else 1
        for r in range(start, stop, every):
            d.text(px - 6, top + (r - start + 0.5) * rh, str(r), size=SMALL, anchor="end", cls="muted")
        for r, p in starts.items():
            if start < r < stop or (r == start and k):
                yy = top + (r - start) * rh
                d.line(px - 2, yy, px + cols * ew + 2, yy, "thick")
                if start < r:
                    d.text(px + cols * ew + 6, yy, f"pass {p + 1}", size=SMALL, anchor="start")
        d.rect(px, top, cols * ew, (stop - start) * rh, "outline")
    return 22 + tallest * rh


def simdgroup_legend(d: Drawing, x: float, y: float, simdgroups: int, extra: str | None = None) -> None:
    for s in range(simdgroups):
        d.rect(x + s * 110, y - 8, 16, 16, category(s))
        d.text(x + s * 110 + 22, y, f"simdgroup {s}", size=SMALL, anchor="start")
    if extra:
        xx = x + simdgroups * 110
        d.rect(xx, y - 8, 16, 16, "frame")
        d.text(xx + 22, y, extra, size=SMALL, anchor="start")
