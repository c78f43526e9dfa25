"""MLX's own steel ``gemm``, unmodified, executed on the emulator and checked against numpy.

The kernel comes from the headers copied out of the pinned mlx wheel (their hashes are
checked in tests/test_vendor.py); kernels/steel_gemm.metal only instantiates it, and
gemmglossary.mlx.steel computes the host parameters the way MLX's matmul.cpp does.

Tolerances: float32 accumulates in float32, so |error| ≤ 1e-4 for these K (≤ 130, inputs
in [-1, 1]). float16 rounds inputs and the output to half (about 3 decimal digits) while
accumulating in float32, so |error| ≤ 2e-2 + 1e-2·|value|.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from gemmglossary.mlx import steel as mlx_steel
from gemmglossary.emulator import OutOfBoundsError, load_kernel

DTYPES = {"float32": np.float32, "float16": np.float16}
TOLERANCE = {np.float32: dict(atol=1e-4, rtol=1e-5), np.float16: dict(atol=2e-2, rtol=1e-2)}
SHAPES = [(64, 64, 64), (100, 72, 50), (1, 1, 1), (33, 130, 17)]  # aligned, then unaligned
TRANSPOSES = list(itertools.product([False, True], repeat=2))


def operands(shape, dtype, transpose_a, transpose_b, *, batch=(), seed=0):
    """A (…, M, K) and B (…, K, N); a transposed operand is a column-contiguous view,
    which is how MLX meets a transposed array (check_transpose)."""
    M, N, K = shape
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (*batch, K, M) if transpose_a else (*batch, M, K)).astype(dtype)
    b = rng.uniform(-1, 1, (*batch, N, K) if transpose_b else (*batch, K, N)).astype(dtype)
    return (np.swapaxes(a, -1, -2) if transpose_a else a), (np.swapaxes(b, -1, -2) if transpose_b else b)


def run(launch, **options):
    kernel = load_kernel(mlx_steel.source_path(), launch.host_name,
                         function_constants=launch.function_constants,
                         include_dirs=mlx_steel.include_dirs())
    kernel(launch.buffers, threadgroups=launch.threadgroups,
           threads_per_threadgroup=launch.threads_per_threadgroup, **options)
    return launch.out


def reference(a, b, c=None, alpha=1.0, beta=0.0):
    out = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    return out if c is None else out + beta * c.astype(np.float64)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("transpose_a,transpose_b", TRANSPOSES,
                         ids=[("t" if ta else "n") + ("t" if tb else "n") for ta, tb in TRANSPOSES])
@pytest.mark.parametrize("config", mlx_steel.CONFIGS, ids=lambda c: "bm{}_bn{}_bk{}_wm{}_wn{}".format(*c))
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_gemm_matches_numpy(dtype, config, transpose_a, transpose_b, shape):
    a, b = operands(shape, dtype, transpose_a, transpose_b, seed=sum(shape))
    launch = mlx_steel.plan(a, b, config=config)
    # A transposed view picks the transposed kernel, except when the matrix has a dim of 1:
    # then it is row-contiguous too, and check_transpose takes the plain kernel.
    M, N, K = shape
    code = ("t" if transpose_a and min(M, K) > 1 else "n") + ("t" if transpose_b and min(K, N) > 1 else "n")
    assert f"_{code}_" in launch.host_name
    out = run(launch)
    np.testing.assert_allclose(out.astype(np.float64), reference(a, b), **TOLERANCE[dtype])


def test_function_constants_follow_alignment():
    a, b = operands((64, 33, 16), np.float32, False, False)
    constants = mlx_steel.plan(a, b, config=(32, 32, 16, 2, 2)).function_constants
    assert constants == {10: False, 100: False, 110: False, 200: True, 201: False, 202: True}


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_contiguous_batch_uses_batch_strides(dtype):
    a, b = operands((33, 40, 20), dtype, False, True, batch=(3,), seed=3)
    launch = mlx_steel.plan(a, b)
    assert launch.function_constants[10] is False and launch.threadgroups[2] == 3
    np.testing.assert_allclose(run(launch).astype(np.float64), reference(a, b), **TOLERANCE[dtype])


def test_broadcast_batch_uses_has_batch():
    """B shared along the second batch dim cannot collapse with A's dims: has_batch is set
    and the kernel walks batch_shape/batch_strides (elem_to_loc_broadcast)."""
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (2, 3, 17, 9)).astype(np.float32)
    b = rng.uniform(-1, 1, (2, 1, 9, 21)).astype(np.float32)
    launch = mlx_steel.plan(a, b)
    assert launch.function_constants[10] is True
    assert list(launch.buffers[6]) == [2, 3]
    np.testing.assert_allclose(run(launch), reference(a, b), **TOLERANCE[np.float32])


@pytest.mark.parametrize("shape", [(64, 50, 24), (64, 64, 32)], ids=["edge-columns", "whole-tiles"])
@pytest.mark.parametrize("alpha,beta", [(2.0, 0.5), (1.0, 1.0)])
def test_addmm_epilogue(alpha, beta, shape):
    """α·A·B + β·C through the fused epilogue (do_axpby only when α or β is not 1), on the
    path of whole tiles (align_M and align_N: the epilogue that glossary/epilogue-fusion.md
    quotes) and on the path of edge columns.

    M is a multiple of BM: see test_addmm_edge_tile_reads_past_c for why."""
    a, b = operands(shape, np.float32, False, False, seed=5)
    c = np.random.default_rng(6).uniform(-1, 1, shape[:2]).astype(np.float32)
    launch = mlx_steel.plan(a, b, c, alpha=alpha, beta=beta)
    assert launch.function_constants[100] is True
    assert launch.function_constants[110] is (alpha != 1.0 or beta != 1.0)
    assert launch.function_constants[200] is True and launch.function_constants[201] is (shape[1] == 64)
    np.testing.assert_allclose(run(launch), reference(a, b, c, alpha, beta), **TOLERANCE[np.float32])


def test_addmm_edge_tile_reads_past_c():
    """MLX's apply_epilogue_safe (the pinned release) masks C's columns but not its rows, so an edge tile
    with M % BM != 0 reads C past its last row (the values are discarded on store). The
    emulator reports the read; allowing out-of-bounds reads gives the right result."""
    a, b = operands((40, 50, 24), np.float32, False, False, seed=7)
    c = np.random.default_rng(8).uniform(-1, 1, (40, 50)).astype(np.float32)
    launch = mlx_steel.plan(a, b, c, alpha=2.0, beta=0.5)
    with pytest.raises(OutOfBoundsError, match=r"'C'.*steel/gemm/mma\.h:\d+"):
        run(launch)
    assert not launch.out.any(), "a failed launch must not hand back a half-written output"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run(launch, oob_reads="warn")
    np.testing.assert_allclose(out, reference(a, b, c, 2.0, 0.5), **TOLERANCE[np.float32])
