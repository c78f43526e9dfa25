"""Every first-party kernel in kernels/ against numpy, at awkward shapes."""

from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import load_kernel
from gemmglossary.kernels import KERNELS as TABLE
from gemmglossary.paths import kernels_dir

SHAPES = [(1, 1, 1), (37, 45, 29), (33, 31, 17), (130, 5, 23), (3, 70, 40), (64, 64, 64)]
#: The kernels taking M, N, K as scalars; buffers and dispatch as gemmglossary.kernels reads them.
KERNELS = ["matmul_tiled", "matmul_simd", "matmul_simd_blocked"]
TILED_GEMM = TABLE["tiled_gemm"]


def _launch(name, M, N, K):
    d = TABLE[name].dispatch(M, N, K)
    return dict(threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)


def _path(name):
    p = Path(kernels_dir()) / f"{name}.metal"
    if not p.exists():
        pytest.skip(f"{p} is not written yet")
    return p


def _mats(M, N, K, seed=0):
    rng = np.random.default_rng(seed + M * 7 + N * 13 + K)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    return A, B


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", KERNELS)
def test_simple_kernels_match_numpy(name, shape):
    M, N, K = shape
    k = load_kernel(_path(name), name)
    A, B = _mats(M, N, K)
    C = np.full((M, N), np.nan, np.float32)
    k(A, B, C, M, N, K, **_launch(name, M, N, K))
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", SHAPES + [(100, 9, 200)], ids=lambda s: "x".join(map(str, s)))
def test_tiled_gemm_matches_numpy(shape):
    M, N, K = shape
    k = load_kernel(_path("tiled_gemm"), "tiled_gemm")
    assert k.max_total_threads_per_threadgroup == TILED_GEMM.max_total_threads() == 128
    A, B = _mats(M, N, K, 1)
    C = np.zeros((M, N), np.float32)
    p = TILED_GEMM.params(M, N, K)
    k(A, B, C, p, **_launch("tiled_gemm", M, N, K))
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_tiled_gemm_alpha_beta_and_strides():
    M, N, K = 45, 37, 21
    lda, ldb, ldc = 24, 40, 41
    k = load_kernel(_path("tiled_gemm"), "tiled_gemm")
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (M, lda)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, ldb)).astype(np.float32)
    C0 = rng.uniform(-1, 1, (M, ldc)).astype(np.float32)
    C = C0.copy()
    p = TILED_GEMM.params(M, N, K, lda=lda, ldb=ldb, ldc=ldc, alpha=1.5, beta=-0.5)
    k(A, B, C, p, **_launch("tiled_gemm", M, N, K))
    ref = 1.5 * (A[:, :K].astype(np.float64) @ B[:, :N]) - 0.5 * C0[:, :N]
    np.testing.assert_allclose(C[:, :N], ref, rtol=1e-4, atol=1e-4)
    assert np.array_equal(C[:, N:], C0[:, N:]), "padding columns untouched"


def test_tiled_gemm_oversized_threadgroup_rejected():
    from gemmglossary.emulator import LaunchError

    k = load_kernel(_path("tiled_gemm"), "tiled_gemm")
    with pytest.raises(LaunchError, match=str(TILED_GEMM.max_total_threads())):
        k(np.zeros(1, np.float32), np.zeros(1, np.float32), np.zeros(1, np.float32),
          TILED_GEMM.params(1, 1, 1), threadgroups=(1, 1, 1), threads_per_threadgroup=(256, 1, 1))


@pytest.mark.parametrize("which", [0, 1], ids=["first-barrier", "second-barrier"])
@pytest.mark.parametrize("schedule", ["lockstep", "simdgroup-major", ("random", 3)], ids=str)
def test_matmul_tiled_without_a_barrier_is_a_race(tmp_path, which, schedule):
    """Deleting either barrier of matmul_tiled's K loop is reported, under every schedule,
    naming the staging store and the multiply's read."""
    from gemmglossary.emulator import DataRaceError

    src = _path("matmul_tiled").read_text().splitlines(keepends=True)
    barriers = [i for i, l in enumerate(src) if "threadgroup_barrier(" in l and not l.lstrip().startswith("//")]
    assert len(barriers) == 2
    src[barriers[which]] = "\n"  # same line count, so line numbers stay put
    f = tmp_path / "matmul_tiled.metal"
    f.write_text("".join(src))
    store_lines = [i + 1 for i, l in enumerate(src) if "tileA[lid.y][lid.x] =" in l or "tileB[lid.y][lid.x] =" in l]
    read_line = next(i + 1 for i, l in enumerate(src) if "acc +=" in l)
    k = load_kernel(f, "matmul_tiled")
    n = 40
    A, B = _mats(n, n, n)
    C = np.zeros((n, n), np.float32)
    with pytest.raises(DataRaceError) as e:
        k(A, B, C, n, n, n, threadgroups=(3, 3, 1), threads_per_threadgroup=(16, 16, 1), schedule=schedule)
    msg = str(e.value)
    assert any(f"{f}:{ln}" in msg for ln in store_lines), msg
    assert f"{f}:{read_line}" in msg, msg
    assert np.all(C == 0)
