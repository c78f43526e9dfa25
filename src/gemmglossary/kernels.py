"""How to bind and dispatch each first-party kernel in kernels/: the GEMMs, and the
matrix-vector kernels of the decode path.

What a kernel file states about itself is read from the file (:mod:`gemmglossary.msl`):

- its buffers, their order and their types, from the kernel's signature;
- the layout of a parameter struct (``constant GemmParams& p``), from the struct's
  declaration, as a numpy dtype;
- the defaults of its ``-D`` constants, from its ``#ifndef``/``#define`` lines, and the
  values of its ``constexpr`` constants (tile sizes, thread counts) for given ``-D``\\s;
- its ``max_total_threads_per_threadgroup``, from the kernel attribute.

Only what the file says in prose, in the ``Dispatch:`` line of its header comment, is
written here: which constants size the tile of C one threadgroup owns, and the
threadgroup. ``tests/test_kernels.py`` checks those lines against this table.

``gemmglossary run``, the benchmarks, the tests and the snippets use this table, so a
change in a kernel's calling convention is made in the kernel file, once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import paths
from .msl import declarations
from .msl.expressions import evaluate
from .msl.signature import SCALAR_TYPES, KernelSignature, Parameter, find_kernel
from .tiles import cdiv


@dataclass(frozen=True)
class Dispatch:
    threadgroups: tuple[int, int, int]
    threads_per_threadgroup: tuple[int, int, int]

    @property
    def threads(self) -> tuple[int, int, int]:
        """The same grid counted in threads (``dispatchThreads``, MLX's ``grid``)."""
        return tuple(g * t for g, t in zip(self.threadgroups, self.threads_per_threadgroup))


@lru_cache(maxsize=32)
def _read(path: str, mtime_ns: int, size: int) -> str:
    return Path(path).read_text(encoding="utf-8")


# What is read from a kernel file is read once per text of the file: the runtime, the
# benchmarks and the snippets ask a description for its signature, constants and struct
# on every launch, and tokenizing the file each time cost more than the launch itself.
@lru_cache(maxsize=64)
def _signature(source: str, name: str, filename: str) -> KernelSignature | None:
    return find_kernel(source, name, filename)


@lru_cache(maxsize=128)
def _constants(source: str, defines: tuple) -> declarations.Constants:
    return declarations.constants(source, dict(defines))


@lru_cache(maxsize=64)
def _struct_dtype(source: str, type_name: str, filename: str) -> np.dtype:
    return declarations.struct_dtype(source, type_name, filename)


class BindError(ValueError):
    """A kernel parameter this table does not know how to fill."""


@dataclass(frozen=True)
class KernelFile:
    """A first-party kernel: its function name, which is also its file stem in kernels/."""

    name: str

    @property
    def path(self) -> Path:
        return paths.kernels_dir() / f"{self.name}.metal"

    def source(self) -> str:
        st = self.path.stat()
        return _read(str(self.path), st.st_mtime_ns, st.st_size)

    def signature(self) -> KernelSignature:
        sig = _signature(self.source(), self.name, str(self.path))
        if sig is None:
            raise BindError(f"{self.path}: declares no kernel named {self.name!r}")
        return sig

    def defaults(self) -> dict[str, int]:
        """The ``-D`` constants the kernel accepts, with their default values."""
        defaults = declarations.macro_defaults(self.source())
        values = self.constants()
        return {name: values[name] for name in defaults}

    def constants(self, defines: dict | None = None) -> declarations.Constants:
        """Every integer constant of the kernel file, built with ``defines``."""
        try:
            key = tuple(sorted((defines or {}).items(), key=lambda kv: str(kv[0])))
            cached = _constants(self.source(), key)
        except TypeError:  # a define whose value cannot be a cache key
            return declarations.constants(self.source(), defines)
        # a copy: callers own what they are given
        return declarations.Constants(dict(cached.values), dict(cached.unknown))

    def max_total_threads(self, defines: dict | None = None) -> int | None:
        """The kernel's ``max_total_threads_per_threadgroup`` bound, if it declares one."""
        expr = self.signature().attribute("max_total_threads_per_threadgroup")
        return None if expr is None else evaluate(expr, self.constants(defines).values)


@dataclass(frozen=True)
class GemmKernel(KernelFile):
    """A first-party GEMM kernel: C (M x N) from A (M x K) and B (K x N), row-major float."""

    tile: tuple[str, str]  # the constants giving the rows and columns of C per threadgroup
    threadgroup: tuple[str | int, str | int, str | int]  # threads per threadgroup (constants or numbers)

    def struct_parameter(self) -> Parameter | None:
        return next((p for p in self.signature().buffers if p.value_type not in SCALAR_TYPES
                     and not p.is_pointer), None)

    @property
    def params_dtype(self) -> np.dtype | None:
        """numpy dtype of the kernel's parameter struct (None when it takes scalars)."""
        p = self.struct_parameter()
        if p is None:
            return None
        return _struct_dtype(self.source(), p.value_type, str(self.path))

    @property
    def alpha_beta(self) -> bool:
        """Whether the kernel computes C = alpha*A*B + beta*C (its struct has both)."""
        dt = self.params_dtype
        return dt is not None and {"alpha", "beta"} <= set(dt.names)

    def dispatch(self, M: int, N: int, K: int, defines: dict | None = None) -> Dispatch:
        """Threadgroups and threadgroup size for a C of M x N, as the header comment says."""
        c = self.constants(defines)
        rows, cols = (c[name] for name in self.tile)
        tpg = tuple(c[t] if isinstance(t, str) else int(t) for t in self.threadgroup)
        return Dispatch((cdiv(N, cols), cdiv(M, rows), 1), tpg)

    def params(self, M: int, N: int, K: int, *, lda: int | None = None, ldb: int | None = None,
               ldc: int | None = None, alpha: float = 1.0, beta: float = 0.0) -> np.ndarray:
        """The parameter struct (a 0-d numpy structured array); row strides default to
        dense matrices (lda = K, ldb = ldc = N)."""
        dt = self.params_dtype
        if dt is None:
            raise BindError(f"{self.name} takes no parameter struct")
        values = dict(M=M, N=N, K=K, lda=K if lda is None else lda, ldb=N if ldb is None else ldb,
                      ldc=N if ldc is None else ldc, alpha=alpha, beta=beta)
        unknown = [f for f in dt.names if f not in values]
        if unknown:
            raise BindError(f"{self.path}: struct field(s) {', '.join(unknown)} of "
                            f"{self.struct_parameter().value_type}: no value for them")
        out = np.zeros((), dt)
        for field in dt.names:
            out[field] = values[field]
        return out

    def arguments(self, A: np.ndarray, B: np.ndarray, C: np.ndarray, *, M: int | None = None,
                  N: int | None = None, K: int | None = None, alpha: float = 1.0,
                  beta: float = 0.0) -> list:
        """The buffers in the kernel's order. M and K default to A's shape and N to B's;
        row strides are the arrays' row lengths, so with explicit M, N, K the arrays may
        be wider (a block of larger matrices, as BLAS passes it)."""
        M = A.shape[0] if M is None else M
        K = A.shape[1] if K is None else K
        N = B.shape[1] if N is None else N
        if not self.alpha_beta and (alpha != 1.0 or beta != 0.0):
            raise BindError(f"{self.name} computes C = A*B; alpha and beta apply to kernels with "
                            "alpha and beta parameters")
        arrays, scalars = {"A": A, "B": B, "C": C}, {"M": M, "N": N, "K": K}
        struct = self.struct_parameter()
        out = []
        for p in self.signature().buffers:
            if p.name in arrays and p.is_pointer:
                out.append(arrays[p.name])
            elif p.name in scalars and p.value_type in SCALAR_TYPES:
                out.append(np.dtype(SCALAR_TYPES[p.value_type]).type(scalars[p.name]))
            elif p == struct:
                out.append(self.params(M, N, K, lda=A.shape[1], ldb=B.shape[1], ldc=C.shape[1],
                                       alpha=alpha, beta=beta))
            else:
                raise BindError(f"{p.file}:{p.line}: cannot bind parameter '{p.type} {p.name}' "
                                f"of {self.name} (expected A, B, C, M, N, K or a parameter struct)")
        return out


KERNELS: dict[str, GemmKernel] = {
    k.name: k
    for k in (
        GemmKernel("matmul_tiled", tile=("TILE", "TILE"), threadgroup=("TILE", "TILE", 1)),
        GemmKernel("matmul_simd", tile=("BM", "BN"), threadgroup=("THREADS", 1, 1)),
        GemmKernel("matmul_simd_blocked", tile=("BM", "BN"), threadgroup=("THREADS", 1, 1)),
        GemmKernel("tiled_gemm", tile=("BM", "BN"), threadgroup=("THREADS", 1, 1)),
        GemmKernel("tiled_gemm_db", tile=("BM", "BN"), threadgroup=("THREADS", 1, 1)),
    )
}


@dataclass(frozen=True)
class MatvecKernel(KernelFile):
    """A first-party matrix-vector kernel: one output element per matrix row, a
    one-dimensional grid of threadgroups, each owning ``rows`` consecutive outputs."""

    rows: str  # the constant giving the outputs (matrix rows) per threadgroup
    threadgroup: str  # the constant giving the threads per threadgroup (x; y = z = 1)

    def dispatch(self, outputs: int, defines: dict | None = None) -> Dispatch:
        """Threadgroups and threadgroup size for ``outputs`` rows, as the header comment says."""
        c = self.constants(defines)
        return Dispatch((cdiv(outputs, c[self.rows]), 1, 1), (c[self.threadgroup], 1, 1))

    def arguments(self, **values) -> list:
        """The buffers in the kernel's order, by parameter name: arrays for pointers,
        numbers for ``constant T&`` scalars (converted to the declared type)."""
        out = []
        for p in self.signature().buffers:
            if p.name not in values:
                raise BindError(f"{p.file}:{p.line}: no value for parameter '{p.type} {p.name}' of "
                                f"{self.name} (given: {', '.join(values) or 'nothing'})")
            value = values[p.name]
            if not p.is_pointer and p.value_type in SCALAR_TYPES:
                value = np.dtype(SCALAR_TYPES[p.value_type]).type(value)
            out.append(value)
        unknown = set(values) - {p.name for p in self.signature().buffers}
        if unknown:
            raise BindError(f"{self.name} has no parameter(s) {', '.join(sorted(unknown))}")
        return out


#: The matrix-vector kernels of the decode path (gemv.metal, qmv4.metal).
MATVEC_KERNELS: dict[str, MatvecKernel] = {
    k.name: k
    for k in (
        MatvecKernel("gemv", rows="ROWS_PER_THREADGROUP", threadgroup="THREADS"),
        MatvecKernel("qmv4", rows="ROWS_PER_THREADGROUP", threadgroup="THREADS"),
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
    A, B, C0 = random_problem(M, N, K, seed, beta)
    C = C0.copy()
    arguments = spec.arguments(A, B, C, alpha=alpha, beta=beta)
    d = spec.dispatch(M, N, K, defines)
    tpg = tuple(threads_per_threadgroup) if threads_per_threadgroup else d.threads_per_threadgroup
    if threads is not None:
        grid = dict(threads=tuple(threads))
    else:
        grid = dict(threadgroups=tuple(threadgroups) if threadgroups else d.threadgroups)
    result = kernel(*arguments, threads_per_threadgroup=tpg, **grid, **call_kwargs)
    if not check:
        ref, err = None, float("nan")
    else:
        ref = alpha * (A.astype(np.float64) @ B.astype(np.float64)) + beta * C0.astype(np.float64)
        err = float(np.max(np.abs(C.astype(np.float64) - ref))) if C.size else 0.0
    gpu_time = result if isinstance(result, float) else getattr(kernel, "last_gpu_time", None)
    return GemmRun(C, ref, err, tolerance(K), d, gpu_time)
