"""llama.cpp's soft_max, rms_norm and broadcasting add, unmodified, on the emulator against numpy.

Dispatched as gemmglossary.llama.rows restates the host: soft_max without a mask binds src0
again in the mask's (and the sinks') slot, and the kernel tells the mask is absent by
comparing the two pointers, so the emulator must keep the alias; with a float16 or float32
mask broadcast over heads; row lengths that take the float4 kernels and ones that do not,
a row needing one simdgroup and one needing several. rms_norm likewise (src0 in the unfused
operands' slots). add: a row broadcast to every row (the one-thread-per-element kernel), a
batch broadcast, a column broadcast (a shorter row repeated along the row).

With more than one simdgroup, soft_max clears its threadgroup buffer for the sum after the
other simdgroups read the max from it, across a ``mem_none`` barrier: a read then another
thread's write across an execution barrier, which the emulator does not report; the test
runs it with portability warnings as errors.

Tolerances: float32 rows, float64 references: 1e-6 relative (soft_max's exp and the norm's
rsqrt are the GPU library's, within a few ulp).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gemmglossary.emulator.errors import PortabilityWarning
from gemmglossary.llama import rows
from gemmglossary.llama.launch import Tensor

RNG = np.random.default_rng(7)


def u(*shape, dtype=np.float32, scale=4.0):
    return RNG.uniform(-scale, scale, shape).astype(dtype)


@pytest.mark.parametrize("shape,scale", [((2, 3, 100), 0.5), ((1, 2, 37), 1.0), ((1, 1, 1000), 1.0)],
                         ids=["float4-rows", "odd-rows", "several-simdgroups"])
def test_soft_max_without_mask(shape, scale):
    x = u(*shape)
    launch, out = rows.soft_max(Tensor.of(x), scale=scale)
    assert launch.buffers[2] is launch.buffers[1]
    with warnings.catch_warnings():
        # several simdgroups: simdgroup 0 clears buf for the sum (softmax.metal:83 or 191) after
        # the others read the max from it across a mem_none barrier: a read then a write across
        # an execution barrier, which needs no memory ordering (not a portability warning)
        warnings.simplefilter("error", PortabilityWarning)
        launch.run()
    np.testing.assert_allclose(out, rows.soft_max_reference(x, None, scale), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mask_dtype", [np.float16, np.float32])
def test_soft_max_with_mask_broadcast_over_heads(mask_dtype):
    x = u(4, 5, 64)                            # 4 heads, 5 rows of 64
    mask = u(1, 8, 64, dtype=mask_dtype)       # one mask for every head, more rows than x (padded)
    mask[0, 1, 40:] = -np.inf                  # masked positions
    launch, out = rows.soft_max(Tensor.of(x), Tensor.of(mask), scale=0.25)
    assert launch.host_name == f"kernel_soft_max_{'f16' if mask_dtype == np.float16 else 'f32'}_4"
    launch.run()
    ref = rows.soft_max_reference(x, mask.astype(np.float32)[:, :5], 0.25)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-7)
    assert (out[:, 1, 40:] == 0).all()


@pytest.mark.parametrize("shape", [(3, 2, 4096), (2, 1, 75), (1, 1, 8)], ids=["float4", "odd", "short"])
def test_rms_norm(shape):
    x = u(*shape)
    launch, out = rows.rms_norm(Tensor.of(x), eps=1e-5)
    launch.run()
    np.testing.assert_allclose(out, rows.rms_norm_reference(x, 1e-5), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("a_shape,b_shape", [
    ((2, 3, 64), (1, 1, 64)),       # one row for every row: one thread per element
    ((2, 3, 256), (1, 3, 256)),     # broadcast over the outer batch
    ((2, 3, 70), (2, 1, 70)),       # over rows, odd row length
    ((1, 2, 96), (1, 2, 8)),        # a shorter row repeated along the row
], ids=["row", "batch", "rows-odd", "columns"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_add_broadcasts(a_shape, b_shape, dtype):
    a, b = u(*a_shape, dtype=dtype), u(*b_shape, dtype=dtype)
    launch, out = rows.add(Tensor.of(a), Tensor.of(b))
    launch.run()
    ref = a + (np.tile(b, (1, 1, a_shape[2] // b_shape[2])) if a_shape[2] != b_shape[2] else b)
    np.testing.assert_array_equal(out, ref)
