"""MLX's softmax (softmax.h), unmodified, on the emulator against numpy.

One compile per case: both kernels (rows of at most 4096 values read once, longer rows
looped) with float32, float16 and bfloat16, and the precise (float32 accumulation) variant
of each; row lengths that are not multiples of the 4 values a thread reads, a row needing a
single simdgroup and one needing many, a looped row with a partial last step; inputs used in
place with a layout MLX keeps (a transposed batch, rows broadcast along a dim) and one MLX
copies (a strided last axis). Inputs are spread over [-8, 8] so the max subtraction matters.

Tolerances: float32 1e-6; float16 and bfloat16 outputs are rounded to their type (relative
1e-3 and 8e-3), and without `precise` the normalizer is accumulated in that type too.
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.mlx import softmax
from gemmglossary.mlx.launch import bfloat16




def reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _cases():
    rng = np.random.default_rng(0)
    u = lambda shape, dtype: rng.uniform(-8, 8, shape).astype(dtype)  # noqa: E731
    yield "block-f32-one-simdgroup-partial-read", u((3, 37), np.float32), False, "block_softmax_float32", 1e-6, 1e-6
    yield "block-f16-many-simdgroups", u((2, 1001), np.float16), False, "block_softmax_float16", 2e-3, 2e-3
    yield "block-bf16-transposed-batch", np.swapaxes(u((3, 2, 40), bfloat16), 0, 1), False, \
        "block_softmax_bfloat16", 2e-2, 2e-2
    yield "block-bf16-precise-broadcast-rows", np.broadcast_to(u((1, 2, 130), bfloat16), (3, 2, 130)), True, \
        "block_softmax_precise_bfloat16", 1e-2, 1e-2
    yield "looped-f32-partial-step", u((2, 5001), np.float32), False, "looped_softmax_float32", 1e-6, 1e-6
    yield "looped-f16", u((1, 4097), np.float16), False, "looped_softmax_float16", 2e-3, 2e-3
    yield "looped-bf16-strided-last-axis", u((1, 8200), bfloat16)[:, ::2], False, "looped_softmax_bfloat16", 3e-2, 3e-2
    yield "looped-f16-precise", u((1, 6000), np.float16), True, "looped_softmax_precise_float16", 2e-3, 2e-3


CASES = [pytest.param(*c[1:], id=c[0])
         for c in _cases()]


@pytest.mark.parametrize("x,precise,name,rtol,atol", CASES)
def test_softmax_matches_numpy(x, precise, name, rtol, atol):
    plan = softmax.plan(x, precise=precise)
    assert plan.host_names == [name]
    out = plan.run()
    np.testing.assert_allclose(out.astype(np.float64), reference(x), rtol=rtol, atol=atol)


def test_threadgroups_follow_mlx():
    assert [softmax.threadgroup_size(n) for n in (1, 128, 129, 4096, 4097)] == [32, 32, 64, 1024, 1024]
    assert softmax.kernel_name(4096, np.float32, True) == "block_softmax_float32"  # precise: no-op for float32
    assert softmax.kernel_name(4097, np.float16, True) == "looped_softmax_precise_float16"
    launch = softmax.plan(np.zeros((5, 300), np.float32)).launches[0]
    assert launch.threads == (5 * 96, 1, 1) and launch.threads_per_threadgroup == (96, 1, 1)


def test_layouts_mlx_keeps_and_copies():
    """A dense array with a unit last stride is read in place whatever its dim order (and
    broadcast rows are computed once); anything else is copied first."""
    base = np.zeros((4, 3, 8), np.float32)
    kept = np.swapaxes(base, 0, 1)
    launch = softmax.plan(kept).launches[0]
    assert np.shares_memory(launch.buffers[0], base) and launch.threads == (12 * 32, 1, 1)
    rows = np.broadcast_to(np.zeros((1, 8), np.float32), (5, 8))
    assert softmax.plan(rows).launches[0].threads == (32, 1, 1)  # one row of data
    copied = softmax.plan(base[:, :, ::2]).launches[0]
    assert not np.shares_memory(copied.buffers[0], base)
