"""kernels/tiled_gemm_db.metal (the double-buffered tiled GEMM) against numpy, and the
race the emulator reports when its one barrier per K step is taken away.

Shapes: one K step (only the prologue's copy 0), two and three steps (both copies, and
copy 0 used twice), K not a multiple of BK (zero-filled tail), partial tiles in M and N,
a C of one element; alpha/beta with row strides that are not multiples of 4 (the scalar
path of load4). One compile for the kernel, one for the broken variant.
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.emulator import DataRaceError, load_kernel
from gemmglossary.kernels import KERNELS
from gemmglossary.paths import kernels_dir

SPEC = KERNELS["tiled_gemm_db"]
PATH = kernels_dir() / "tiled_gemm_db.metal"
BK = SPEC.constants()["BK"]
SHAPES = [(1, 1, 1), (37, 45, BK), (64, 64, 2 * BK), (130, 5, 3 * BK - 7), (3, 70, 5 * BK + 1), (100, 9, 200)]


@pytest.fixture(scope="module")
def kernel():
    return load_kernel(PATH, "tiled_gemm_db")


def _launch(M, N, K):
    d = SPEC.dispatch(M, N, K)
    return dict(threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)


def _mats(M, N, K, seed=0):
    rng = np.random.default_rng(seed + M * 7 + N * 13 + K)
    return rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32)


def test_threadgroup_memory_is_the_limit_at_the_defaults():
    c = SPEC.constants()
    tiles = 2 * (c["BM"] * BK + BK * c["BN"]) + c["BM"] * c["BN"]
    assert tiles * 4 == 32768, "the header says 32 KB: two copies of both tiles plus the C tile"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_numpy(kernel, shape):
    M, N, K = shape
    assert kernel.max_total_threads_per_threadgroup == SPEC.max_total_threads() == 128
    A, B = _mats(M, N, K)
    C = np.full((M, N), np.nan, np.float32)  # beta = 0: C is never read
    kernel(A, B, C, SPEC.params(M, N, K), **_launch(M, N, K))
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_alpha_beta_and_strides(kernel):
    M, N, K = 45, 37, 3 * BK + 5
    lda, ldb, ldc = K + 3, 41, 39
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (M, lda)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, ldb)).astype(np.float32)
    C0 = rng.uniform(-1, 1, (M, ldc)).astype(np.float32)
    C = C0.copy()
    kernel(A, B, C, SPEC.params(M, N, K, lda=lda, ldb=ldb, ldc=ldc, alpha=1.5, beta=-0.5), **_launch(M, N, K))
    ref = 1.5 * (A[:, :K].astype(np.float64) @ B[:, :N]) - 0.5 * C0[:, :N]
    np.testing.assert_allclose(C[:, :N], ref, rtol=1e-4, atol=1e-4)
    assert np.array_equal(C[:, N:], C0[:, N:]), "padding columns untouched"


@pytest.fixture(scope="module")
def wrong_copy():
    """The double buffer's classic slip: step s + 1 staged into copy `cur`, the one step s
    is reading (compiled from a string: one compile, cached across runs)."""
    src = PATH.read_text()
    good = "(s + 1) * BK, tid, tileA[nxt], tileB[nxt]"
    assert src.count(good) == 1
    return src, load_kernel(src.replace(good, "(s + 1) * BK, tid, tileA[cur], tileB[cur]"), "tiled_gemm_db")


@pytest.mark.parametrize("schedule", ["lockstep", ("random", 3)], ids=str)
def test_staging_into_the_copy_being_read_is_a_race(wrong_copy, schedule):
    """The emulator names the staging store and the fragment load, whatever the schedule."""
    src, kernel = wrong_copy
    lines = src.splitlines()
    store = next(i + 1 for i, line in enumerate(lines) if "dst[0] = v.x" in line)
    read = next(i + 1 for i, line in enumerate(lines) if "simdgroup_load(a[i], tileA[cur]" in line)
    M, N, K = 40, 40, 3 * BK
    A, B = _mats(M, N, K)
    C = np.zeros((M, N), np.float32)
    with pytest.raises(DataRaceError) as e:
        kernel(A, B, C, SPEC.params(M, N, K), **_launch(M, N, K), schedule=schedule)
    msg = str(e.value)
    assert f"<source>:{store}" in msg and f"<source>:{read}" in msg and "'tileA[0]" in msg, msg
    assert np.all(C == 0), "nothing written back from a failed launch"
