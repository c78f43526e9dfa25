"""MLX's scans (scan.h), unmodified, on the emulator against numpy.

One kernel per case, each a different op, type and direction: a contiguous axis (one
threadgroup per row; rows longer than one pass of the threadgroup, and short ones), a
strided axis (32 columns per threadgroup, a partial last block), bool inputs (whose
simdgroups each write one byte of threadgroup memory: no race), an input MLX copies first
(a broadcast axis). Sums and products of floats are compared within their type's rounding
(MLX accumulates in the output type); integer and bool scans exactly.

A contiguous scan reads all 32 entries of its `simdgroup_sums`, of which only one per
simdgroup was written (the other lanes' values are never used): such a run gives the
emulator's PortabilityWarning for a read of threadgroup memory no thread wrote.
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.mlx import scan
from gemmglossary.mlx.launch import bfloat16


def reference(x, op, axis, reverse, inclusive):
    x = np.moveaxis(np.asarray(x), axis, -1)
    x = x[..., ::-1] if reverse else x
    result = scan.out_dtype(op, x.dtype)
    wide = x.astype(np.float64) if result.kind == "f" or x.dtype == bfloat16 else x.astype(result)
    if op == "sum":
        r = np.cumsum(wide, -1)
        init = 0
    elif op == "prod":
        r = np.cumprod(wide, -1) if x.dtype != np.bool_ else np.logical_and.accumulate(wide, -1)
        init = 1
    elif op == "max":
        r = np.maximum.accumulate(wide, -1)
        init = -np.inf
    elif op == "min":
        r = np.minimum.accumulate(wide, -1)
        init = np.iinfo(result).max if result.kind in "iu" else np.inf
    else:
        r = np.logaddexp.accumulate(wide, -1)
        init = -np.inf
    if not inclusive:
        r = np.concatenate([np.full(r.shape[:-1] + (1,), init, dtype=r.dtype), r[..., :-1]], -1)
    r = r[..., ::-1] if reverse else r
    return np.moveaxis(r, -1, axis)


def _cases():
    rng = np.random.default_rng(0)
    u = lambda shape, lo, hi: rng.uniform(lo, hi, shape)  # noqa: E731
    yield "contig-sum-f32-long-rows", u((3, 5000), -1, 1).astype(np.float32), "sum", -1, False, True, 1e-4
    yield "contig-reverse-exclusive-sum-i64", rng.integers(-9, 9, (2, 700)), "sum", -1, True, False, 0
    yield "contig-sum-bool-to-i32", rng.integers(0, 2, (4, 37)).astype(bool), "sum", -1, False, True, 0
    yield "contig-prod-bool", rng.integers(0, 8, (2, 300)) > 0, "prod", -1, False, True, 0
    yield "contig-exclusive-max-bf16", u((3, 129), -4, 4).astype(bfloat16), "max", -1, False, False, 0
    yield "contig-reverse-logaddexp-f16", u((2, 200), -3, 3).astype(np.float16), "logaddexp", -1, True, True, 3e-3
    yield "contig-sum-f32-broadcast-axis-copied", np.broadcast_to(u((2, 1), -1, 1).astype(np.float32), (2, 50)), \
        "sum", -1, False, True, 1e-5
    yield "strided-sum-f32-partial-block", u((5, 7, 45), -1, 1).astype(np.float32), "sum", 1, False, True, 1e-5
    yield "strided-reverse-exclusive-min-i32", rng.integers(-50, 50, (6, 33)).astype(np.int32), "min", 0, True, \
        False, 0
    yield "strided-exclusive-prod-f16", u((9, 40), 0.9, 1.1).astype(np.float16), "prod", 0, False, False, 3e-3


CASES = [pytest.param(*c[1:], id=c[0]) for c in _cases()]


@pytest.mark.parametrize("x,op,axis,reverse,inclusive,rtol", CASES)
def test_scan_matches_numpy(x, op, axis, reverse, inclusive, rtol):
    plan = scan.plan(x, op, axis=axis, reverse=reverse, inclusive=inclusive)
    contiguous = np.asarray(x).strides[axis] == np.asarray(x).itemsize or np.asarray(x).strides[axis] == 0
    assert plan.host_names[0].startswith("contig_" if contiguous else "strided_")
    out = plan.run()
    ref = reference(x, op, axis, reverse, inclusive)
    if rtol:
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(out.astype(np.float64) if out.dtype == bfloat16 else out,
                                      ref.astype(out.dtype) if out.dtype != bfloat16 else ref)


def test_host_rules_follow_mlx():
    assert scan.kernel_name(True, True, False, "sum", np.bool_, np.int32) == "contig_scan_reverse_exclusive_sum_bool__int32"
    assert scan.out_dtype("sum", np.bool_) == np.int32 and scan.out_dtype("prod", np.bool_) == np.bool_
    assert [scan.n_reads(t) for t in (np.int8, np.float32, np.int64)] == [4, 4, 2]
    # a dim that divides the divisor is dropped; the rest is divided, larger first
    assert scan.grid_2d((4, 6, 10), (60, 10, 1), 10) == (24, 1, 1)
    assert scan.grid_2d((3, 1, 7), (7, 0, 1), 7) == (3, 1, 1)
    with pytest.raises(ValueError, match="MLX's scans are"):
        scan.out_dtype("mean", np.float32)
