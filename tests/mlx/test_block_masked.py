"""MLX's block-masked matmul (steel_gemm_masked.h, gemv_masked.h), unmodified, against numpy.

Three GEMM cases (one per dtype: an unaligned product with a boolean output mask, 64-wide
blocks with operand scales, a broadcast batch with an output scale and boolean operand
masks) and three matrix-vector cases (gemv with a boolean output mask, gemv_t with operand
scales and 64-wide blocks, gemv_t over a batch); one compile each. The reference expands
every mask to its block of elements: ((a · lhs) @ (b · rhs)) · out, checked against
mx.block_masked_mm on MLX's CPU backend.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.emulator.errors import OutOfBoundsError
from gemmglossary.mlx import block_masked
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.paths import kernels_dir


TOLERANCE = {np.dtype(np.float32): dict(atol=1e-4, rtol=1e-4), np.dtype(np.float16): dict(atol=3e-2, rtol=1e-2),
             bfloat16: dict(atol=0.15, rtol=3e-2)}


def _cases():
    rng = np.random.default_rng(0)
    u = lambda shape, dtype: rng.uniform(-1, 1, shape).astype(dtype)  # noqa: E731
    flags = lambda shape: rng.random(shape) > 0.35  # noqa: E731
    scales = lambda shape, dtype: rng.uniform(0.5, 2.0, shape).astype(dtype)  # noqa: E731
    f32, f16, bf16 = np.float32, np.float16, bfloat16
    yield ("steel-nn-f32-outmask-bool-unaligned", u((70, 40), f32), u((40, 50), f32), 32, flags((3, 2)), None, None)
    yield ("steel-nt-f16-operand-scales", u((64, 128), f16), u((64, 128), f16).T, 64, None, scales((1, 2), f16),
           scales((2, 1), f16))
    yield ("steel-tn-bf16-batch-outscale-operand-bool", np.swapaxes(u((2, 3, 40, 33), bf16), -1, -2),
           u((2, 1, 40, 64), bf16), 32, scales((2, 1, 2, 2), bf16), flags((2, 3, 2, 2)), flags((2, 2)))
    yield ("gemv-f32-outmask-bool", u((70, 40), f32), u((40, 1), f32), 32, flags((3, 1)), None, None)
    yield ("gemv_t-f16-operand-scales", u((1, 130), f16), u((130, 100), f16), 64, None, scales((1, 3), f16),
           scales((3, 2), f16))
    yield ("gemv_t-bf16-batch-outscale-operand-bool", u((2, 3, 1, 64), bf16), u((2, 1, 64, 40), bf16), 32,
           scales((1, 2), bf16), flags((2, 3, 1, 2)), flags((2, 2)))


CASES = list(_cases())


def expand(mask, rows, cols, block_size):
    """A block mask as a mask (or scale) per element, cropped to rows × cols."""
    m = np.asarray(mask).astype(np.float64)
    return np.repeat(np.repeat(m, block_size, axis=-2), block_size, axis=-1)[..., :rows, :cols]


def reference(a, b, block_size, mask_out, mask_lhs, mask_rhs):
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    a, b = a.astype(np.float64), b.astype(np.float64)
    if mask_lhs is not None or mask_rhs is not None:
        a = a * expand(True if mask_lhs is None else mask_lhs, M, K, block_size)
        b = b * expand(True if mask_rhs is None else mask_rhs, K, N, block_size)
    out = a @ b
    return out if mask_out is None else out * expand(mask_out, M, N, block_size)


@pytest.mark.parametrize("a,b,bs,mask_out,mask_lhs,mask_rhs",
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_block_masked_matches_numpy(a, b, bs, mask_out, mask_lhs, mask_rhs):
    out = block_masked.plan(a, b, bs, mask_out, mask_lhs, mask_rhs).run()
    np.testing.assert_allclose(out.astype(np.float64), reference(a, b, bs, mask_out, mask_lhs, mask_rhs),
                               **TOLERANCE[a.dtype])


def test_gemv_t_output_mask_broadcast_along_n_reads_past_it():
    """MLX 0.32.1's gemv_t_masked indexes the output mask by the block of N alone (the mask's
    stride is commented out in gemv_masked.h), so an output mask broadcast along N, one value
    in memory for every block, is read past its end for the second block: the emulator
    reports it (a GPU would read whatever follows)."""
    _, a, b, bs, _, ml, mr = CASES[5]
    one_value = np.ones((1, 1), dtype=bfloat16) * 2  # broadcast to (2, 3, 1, 2): stride 0 along N
    with pytest.raises(OutOfBoundsError, match=r"out-of-bounds read of 'out_mask'.*gemv_masked\.h:\d+"):
        block_masked.plan(a, b, bs, one_value, ml, mr).run()


def test_reference_matches_mlx_cpu():
    mx = pytest.importorskip("mlx.core")
    def arg(mask):
        if mask is None:
            return None
        return mx.array(mask if mask.dtype == np.bool_ else mask.astype(np.float32))

    for _, a, b, bs, mo, ml, mr in CASES[:2] + CASES[3:5]:
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        theirs = mx.block_masked_mm(mx.array(a32), mx.array(b32), bs, arg(mo), arg(ml), arg(mr))
        np.testing.assert_allclose(np.array(theirs), reference(a32, b32, bs, mo, ml, mr), atol=1e-4, rtol=1e-4)


def test_instantiations_match_the_cases():
    names = [block_masked.plan(*c[1:]).host_names[0] for c in CASES]
    found = []
    for source in (block_masked.STEEL_SOURCE, block_masked.GEMV_SOURCE):
        found += re.findall(r'host_name\("([^"]+)"\)', (kernels_dir() / source).read_text())
    assert sorted(found) == sorted(names)


def test_mask_buffers_follow_mlx():
    _, a, b, bs, mo, ml, mr = CASES[2]  # batch (2, 3), output scale, boolean operand masks
    (launch,) = block_masked.plan(a, b, bs, mo, ml, mr).launches
    assert sorted(launch.buffers) == [0, 1, 3, 4, 6, 7, 10, 11, 12, 13]
    assert list(launch.buffers[6]) == [2, 3] and launch.buffers[13].size == 6
    _, a, b, bs, mo, ml, mr = CASES[3]  # gemv with an output mask only: no operand mask buffers
    (launch,) = block_masked.plan(a, b, bs, mo, ml, mr).launches
    assert 21 not in launch.buffers and 22 not in launch.buffers and 20 in launch.buffers
    with pytest.raises(ValueError, match="plain matmul"):
        block_masked.plan(a, b, 32)
