"""The decode-path kernels (gemv.metal, qmv4.metal, reductions.metal) against numpy.

Shapes are chosen for the kernels' edge paths, named in each case's id: fewer rows than a
simdgroup owns, a last threadgroup whose later simdgroups have no rows and leave, K shorter
than one step, K a whole number of steps (no tail), a tail that ends inside a lane's vector;
for qmv4 a step with idle lanes, and a group size whose groups change every few words; for
the reductions, threadgroups that are not a multiple of 32 threads (a partial last
simdgroup), a threadgroup of 32 simdgroups, and blocks of 32 that run past n.

One compile per file and -D set: five in all.
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.emulator import load_kernel
from gemmglossary.kernels import MATVEC_KERNELS, cdiv
from gemmglossary.mlx import affine
from gemmglossary.paths import kernels_dir

GEMV, QMV4 = MATVEC_KERNELS["gemv"], MATVEC_KERNELS["qmv4"]


def _load(name, kernel=None, defines=None):
    return load_kernel(kernels_dir() / f"{name}.metal", kernel or name, defines=defines)


def _launch(spec, outputs, defines=None):
    d = spec.dispatch(outputs, defines)
    return dict(threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)


# ------------------------------------------------------------------------------- gemv

GEMV_CASES = [  # (M, K, -D); the defaults: 4 rows per simdgroup, 4 simdgroups, steps of 128 columns
    pytest.param(1, 1, None, id="1x1-one-row-K-below-a-vector"),
    pytest.param(3, 5, None, id="3x5-partial-simdgroup-tail-inside-a-vector"),
    pytest.param(16, 128, None, id="16x128-one-full-threadgroup-no-tail"),
    pytest.param(17, 129, None, id="17x129-three-simdgroups-leave-tail-of-1"),
    pytest.param(70, 1030, None, id="70x1030-eight-steps-and-a-tail"),
    pytest.param(5, 200, {"ROWS": 1, "SIMDGROUPS": 1}, id="5x200-one-row-per-simdgroup"),
]


@pytest.mark.parametrize("M,K,defines", GEMV_CASES)
def test_gemv_matches_numpy(M, K, defines):
    rng = np.random.default_rng(M * 1000 + K)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    x = rng.uniform(-1, 1, K).astype(np.float32)
    y = np.full(M, np.nan, np.float32)
    _load("gemv", defines=defines)(*GEMV.arguments(A=A, x=x, y=y, M=M, K=K), **_launch(GEMV, M, defines))
    np.testing.assert_allclose(y, A.astype(np.float64) @ x, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------- qmv4

def quantized_problem(N, K, group_size, seed=0):
    """W with a different range per group (and one group of zeros), MLX's 4-bit format, and x."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((N, K)) * rng.uniform(0.1, 2.0, (N, K // group_size)).repeat(group_size, axis=1)
    W[0, :group_size] = 0.0
    Q = affine.quantize(W.astype(np.float32), group_size, 4)
    x = rng.uniform(-1, 1, K).astype(np.float32)
    return Q, x


QMV4_CASES = [  # (N, K, -D); the defaults: group size 64, 4 rows per simdgroup, 2 simdgroups, 256 weights a step
    pytest.param(1, 64, None, id="1x64-one-group-24-idle-lanes"),
    pytest.param(3, 128, None, id="3x128-partial-simdgroup"),
    pytest.param(8, 256, None, id="8x256-one-full-threadgroup-one-full-step"),
    pytest.param(9, 320, None, id="9x320-one-row-in-the-last-threadgroup-partial-step"),
    pytest.param(37, 1024, None, id="37x1024-four-steps"),
    pytest.param(13, 96, {"GROUP_SIZE": 32}, id="13x96-group-of-32-new-scale-every-4-words"),
]


@pytest.mark.parametrize("N,K,defines", QMV4_CASES)
def test_qmv4_matches_numpy(N, K, defines):
    group_size = QMV4.constants(defines)["GROUP_SIZE"]
    Q, x = quantized_problem(N, K, group_size, seed=N + K)
    y = np.full(N, np.nan, np.float32)
    args = QMV4.arguments(wq=Q.wq, scales=Q.scales, biases=Q.biases, x=x, y=y, N=N, K=K)
    _load("qmv4", defines=defines)(*args, **_launch(QMV4, N, defines))
    np.testing.assert_allclose(y, affine.dequantize(Q) @ x, rtol=1e-5, atol=1e-4)


def test_qmv4_reads_mlx_s_layout_low_nibble_first():
    """One weight set at a time: the kernel's y is that weight's dequantized value, so the
    kernel's nibble order and group indexing are the format's, element by element."""
    N, K, gs = 2, 64, 64
    kernel = _load("qmv4")
    Q, _ = quantized_problem(N, K, gs)
    dense = affine.dequantize(Q)
    for k in (0, 1, 7, 8, 63):
        x = np.zeros(K, np.float32)
        x[k] = 1.0
        y = np.zeros(N, np.float32)
        kernel(*QMV4.arguments(wq=Q.wq, scales=Q.scales, biases=Q.biases, x=x, y=y, N=N, K=K), **_launch(QMV4, N))
        np.testing.assert_allclose(y, dense[:, k], rtol=1e-6, atol=1e-6, err_msg=f"weight {k}")


# ------------------------------------------------------------------------------- reductions

REDUCE_CASES = [  # (n, threadgroups G, threads per threadgroup T)
    pytest.param(1, 1, 32, id="n1"),
    pytest.param(77, 1, 20, id="one-partial-simdgroup-of-20"),
    pytest.param(1000, 3, 100, id="T100-last-simdgroup-4-lanes"),
    pytest.param(5000, 4, 256, id="T256-eight-simdgroups"),
    pytest.param(70000, 2, 1024, id="T1024-thirty-two-simdgroups"),
]


@pytest.mark.parametrize("n,G,T", REDUCE_CASES)
def test_reduce_sum_two_passes_match_numpy(n, G, T):
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, n).astype(np.float32)
    kernel = _load("reductions", "reduce_sum")
    partials = np.full(G, np.nan, np.float32)
    kernel(a, partials, n, threadgroups=(G, 1, 1), threads_per_threadgroup=(T, 1, 1))
    # threadgroup g sums the elements i with (i // T) % G == g
    expected = np.array([a[(np.arange(n) // T) % G == g].astype(np.float64).sum() for g in range(G)])
    np.testing.assert_allclose(partials, expected, rtol=1e-5, atol=1e-4)
    total = np.full(1, np.nan, np.float32)
    kernel(partials, total, G, threadgroups=(1, 1, 1), threads_per_threadgroup=(32, 1, 1))
    np.testing.assert_allclose(total[0], a.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("n", [1, 32, 45, 100])
def test_shuffle_down_and_xor_sums_match_numpy(n):
    S = cdiv(n, 32)
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, n).astype(np.float32)
    blocks = np.zeros(S * 32)
    blocks[:n] = a
    blocks = blocks.reshape(S, 32)
    grid = dict(threads=(S * 32, 1, 1), threads_per_threadgroup=(32, 1, 1))

    out, steps = np.full(S, np.nan, np.float32), np.full(S * 6 * 32, np.nan, np.float32)
    _load("reductions", "shuffle_down_sum")(a, out, steps, n, **grid)
    np.testing.assert_allclose(out, blocks.sum(1), rtol=1e-5, atol=1e-5)
    steps = steps.reshape(S, 6, 32)
    for level in range(6):  # after `level` halvings, lane i < 32 >> level holds the lanes i mod (32 >> level)
        live = 32 >> level
        expected = blocks.reshape(S, 1 << level, live).sum(1)
        np.testing.assert_allclose(steps[:, level, :live], expected, rtol=1e-5, atol=1e-5, err_msg=f"level {level}")

    every = np.full(n, np.nan, np.float32)
    _load("reductions", "xor_sum")(a, every, n, **grid)
    np.testing.assert_allclose(every, np.repeat(blocks.sum(1), 32)[:n], rtol=1e-5, atol=1e-5)
