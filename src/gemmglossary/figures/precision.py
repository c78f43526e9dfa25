"""The error of a 16-bit GEMM against K, measured on the emulator.

For each (input, accumulator) pair: float32/float32 is ``kernels/matmul_simd.metal``; the
others are the instantiations of ``kernels/matmul_simd_half.metal`` (host names
``matmul_simd_half_<input>_<accumulator>``). Each multiplies a seeded 32 x K by K x 32 product
(inputs uniform in [-1, 1], drawn as float32 and rounded to the input type, as the kernel
receives them) for K = 16, 64, ..., 4096, and the error is ``max |C - exact| / max |exact|``
with ``exact`` the float64 product of the rounded inputs (``reference="rounded"``: the
kernel's own arithmetic) or of the float32 inputs as drawn (``"given"``: the rounding of the
inputs counts too). The emulator stores half and bfloat in 16 bits and rounds to nearest
even on every conversion (docs/emulator.md).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .base import Figure, FigureError, Int
from .svg import SMALL, Drawing, category

#: (input type, accumulator type), float32 first.
PAIRS = (("float32", "float32"), ("float16", "float32"), ("bfloat16", "float32"),
         ("float16", "float16"), ("bfloat16", "bfloat16"))
DEPTHS = (16, 64, 256, 1024, 4096)


def _dtype(name: str):
    from ..mlx.launch import bfloat16  # numpy's bfloat16 (ml_dtypes)

    return {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": bfloat16}[name]


def kernels() -> dict:
    """({pair: emulator kernel}, (BM, BN, THREADS) of matmul_simd_half.metal)."""
    from ..emulator import load_kernel
    from ..msl.declarations import constants
    from ..paths import kernels_dir

    half = kernels_dir() / "matmul_simd_half.metal"
    c = constants(half.read_text(encoding="utf-8")).values
    out = {pair: load_kernel(half, f"matmul_simd_half_{pair[0]}_{pair[1]}") for pair in PAIRS[1:]}
    out[PAIRS[0]] = load_kernel(kernels_dir() / "matmul_simd.metal", "matmul_simd")
    return out, (c["BM"], c["BN"], c["THREADS"])


def emulator_matmul():
    """``run(pair, A, B) -> C``: the kernel of ``pair`` on the emulator, dispatched as its
    header says (matmul_simd.metal through gemmglossary.kernels)."""
    from ..kernels import KERNELS, cdiv

    ks, (bm, bn, threads) = kernels()

    def run(pair, A, B):
        (M, K), N = A.shape, B.shape[1]
        C = np.full((M, N), np.nan, A.dtype)
        if pair == PAIRS[0]:
            d = KERNELS["matmul_simd"].dispatch(M, N, K)
            launch = dict(threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
        else:  # matmul_simd_half.metal's header: (ceil(N/BN), ceil(M/BM)) x THREADS
            launch = dict(threadgroups=(cdiv(N, bn), cdiv(M, bm), 1), threads_per_threadgroup=(threads, 1, 1))
        ks[pair](A, B, C, M, N, K, **launch)
        return C

    return run


def errors(depths=DEPTHS, seed: int = 3, pairs=PAIRS, run=None) -> dict[tuple[str, str], dict[str, list[float]]]:
    """{pair: {"given": [...], "rounded": [...]}}, one relative error per depth, for a 32 x 32 C.

    ``run(pair, A, B)`` multiplies (the emulator's kernels by default; the snippet passes
    its own, which runs on the GPU on a Mac)."""
    run = run or emulator_matmul()
    rng = np.random.default_rng(seed)
    out = {pair: {"given": [], "rounded": []} for pair in pairs}
    for K in depths:
        A32 = rng.uniform(-1, 1, (32, K)).astype(np.float32)
        B32 = rng.uniform(-1, 1, (K, 32)).astype(np.float32)
        exact = A32.astype(np.float64) @ B32.astype(np.float64)
        for pair in pairs:
            t = _dtype(pair[0])
            A, B = A32.astype(t), B32.astype(t)
            C = np.asarray(run(pair, A, B)).astype(np.float64)
            if not np.isfinite(C).all():
                raise FigureError(f"{pair[0]} inputs with a {pair[1]} accumulator gave a non-finite C at K = {K}")
            rounded = A.astype(np.float64) @ B.astype(np.float64)
            out[pair]["given"].append(float(np.abs(C - exact).max() / np.abs(exact).max()))
            out[pair]["rounded"].append(float(np.abs(C - rounded).max() / np.abs(rounded).max()))
    return out


def precision_error(*, reference: Literal["rounded", "given"] = "rounded", seed: Int(0, 2 ** 32 - 1) = 3) -> Figure:
    """Relative error against K (log-log), one line per (input, accumulator) pair."""
    err = errors(DEPTHS, seed)
    values = [v for pair in PAIRS for v in err[pair][reference] if v > 0]
    if not values:
        raise FigureError("every measured error is 0: nothing to draw on a log scale")
    lo = np.floor(np.log10(min(values)))
    hi = np.ceil(np.log10(max(values)))
    left, top, pw, ph = 70, 60, 360, 260
    d = Drawing(680, top + ph + 60)
    ref = "the inputs as rounded to 16 bits" if reference == "rounded" else "the float32 inputs as drawn"
    d.text(12, 20, f"max |error| / max |C| of a 32×32 C against K, on the emulator (exact: {ref})",
           anchor="start", bold=True)

    def sx(K):
        return left + (np.log2(K) - np.log2(DEPTHS[0])) / (np.log2(DEPTHS[-1]) - np.log2(DEPTHS[0])) * pw

    def sy(v):
        v = max(v, 10 ** lo)
        return top + (hi - np.log10(v)) / (hi - lo) * ph

    d.rect(left, top, pw, ph, "frame")
    for e in range(int(lo), int(hi) + 1):
        y = sy(10.0 ** e)
        d.line(left, y, left + pw, y, "grid")
        d.text(left - 6, y, f"1e{e}", anchor="end", size=SMALL, cls="muted")
    for K in DEPTHS:
        d.line(sx(K), top, sx(K), top + ph, "grid")
        d.text(sx(K), top + ph + 14, str(K), size=SMALL, cls="muted")
    d.text(left + pw / 2, top + ph + 34, "K (log scale)", size=SMALL, cls="muted")
    d.text(18, top + ph / 2, "relative error (log)", size=SMALL, cls="muted", rotate=-90)
    labels = []
    for i, pair in enumerate(PAIRS):
        pts = [(sx(K), sy(v)) for K, v in zip(DEPTHS, err[pair][reference])]
        d.polyline(pts, category(i) + " thick" + (" dash" if pair[1] != "float32" else ""))
        for x, y in pts:
            d.circle(x, y, 3.5, category(i) + " solid",
                     title=f"{pair[0]} in, {pair[1]} accumulator")
        labels.append((pts[-1][1], i, pair))
    # direct labels at the right, kept 16 px apart
    labels.sort()
    last_y = -1e9
    for y, i, pair in labels:
        y = max(y, last_y + 16)
        last_y = y
        d.line(left + pw + 4, y, left + pw + 18, y, category(i) + " thick", dash=pair[1] != "float32")
        d.text(left + pw + 24, y, f"{pair[0]} in, {pair[1]} acc.", anchor="start", size=SMALL)
    end = {pair: err[pair][reference][-1] for pair in PAIRS}
    start = {pair: err[pair][reference][0] for pair in PAIRS}
    alt = (f"A log-log plot of the relative error max |C − exact| / max |exact| of a 32 by 32 product against K from "
           f"{DEPTHS[0]} to {DEPTHS[-1]}, exact being the float64 product of {ref}, one line per input and "
           "accumulator type: " + "; ".join(f"{p[0]} inputs with a {p[1]} accumulator from {start[p]:.1e} to "
                                             f"{end[p]:.1e}" for p in PAIRS) + ".")
    title = "Error of 16-bit GEMMs against K"
    return Figure(d.svg(title, alt), title, alt,
                  "Computed when the site was built: `kernels/matmul_simd.metal` (float32) and the four instantiations "
                  f"of `kernels/matmul_simd_half.metal` run on the site's emulator for K = "
                  f"{', '.join(map(str, DEPTHS))} (seed {seed}), against a float64 product.")
