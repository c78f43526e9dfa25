"""MLX's gather matmul (steel_gemm_gather.h), unmodified, on the emulator against numpy.

Seven products, one per instantiation of kernels/mlx_steel_gather.metal, dispatched as
mlx.gather plans them (MLX's routing and tiles on a base M1):

* gather_mm_rhs (one row of a per index, sorted rhs indices): float32 with M, N and K off
  the tile, two unused matrices of b and a run of one index longer than a tile; bfloat16
  with b a transposed view, a single row of a broadcast to every index, runs that start
  inside a tile; float16 with N and K off the tile.
* gather_mm (the general kernel): float32 with two index dims (has_batch), broadcast and
  unsorted lhs and rhs indices, b with two batch dims, a a strided slice, M, N, K all off the
  tile; float16 nt with everything aligned (the kernel's never-checked loop) and repeated
  unsorted rhs indices; bfloat16 with a transposed a, lhs indices only (rhs by default every
  matrix of b) and only M off the tile; float32 tt (both operands transposed views) with
  unsorted lhs and rhs indices and M, N, K off the tile.

The reference is numpy's own indexing and matmul in float64 (itself checked against
mx.gather_mm on MLX's CPU backend).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.mlx import gather, matmul
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.paths import kernels_dir

TOLERANCE = {np.dtype(np.float32): dict(atol=1e-4, rtol=1e-4), np.dtype(np.float16): dict(atol=3e-2, rtol=1e-2),
             bfloat16: dict(atol=0.15, rtol=2e-2)}


def _cases():
    rng = np.random.default_rng(0)
    u = lambda shape, dtype: rng.uniform(-1, 1, shape).astype(dtype)  # noqa: E731
    sorted_f32 = np.array([0] * 3 + [2] * 20 + [3] * 17, np.int32)  # matrices 1 and 4 unused
    yield ("rhs-nn-f32-unaligned-empty-groups", u((40, 1, 40), np.float32), u((5, 40, 70), np.float32),
           None, sorted_f32, True, "steel_gather_mm_rhs_nn_float32_float32_bm16_bn64_bk16_wm1_wn2")
    sorted_bf16 = np.array([0] * 16 + [1] * 5 + [3] * 27, np.uint32)
    yield ("rhs-nt-bf16-broadcast-a-transposed-b", u((1, 32), bfloat16), u((4, 64, 32), bfloat16).transpose(0, 2, 1),
           None, sorted_bf16, True, "steel_gather_mm_rhs_nt_bfloat16_bfloat16_bm16_bn64_bk16_wm1_wn2")
    yield ("nn-f32-has-batch-unsorted-strided-a", u((6, 70, 40), np.float32)[::2], u((2, 2, 40, 50), np.float32),
           np.array([[2], [0]], np.int64), np.array([[3, 1, 2]], np.int32), False,
           "steel_gather_mm_nn_float32_float32_bm64_bn64_bk16_wm2_wn2")
    yield ("nt-f16-aligned-repeated-rhs", u((3, 64, 32), np.float16), u((3, 64, 32), np.float16).transpose(0, 2, 1),
           None, np.array([2, 0, 2], np.uint32), False, "steel_gather_mm_nt_float16_float16_bm64_bn32_bk32_wm2_wn2")
    sorted_f16 = np.array([0] * 10 + [2] * 14, np.int32)  # matrix 1 unused; K and N off the tile
    yield ("rhs-nn-f16-unaligned", u((24, 1, 36), np.float16), u((3, 36, 48), np.float16),
           None, sorted_f16, True, "steel_gather_mm_rhs_nn_float16_float16_bm16_bn64_bk16_wm1_wn2")
    yield ("tt-f32-both-transposed-unsorted", u((2, 24, 40), np.float32).transpose(0, 2, 1),
           u((3, 36, 24), np.float32).transpose(0, 2, 1), np.array([1, 0, 1], np.uint32),
           np.array([2, 0, 0], np.uint32), False, "steel_gather_mm_tt_float32_float32_bm64_bn64_bk16_wm2_wn2")
    yield ("tn-bf16-lhs-only-rows-unaligned", u((2, 48, 33), bfloat16).transpose(0, 2, 1), u((3, 48, 64), bfloat16),
           np.array([1, 0, 1], np.uint32), None, False, "steel_gather_mm_tn_bfloat16_bfloat16_bm64_bn64_bk16_wm1_wn2")


CASES = list(_cases())


def reference(a, b, lhs, rhs):
    """numpy: every (broadcast) index position multiplies a[lhs] by b[rhs] over the batch dims."""
    a64 = a.astype(np.float64).reshape(-1, *a.shape[-2:])
    b64 = b.astype(np.float64).reshape(-1, *b.shape[-2:])
    lhs = np.arange(a64.shape[0]).reshape(a.shape[:-2]) if lhs is None else np.asarray(lhs)
    rhs = np.arange(b64.shape[0]).reshape(b.shape[:-2]) if rhs is None else np.asarray(rhs)
    lhs, rhs = np.broadcast_arrays(lhs, rhs)
    return a64[lhs] @ b64[rhs]


@pytest.mark.parametrize("a,b,lhs,rhs,sorted_indices,name", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_gather_matches_numpy(a, b, lhs, rhs, sorted_indices, name):
    plan = gather.plan(a, b, lhs, rhs, sorted_indices=sorted_indices)
    (launch,) = plan.launches
    assert launch.host_name == name  # one instantiation, one compile, per case
    np.testing.assert_allclose(plan.run().astype(np.float64), reference(a, b, lhs, rhs), **TOLERANCE[a.dtype])


def test_reference_matches_mlx_cpu():
    mx = pytest.importorskip("mlx.core")
    for case in (CASES[0], CASES[2]):
        _, a, b, lhs, rhs, sorted_indices, _ = case
        args = [None if x is None else mx.array(x) for x in (lhs, rhs)]
        theirs = mx.gather_mm(mx.array(np.ascontiguousarray(a)), mx.array(b), *args, sorted_indices=sorted_indices)
        np.testing.assert_allclose(np.array(theirs), reference(a, b, lhs, rhs), atol=1e-4, rtol=1e-4)


def test_instantiations_match_the_cases():
    text = (kernels_dir() / gather.SOURCE).read_text()
    assert sorted(re.findall(r'host_name\("([^"]+)"\)', text)) == sorted(c[-1] for c in CASES)


def test_rhs_dispatch():
    """Buffers 0-4 as gather_mm_rhs binds them: the rhs indices, b's layout, a broadcast to
    the indices; one threadgroup per output tile."""
    _, a, b, lhs, rhs, sorted_indices, _ = CASES[1]
    (launch,) = gather.plan(a, b, lhs, rhs, sorted_indices=sorted_indices).launches
    assert sorted(launch.buffers) == [0, 1, 2, 3, 4] and launch.threads_per_threadgroup == (32, 2, 1)
    assert launch.buffers[2].dtype == np.uint32 and launch.buffers[2].tolist() == rhs.tolist()
    assert launch.threadgroups == (1, 48 // 16, 1)
    p = launch.buffers[4]
    assert (int(p["M"]), int(p["ldb"]), int(p["batch_stride_b"])) == (48, 32, 64 * 32)
    assert launch.buffers[0].size == 48 * 32  # the one row of a, copied once per index
    assert launch.function_constants == {gather.ALIGN_M: True, gather.ALIGN_N: True, gather.ALIGN_K: True}


def test_general_dispatch():
    """Buffers 0-14 as gather_mm binds them: index shape and strides, operands' batch layout."""
    _, a, b, lhs, rhs, sorted_indices, _ = CASES[2]
    (launch,) = gather.plan(a, b, lhs, rhs, sorted_indices=sorted_indices).launches
    buf = launch.buffers
    assert sorted(buf) == list(range(15)) and launch.threadgroups == (1, 2, 6)
    assert buf[6].tolist() == [2, 3] and buf[7].tolist() == [1, 0] and buf[8].tolist() == [0, 1]
    assert (int(buf[9]), buf[10].tolist(), buf[11].tolist()) == (1, [3, 70, 40], [2 * 70 * 40, 40, 1])
    assert (int(buf[12]), buf[13].tolist()) == (2, [2, 2, 40, 50])
    assert int(buf[5]["batch_stride_a"]) == 1 and int(buf[5]["batch_ndim"]) == 2
    assert launch.function_constants[gather.HAS_BATCH] is True


def test_routes_not_planned_and_bad_input():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(size=(4, 1, 8)).astype(np.float32), rng.uniform(size=(3, 8, 16)).astype(np.float32)
    with pytest.raises(NotImplementedError, match="gather GEMV"):
        gather.plan(a, b, None, np.array([2, 0, 1, 1]))  # unsorted: M = 1 goes to gather_mv
    # MLX trusts sorted_indices: an unsorted list takes gather_mm_rhs, which handles any order
    (launch,) = gather.plan(a, b, None, np.array([2, 0, 1, 1]), sorted_indices=True).launches
    assert launch.host_name.startswith("steel_gather_mm_rhs_")
    with pytest.raises(NotImplementedError, match="gather GEMV"):  # sorted, but lhs indices given
        gather.plan(a, b, np.arange(4) % 4, np.array([0, 1, 1, 2]), sorted_indices=True)
    with pytest.raises(NotImplementedError, match="gather_mm_rhs_nax"):
        gather.plan(a, b, None, np.array([0, 1, 1, 2]), sorted_indices=True, device=matmul.Device("g", 17))
    # x @ W.T with a few rows of float16 on an M3 (generation 15): gemv_wide_gather, not gather_mm
    x = a.repeat(3, axis=1).astype(np.float16)  # 3 rows
    w = b.transpose(0, 2, 1).copy().transpose(0, 2, 1).astype(np.float16)  # a transposed view (astype keeps it)
    with pytest.raises(NotImplementedError, match="gemv_wide_gather"):
        gather.plan(x, w, None, np.array([0, 1, 1, 2]), device=matmul.Device("g", 15))
    shifted = np.zeros(w.size + 4, np.float16)[4:].reshape(3, 16, 8).transpose(0, 2, 1)  # offset 4: not 8-aligned
    assert gather.plan(x, shifted, None, np.array([0, 1, 1, 2]), device=matmul.Device("g", 15)).host_names == [
        "steel_gather_mm_nt_float16_float16_bm64_bn32_bk32_wm2_wn2"]
    assert gather.plan(x, w, None, np.array([0, 1, 1, 2])).host_names == [
        "steel_gather_mm_nt_float16_float16_bm64_bn32_bk32_wm2_wn2"]  # a base M1 has no gemv_wide
    with pytest.raises(ValueError, match="plain matmul"):
        gather.plan(a, b)
    with pytest.raises(TypeError, match="integers"):
        gather.plan(a, b, None, np.array([0.0, 1.0, 1.0, 2.0]))


def test_host_lines_are_ordered_ranges_inside_their_functions():
    for rule, (start, end) in {**gather.LINES, **gather.OPS_LINES}.items():
        assert 0 < start <= end, rule
    for part, whole in (("rhs_tile", "rhs"), ("rhs_params", "rhs"), ("rhs_buffers", "rhs"),
                        ("general_tile", "general"), ("general_params", "general"), ("general_buffers", "general")):
        assert gather.LINES[whole][0] <= gather.LINES[part][0] <= gather.LINES[part][1] <= gather.LINES[whole][1]
    assert gather.host_url("gather_mm").endswith("/mlx/ops.cpp#L6131-L6219")
