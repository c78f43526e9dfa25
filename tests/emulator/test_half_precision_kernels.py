"""kernels/matmul_simd_half.metal (16-bit inputs, accumulator type chosen apart) against numpy.

Every instantiation at partial tiles and several K steps. The reference is the float64
product of the inputs as stored (already rounded to 16 bits), so what is measured is the
kernel's own arithmetic: with a float accumulator only the final rounding to T (half an
ulp of T relative to |C|, plus float32 sums); with a 16-bit accumulator one rounding per
8-deep multiply-accumulate as well. And the behaviours the half-precision entry states:
a float accumulator survives a running sum past half's largest finite value (65504)
whose final value fits, a half accumulator does not; bfloat's range is float's.
The file is one compile (four instantiations).
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.emulator import load_kernel
from gemmglossary.kernels import cdiv
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.msl.declarations import constants
from gemmglossary.paths import kernels_dir

PATH = kernels_dir() / "matmul_simd_half.metal"
DTYPES = {"float16": np.dtype(np.float16), "bfloat16": bfloat16}
#: (input, accumulator) of each instantiation, as its host name says.
KERNELS = [("float16", "float32"), ("bfloat16", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16")]
EPS = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24}  # unit roundoff
SHAPES = [(1, 1, 1), (33, 31, 17), (40, 70, 48), (64, 64, 256)]


def host_name(t: str, acc: str) -> str:
    return f"matmul_simd_half_{t}_{acc}"


def _launch(M, N):
    c = constants(PATH.read_text()).values
    return dict(threadgroups=(cdiv(N, c["BN"]), cdiv(M, c["BM"]), 1), threads_per_threadgroup=(c["THREADS"], 1, 1))


def run(t, acc, A, B):
    M, K = A.shape
    N = B.shape[1]
    C = np.full((M, N), np.nan, DTYPES[t])
    load_kernel(PATH, host_name(t, acc))(A, B, C, M, N, K, **_launch(M, N))
    return C


def _mats(M, N, K, dtype, seed=0):
    rng = np.random.default_rng(seed + M + 3 * N + 7 * K)
    return rng.uniform(-1, 1, (M, K)).astype(dtype), rng.uniform(-1, 1, (K, N)).astype(dtype)


def test_the_header_lists_every_instantiation():
    text = PATH.read_text()
    for t, acc in KERNELS:
        assert f"//   {host_name(t, acc)} " in text
    assert text.count("INSTANTIATE(") == len(KERNELS) + 1  # the macro, then one line each


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("t,acc", KERNELS, ids=[f"{t}-acc-{a}" for t, a in KERNELS])
def test_matches_numpy(t, acc, shape):
    M, N, K = shape
    A, B = _mats(M, N, K, DTYPES[t])
    C = run(t, acc, A, B).astype(np.float64)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))  # the sum of |products|
    # the final rounding to T, and per 8-deep step one rounding in the accumulator's type
    bound = EPS[t] * np.abs(ref) + 2 * cdiv(K, 8) * EPS[acc] * scale + 1e-30
    assert np.all(np.abs(C - ref) <= bound), float(np.max(np.abs(C - ref) / bound))


def test_a_float_accumulator_keeps_the_error_at_the_final_rounding():
    """At K = 1024 a float accumulator's result is T(exact sum) up to float32 noise: within
    one rounding of T; a 16-bit accumulator is measurably worse."""
    M = N = 32
    K = 1024
    for t in DTYPES:
        A, B = _mats(M, N, K, DTYPES[t], seed=1)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        err = {acc: np.max(np.abs(run(t, acc, A, B).astype(np.float64) - ref)) for acc in ("float32", t)}
        assert err["float32"] <= EPS[t] * np.max(np.abs(ref)) * 1.01
        assert err[t] > 4 * err["float32"], err


def test_a_running_sum_past_65504_needs_a_float_accumulator():
    """Row of A all 16, column of B sixteen 16s then sixteen -16s: the running sum reaches
    16 * 256 * 16 = 65536 > 65504 (half's largest finite value) before coming back to 0."""
    K = 32
    A = np.full((1, K), 16.0, np.float16)
    B = np.concatenate([np.full((K // 2, 1), 256.0), np.full((K // 2, 1), -256.0)]).astype(np.float16)
    assert np.finfo(np.float16).max == 65504
    assert run("float16", "float32", A, B)[0, 0] == 0.0
    assert np.isinf(run("float16", "float16", A, B)[0, 0]) or np.isnan(run("float16", "float16", A, B)[0, 0])
    # bfloat has float's exponent range: the same sum in bfloat accumulators is exact
    assert run("bfloat16", "bfloat16", A.astype(bfloat16), B.astype(bfloat16))[0, 0] == 0.0
