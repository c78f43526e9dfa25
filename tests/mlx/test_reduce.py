"""MLX's reductions (reduce.h, reduction/), unmodified, on the emulator against numpy.

One case per kernel MLX's host code can pick (init, all (one pass and two), row small (both
grids), simple and looped, column small, long-column, two-pass and looped, the last also as
the second pass of the two multi-pass column kernels), with the four ops and the three
floating dtypes spread over them; one compile per kernel. The reduction plans (which kind of
reduction a layout is) are checked without running anything.

Tolerances: max and min are exact; sums and products accumulate in the input type (MLX's
Sum<U>/Prod<U> with U the output type), so float16 and bfloat16 lose a few bits per step:
relative 1e-2 (float16) and 3e-2 (bfloat16) at these lengths.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.mlx import reduce
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.paths import kernels_dir


TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 1e-2, bfloat16: 3e-2}
NUMPY = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def _cases():
    rng = np.random.default_rng(0)
    u = lambda shape, dtype, lo=-1, hi=1: rng.uniform(lo, hi, shape).astype(dtype)  # noqa: E731
    yield "init-empty-prod-f16", np.zeros((0, 5), np.float16), 0, "prod", ["init_reduce_prodfloat16"]
    yield "all-one-threadgroup-sum-f32", u((37, 11), np.float32), (0, 1), "sum", ["all_reduce_sumfloat32"]
    yield "all-two-passes-max-bf16", u((100, 50), bfloat16), (0, 1), "max", ["all_reduce_maxbfloat16"] * 2
    yield "row-small-min-f16", u((6, 7, 5), np.float16), 2, "min", ["row_reduce_small_1_reduce_minfloat16"]
    yield ("row-small-simdgroup-per-output-min-f16", u((40, 5, 20), np.float16), (0, 2), "min",
           ["row_reduce_small_1_reduce_minfloat16"])
    yield "row-simple-prod-f32", u((40, 300), np.float32, 0.95, 1.05), 1, "prod", ["row_reduce_simple_prodfloat32"]
    yield "row-looped-sum-bf16", u((3, 4, 700), bfloat16), (0, 2), "sum", ["row_reduce_looped_1_reduce_sumbfloat16"]
    yield "col-small-max-f16", u((20, 30), np.float16), 0, "max", ["col_reduce_small_1_reduce_maxfloat16"]
    yield ("col-longcolumn-min-f32", u((2000, 10), np.float32), 0, "min",
           ["col_reduce_longcolumn_1_reduce_minfloat32", "col_reduce_looped_1_32_32_reduce_minfloat32"])
    yield ("col-2pass-sum-bf16", u((300, 64), bfloat16), 0, "sum",
           ["col_reduce_2pass_1_32_32_reduce_sumbfloat16", "col_reduce_looped_1_32_32_reduce_sumbfloat16"])
    yield ("col-looped-prod-f16", u((200, 40), np.float16, 0.98, 1.02), 0, "prod",
           ["col_reduce_looped_1_32_32_reduce_prodfloat16"])


CASES = list(_cases())


@pytest.mark.parametrize("x,axes,op,names", [
    pytest.param(*c[1:], id=c[0])
    for c in CASES])
def test_reduction_matches_numpy(x, axes, op, names):
    plan = reduce.plan(x, axes, op)
    assert plan.host_names == names
    out = plan.run()
    expected = NUMPY[op](x.astype(np.float64), axis=axes, keepdims=True)
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=TOLERANCE[x.dtype], atol=TOLERANCE[x.dtype])


def test_instantiations_match_the_cases():
    text = (kernels_dir() / reduce.SOURCE).read_text()
    assert sorted(re.findall(r'host_name\("([^"]+)"\)', text)) == sorted({n for c in CASES for n in c[-1]})


@pytest.mark.parametrize("make,axes,kind,shape,strides", [
    (lambda: np.zeros((4, 5)), (0, 1), "ContiguousAllReduce", (), ()),
    (lambda: np.zeros((4, 5, 6)), (2,), "ContiguousReduce", (6,), (1,)),
    (lambda: np.zeros((4, 5, 6)), (1, 2), "ContiguousReduce", (30,), (1,)),
    (lambda: np.zeros((4, 5, 6)), (0, 2), "ContiguousReduce", (4, 6), (30, 1)),
    (lambda: np.zeros((4, 5, 6)), (0, 1), "ContiguousStridedReduce", (20,), (6,)),
    (lambda: np.zeros((4, 1, 6)), (0, 1), "ContiguousStridedReduce", (4,), (6,)),
    (lambda: np.zeros((6, 5)).T, (0,), "GeneralContiguousReduce", (5,), (1,)),
    (lambda: np.zeros((6, 5)).T, (1,), "GeneralStridedReduce", (6,), (5,)),
    (lambda: np.zeros((4, 6, 5)).transpose(0, 2, 1), (0,), "GeneralReduce", (4,), (30,)),
    (lambda: np.broadcast_to(np.zeros((1, 6)), (5, 6)), (0, 1), "GeneralContiguousReduce", (5, 6), (0, 1)),
])
def test_reduction_plans(make, axes, kind, shape, strides):
    assert reduce.reduction_plan(make(), list(axes)) == reduce.ReductionPlan(kind, shape, strides)


def test_layouts_mlx_copies():
    """A general reduction copies the input row-contiguous and plans again (here: a column
    reduction); a broadcast row is read in place."""
    x = np.zeros((4, 6, 5), np.float32).transpose(0, 2, 1)
    (launch,) = reduce.plan(x, 0, "sum").launches
    assert launch.host_name.startswith("col_reduce_small") and not np.shares_memory(launch.buffers[0], x)
    rows = np.broadcast_to(np.zeros((1, 6), np.float32), (5, 6))
    (launch,) = reduce.plan(rows, 1, "max").launches
    assert np.shares_memory(launch.buffers[0], rows) and launch.host_name.startswith("row_reduce_small")


def test_refusals():
    with pytest.raises(ValueError, match="MLX copies the input"):
        reduce.plan(np.zeros((4, 1), np.float32), 1)
    with pytest.raises(ValueError, match="restated here"):
        reduce.plan(np.zeros((4, 2), np.float32), 1, "and")
    with pytest.raises(TypeError, match="floating-point"):
        reduce.plan(np.zeros((4, 2), np.int32), 1)
