"""How to bind and dispatch each first-party GEMM kernel in kernels/.

One row per kernel, read from the header comment of its .metal file (buffers,
compile-time constants, threadgroup size, dispatch).  ``gemmglossary run``,
``gemmglossary bench metal`` and the tests use this table, so a change in a kernel's
calling convention is made here once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import paths

GEMM_PARAMS = np.dtype([("M", "<u4"), ("N", "<u4"), ("K", "<u4"), ("lda", "<u4"),
                        ("ldb", "<u4"), ("ldc", "<u4"), ("alpha", "<f4"), ("beta", "<f4")])


def _int(defines: dict, key: str, default: int) -> int:
    try:
        return int(str(defines.get(key, default)), 0)
    except ValueError:
        raise ValueError(f"-D{key}={defines[key]!r} is not an integer") from None


@dataclass(frozen=True)
class Dispatch:
    threadgroups: tuple[int, int, int]
    threads_per_threadgroup: tuple[int, int, int]

    @property
    def threads(self) -> tuple[int, int, int]:
        return tuple(g * t for g, t in zip(self.threadgroups, self.threads_per_threadgroup))


@dataclass(frozen=True)
class GemmKernel:
    name: str  # kernel function name, and file stem in kernels/
    dispatch: Callable[[int, int, int, dict], Dispatch]
    alpha_beta: bool = False  # tiled_gemm: C = alpha*A*B + beta*C with a params struct
    defaults: dict = field(default_factory=dict)

    @property
    def path(self):
        return paths.kernels_dir() / f"{self.name}.metal"

    def buffers(self, A, B, C, alpha=1.0, beta=0.0) -> list:
        M, K = A.shape
        N = B.shape[1]
        if self.alpha_beta:
            params = np.zeros((), dtype=GEMM_PARAMS)
            params[()] = (M, N, K, K, N, N, alpha, beta)
            return [A, B, C, params]
        return [A, B, C, np.uint32(M), np.uint32(N), np.uint32(K)]


def _tiled(M, N, K, d):
    return Dispatch((math.ceil(N / 16), math.ceil(M / 16), 1), (16, 16, 1))


def _simd(M, N, K, d):
    return Dispatch((math.ceil(N / 32), math.ceil(M / 32), 1), (128, 1, 1))


def _blocked(tm_default: int, tn_default: int):
    def dispatch(M, N, K, d):
        wm, wn = _int(d, "WM", 2), _int(d, "WN", 2)
        tm, tn = _int(d, "TM", tm_default), _int(d, "TN", tn_default)
        bm, bn = wm * tm * 8, wn * tn * 8
        return Dispatch((math.ceil(N / bn), math.ceil(M / bm), 1), (wm * wn * 32, 1, 1))

    return dispatch


KERNELS: dict[str, GemmKernel] = {
    k.name: k
    for k in (
        GemmKernel("matmul_tiled", _tiled),
        GemmKernel("matmul_simd", _simd),
        GemmKernel("matmul_simd_blocked", _blocked(4, 2),
                   defaults={"WM": 2, "WN": 2, "TM": 4, "TN": 2, "BK": 16}),
        GemmKernel("tiled_gemm", _blocked(4, 4), alpha_beta=True,
                   defaults={"WM": 2, "WN": 2, "TM": 4, "TN": 4, "BK": 16}),
    )
}


@dataclass
class GemmRun:
    C: np.ndarray
    reference: np.ndarray | None
    max_error: float
    tolerance: float
    dispatch: Dispatch
    gpu_time: float | None = None

    @property
    def passed(self) -> bool:
        return bool(np.isfinite(self.max_error) and self.max_error <= self.tolerance)


def tolerance(K: int) -> float:
    """Max abs error accepted for float32 inputs uniform in [-1, 1] and reduction depth K."""
    return 2e-5 * max(1.0, math.sqrt(K))


def random_problem(M: int, N: int, K: int, seed: int = 0, beta: float = 0.0):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C0 = rng.uniform(-1, 1, (M, N)).astype(np.float32) if beta else np.zeros((M, N), np.float32)
    return A, B, C0


def run_gemm(kernel, spec: GemmKernel, M: int, N: int, K: int, *, defines: dict | None = None,
             seed: int = 0, alpha: float = 1.0, beta: float = 0.0, threads=None, threadgroups=None,
             threads_per_threadgroup=None, check: bool = True, **call_kwargs) -> GemmRun:
    """Run a loaded kernel on random inputs and compare with numpy (float64 reference).

    ``check=False`` skips the reference (timing runs); the error is then NaN.
    """
    defines = dict(defines or {})
    if not spec.alpha_beta and (alpha != 1.0 or beta != 0.0):
        raise ValueError(f"{spec.name} computes C = A*B; alpha/beta apply to tiled_gemm only")
    A, B, C0 = random_problem(M, N, K, seed, beta)
    C = C0.copy()
    d = spec.dispatch(M, N, K, defines)
    tpg = tuple(threads_per_threadgroup) if threads_per_threadgroup else d.threads_per_threadgroup
    if threads is not None:
        grid = dict(threads=tuple(threads))
    else:
        grid = dict(threadgroups=tuple(threadgroups) if threadgroups else d.threadgroups)
    result = kernel(*spec.buffers(A, B, C, alpha, beta), threads_per_threadgroup=tpg, **grid, **call_kwargs)
    if not check:
        ref, err = None, float("nan")
    else:
        ref = alpha * (A.astype(np.float64) @ B.astype(np.float64)) + beta * C0.astype(np.float64)
        err = float(np.max(np.abs(C.astype(np.float64) - ref))) if C.size else 0.0
    gpu_time = result if isinstance(result, float) else getattr(kernel, "last_gpu_time", None)
    return GemmRun(C, ref, err, tolerance(K), d, gpu_time)
