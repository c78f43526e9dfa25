"""The roofline: FLOP per byte against the FLOP rate a machine allows, with the site's kernels on it.

The roof is :data:`gemmglossary.traffic.MACHINE`, the two measured figures the pages use
(m5-gemm's streaming read bandwidth and its fastest float32 GEMM, on a 40-core M5 Max): a
kernel of intensity I can reach at most min(I x bandwidth, GEMM rate). Each point is a
kernel of the site at one problem size, its intensity computed by :mod:`gemmglossary.traffic`:

- the first-party GEMM kernels (``gemmglossary.kernels.KERNELS``), each with the tile its
  file declares (``BM x BN``, or ``TILE x TILE``), by :func:`traffic.tiled_gemm`: every
  threadgroup reads its panels of A and B from device memory, with no cache;
- the same product moving the fewest bytes (:func:`traffic.gemm`), the ceiling of reuse;
- ``gemv.metal`` (:func:`traffic.gemv`) and ``qmv4.metal`` (:func:`traffic.qmv`, with its
  file's ``GROUP_SIZE``), float32 like the kernels.

No kernel is timed: a point's height is what the roof allows at its intensity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import traffic
from ..kernels import KERNELS, MATVEC_KERNELS
from .base import Figure, Int
from .svg import SMALL, Drawing, category


@dataclass(frozen=True)
class Point:
    label: str
    traffic: traffic.Traffic

    @property
    def intensity(self) -> float:
        return self.traffic.flop_per_byte

    @property
    def attainable(self) -> float:
        return self.traffic.flop_rate_at(traffic.MACHINE)


def tile_of(name: str) -> tuple[int, int]:
    """The C tile a first-party GEMM kernel's threadgroup owns, from its file's constants."""
    spec = KERNELS[name]
    c = spec.constants()
    rows, cols = spec.tile
    return c[rows], c[cols]


def points(n: int) -> list[Point]:
    """The site's kernels on an n x n (x n) problem, float32."""
    out = []
    for name in KERNELS:
        bm, bn = tile_of(name)
        out.append(Point(f"{name}.metal ({bm}×{bn})", traffic.tiled_gemm(n, n, n, bm, bn, "float32")))
    out.append(Point("GEMM, fewest bytes", traffic.gemm(n, n, n, "float32")))
    out.append(Point("gemv.metal", traffic.gemv(n, n, "float32")))
    group = MATVEC_KERNELS["qmv4"].constants()["GROUP_SIZE"]
    out.append(Point("qmv4.metal (4-bit)", traffic.qmv(n, n, bits=4, group_size=group, dtype="float32")))
    return out


def roofline(*, n: Int(256, 16384) = 4096) -> Figure:
    """The roof of traffic.MACHINE and the site's kernels at n x n x n (GEMMs) and n x n (GEMV)."""
    machine = traffic.MACHINE
    pts = points(n)
    x_lo, x_hi = -1.0, 4.0            # log10 FLOP/byte: 0.1 .. 10,000
    y_lo = math.log10(machine.read_bytes_per_s * 10 ** x_lo)
    y_hi = math.log10(machine.gemm_flop_per_s) + 0.3
    left, top, width, height = 70, 20, 560, 300
    columns = 2
    legend_rows = -(-len(pts) // columns)
    legend_top = top + height + 52
    d = Drawing(left + width + 20, legend_top + legend_rows * 20 + 6)

    def X(v: float) -> float:
        return left + (math.log10(v) - x_lo) / (x_hi - x_lo) * width

    def Y(v: float) -> float:
        return top + height - (math.log10(v) - y_lo) / (y_hi - y_lo) * height

    d.rect(left, top, width, height, "frame")
    for e in range(int(x_lo), int(x_hi) + 1):
        d.line(X(10 ** e), top + height, X(10 ** e), top + height + 4)
        d.text(X(10 ** e), top + height + 14, f"{10 ** e:g}", size=SMALL, cls="muted")
    for e in range(math.ceil(y_lo), math.floor(y_hi) + 1):
        d.line(left - 4, Y(10 ** e), left, Y(10 ** e))
        label = f"{10 ** (e - 12):g} T" if e >= 12 else f"{10 ** (e - 9):g} G"
        d.text(left - 6, Y(10 ** e), label, size=SMALL, anchor="end", cls="muted")
    d.text(left + width / 2, top + height + 30, "arithmetic intensity (FLOP per byte of device memory; "
           "each kernel's below)", size=SMALL)
    d.text(16, top + height / 2, "attainable FLOP/s", size=SMALL, rotate=-90)

    ridge = machine.ridge
    roof = [(X(10 ** x_lo), Y(machine.read_bytes_per_s * 10 ** x_lo)), (X(ridge), Y(machine.gemm_flop_per_s)),
            (X(10 ** x_hi), Y(machine.gemm_flop_per_s))]
    d.polyline(roof, "thick")
    d.line(X(ridge), Y(machine.gemm_flop_per_s), X(ridge), top + height, "muted", dash=True)
    d.text(X(ridge) + 4, top + height - 10, f"ridge {ridge:.0f}", size=SMALL, anchor="start", cls="muted")
    d.text(X(10 ** x_hi) - 4, Y(machine.gemm_flop_per_s) - 10,
           f"{machine.gemm_flop_per_s / 1e12:g} TFLOP/s (measured GEMM)", size=SMALL, anchor="end")
    d.text(X(0.3), Y(machine.read_bytes_per_s * 0.3) - 14, f"{machine.read_bytes_per_s / 1e9:g} GB/s",
           size=SMALL, anchor="start", rotate=-math.degrees(math.atan2(Y(1) - Y(10), X(10) - X(1))))

    for i, p in enumerate(pts):
        cls = f"{category(i)} solid"
        d.circle(X(p.intensity), Y(p.attainable), 5, cls, title=f"{p.label}: {p.intensity:.3g} FLOP/byte")
        lx = left + (i // legend_rows) * (width * 0.55)
        y = legend_top + (i % legend_rows) * 20
        d.circle(lx + 6, y, 5, cls)
        d.text(lx + 16, y, f"{p.label}: {p.intensity:.3g}", size=SMALL, anchor="start")
    alt = (f"A log-log roofline of the {machine.name}: attainable rate rises with intensity at "
           f"{machine.read_bytes_per_s / 1e9:g} GB/s up to the ridge at {ridge:.0f} FLOP per byte, then stays at "
           f"{machine.gemm_flop_per_s / 1e12:g} TFLOP/s. Kernels at n = {n}: "
           + "; ".join(f"{p.label} at {p.intensity:.3g} FLOP per byte" for p in pts) + ".")
    source = (f"The roof: `traffic.MACHINE` ({machine.name}, measured by m5-gemm); each kernel's FLOP per byte: "
              f"`gemmglossary.traffic` at n = {n}, float32, with the tile read from the kernel file.")
    return Figure(d.svg("Roofline with the site's kernels", alt), "Roofline with the site's kernels", alt, source)
