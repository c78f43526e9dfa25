"""The decode-path rows of ``gemmglossary bench emulator``: MLX's qmv and gemv, and llama.cpp's
q4_0 mul_mv, at 4096 × 4096.

A language model's decode step multiplies each weight matrix by one vector: MLX runs
``qmv_fast`` for 4-bit weights and ``gemv`` for dense ones; llama.cpp runs
``kernel_mul_mv_q4_0_f32`` for its q4_0 blocks (``llama_q4_0``: the same matrix and vector as
the qmv row, quantized to q4_0 instead). All are timed on the emulator
(MLX's kernels dispatched by :mod:`gemmglossary.mlx.quantized` and :mod:`gemmglossary.mlx.gemv`,
llama.cpp's by :mod:`gemmglossary.llama.mul_mat`),
beside numpy's time for the same product in float32 (numpy has no 4-bit kernels: its qmv
row multiplies by the dequantized matrix, the same arithmetic). Each result is checked against
a float64 reference.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

#: Matrix-vector products the benchmark knows.
PRODUCTS = ("qmv", "llama_q4_0", "gemv")
SIZE = 4096


@dataclass
class MatVec:
    label: str
    plan: object  # gemmglossary.mlx.launch.Plan
    numpy_product: Callable[[], np.ndarray]
    reference: np.ndarray
    tolerance: float


def build(name: str, n: int = SIZE) -> MatVec:
    from ..mlx import affine, gemv, quantized

    rng = np.random.default_rng(n)
    if name in ("qmv", "llama_q4_0"):  # one matrix and one vector for both 4-bit rows
        dense = rng.standard_normal((n, n)).astype(np.float32) * 0.05
        x = rng.uniform(-1, 1, (1, n)).astype(np.float32)
    if name == "llama_q4_0":
        from ..llama import blocks, mul_mat
        from ..llama.launch import Tensor

        wq = Tensor.quantized(blocks.quantize(dense, "q4_0"), "q4_0", n)
        dense = wq.values()
        return MatVec(f"llama.cpp q4_0 {n}×{n}", mul_mat.plan(wq, Tensor.of(x)), lambda: x @ dense.T,
                      x.astype(np.float64) @ dense.T.astype(np.float64), 1e-3)
    if name == "qmv":
        w = affine.quantize(dense, group_size=64, bits=4)
        dense = affine.dequantize(w, np.float32)
        # float32 holds scale·q + bias exactly enough here (|error| < 1e-7 of a 1e-3 tolerance)
        return MatVec(f"qmv 4-bit {n}×{n}", quantized.plan(x, w), lambda: x @ dense.T,
                      x.astype(np.float64) @ dense.T.astype(np.float64), 1e-3)
    if name == "gemv":
        w = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        x = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
        return MatVec(f"gemv {n}×{n}", gemv.plan(w, x), lambda: w @ x, w.astype(np.float64) @ x, 1e-3)
    raise ValueError(f"unknown product {name!r}; known: {', '.join(PRODUCTS)}")


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench(names=PRODUCTS, repeats: int = 3, race_check: bool = True, n: int = SIZE) -> list[tuple]:
    """(label, kernel, emulated seconds, numpy seconds, result correct) per product, best of
    ``repeats``; a product the emulator cannot run gives (label, kernel, None, the error, False)."""
    from ..emulator import EmulatorError

    rows = []
    for name in names:
        case = build(name, n)
        (launch,) = case.plan.launches
        try:
            kernel = launch.kernel()  # compiled (or fetched) once, outside the timing
            launch.run(kernel, race_check=race_check)
        except EmulatorError as exc:
            rows.append((case.label, launch.host_name, None, str(exc).splitlines()[0], False))
            continue
        ok = bool(np.allclose(case.plan.out, case.reference, rtol=case.tolerance, atol=case.tolerance))
        t_np = t_emu = float("inf")
        for _ in range(repeats):
            t_np = min(t_np, _best(case.numpy_product, 20))
            time.sleep(0.2)  # let numpy's BLAS threads go idle before the emulator runs
            t_emu = min(t_emu, _best(lambda: launch.run(kernel, race_check=race_check), 1))
        rows.append((case.label, launch.host_name, t_emu, t_np, ok))
    return rows
