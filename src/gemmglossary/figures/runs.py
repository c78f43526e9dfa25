"""The emulator runs figures are drawn from: a first-party GEMM kernel launched as its
header comment says (gemmglossary.kernels), with inputs chosen so the run shows something,
traced (emulator/trace.py) and checked against numpy before anything is drawn."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..emulator import Trace, Tracing, load_kernel
from ..kernels import GemmKernel
from .base import FigureError
from .kernel_facts import constants

#: The first-party kernels name their threadgroup tiles after the operand and lay them
#: out row-major: these constants give their shapes (a 2-D array keeps its own).
TILE_SHAPES = {"tileA": ("BM", "BK"), "tileB": ("BK", "BN"), "tileC": ("BM", "BN")}


@dataclass
class GemmRun:
    trace: Trace
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    warnings: list[str]


def traced_gemm(spec: GemmKernel, M: int, N: int, K: int, *, defines: dict | None = None,
                threadgroups=((0, 0),), snapshots: bool = True, schedule="lockstep",
                threads_per_threadgroup=None, check: bool = True, seed: int = 0, A=None, B=None) -> GemmRun:
    """Run ``spec`` on ``A`` and ``B`` (random by default) with a trace of ``threadgroups``;
    the product is compared with numpy unless ``check`` is False (a launch made wrong on
    purpose)."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32) if A is None else A
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32) if B is None else B
    C = np.zeros((M, N), np.float32)
    kernel = load_kernel(spec.path, spec.name, defines=defines)
    d = spec.dispatch(M, N, K, defines)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = kernel(*spec.arguments(A, B, C), threadgroups=d.threadgroups,
                       threads_per_threadgroup=threads_per_threadgroup or d.threads_per_threadgroup,
                       schedule=schedule, trace=Tracing(threadgroups=threadgroups, snapshots=snapshots))
    if not trace.complete:
        raise FigureError(f"the trace of {spec.name} is incomplete ({trace.dropped_events} events dropped)")
    if check:
        err = float(np.abs(C - A.astype(np.float64) @ B.astype(np.float64)).max()) if C.size else 0.0
        scale = max(1.0, float(np.abs(A).max()) * float(np.abs(B).max())) if A.size and B.size else 1.0
        if not err <= 1e-4 * max(1, K) * scale:
            raise FigureError(f"{spec.name} on the emulator does not compute A·B (max error {err:.3g}); "
                              "no figure is drawn from a wrong run")
    return GemmRun(trace, A, B, C, [str(w.message) for w in caught])


def tile(spec: GemmKernel, region, defines: dict | None = None) -> tuple[int, int]:
    """(rows, columns) of a threadgroup tile of a first-party kernel."""
    if len(region.shape) == 2:
        return region.shape
    if region.name not in TILE_SHAPES:
        raise FigureError(f"kernels/{spec.path.name}: threadgroup array {region.name!r} is not one of the "
                          f"tiles this figure knows ({', '.join(TILE_SHAPES)})")
    names = TILE_SHAPES[region.name]
    c = constants(spec, names, defines)
    rows, cols = c[names[0]], c[names[1]]
    n = region.size // region.element_size if region.element_size else 0
    if rows * cols != n:
        raise FigureError(f"kernels/{spec.path.name}: {region.name} holds {n} elements, not "
                          f"{names[0]} x {names[1]} = {rows} x {cols}")
    return rows, cols


def tile_writers(spec: GemmKernel, snapshot, name: str, defines: dict | None = None) -> np.ndarray:
    region = snapshot[name]
    return region.writers().reshape(tile(spec, region, defines))


def release_lines(trace: Trace, position=(0, 0, 0)) -> list[int]:
    return [e.line for e in trace.threadgroup(position) if e.kind == "barrier-release"]
