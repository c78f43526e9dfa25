"""MLX's segmented matmul (steel_gemm_segmented.h), unmodified, on the emulator against numpy.

Three cases, one compile each, one per dtype and transposition family: unaligned M and N
with an empty segment and one that does not start at 0; aligned tiles with the segments a
view of one array of boundaries (MLX's non-contiguous layout, read in place); a batch of
segments. The tile is MLX's GEMM tile rule on a base M1 (mlx.matmul.regular_config).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.mlx import segmented
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.paths import kernels_dir


TOLERANCE = {np.dtype(np.float32): dict(atol=1e-4, rtol=1e-4), np.dtype(np.float16): dict(atol=3e-2, rtol=1e-2),
             bfloat16: dict(atol=0.15, rtol=2e-2)}
# The file has three instantiations, which the emulator compiles as one unit: the bfloat16
# kernel's compile error stops the other two as well.


def _cases():
    rng = np.random.default_rng(0)
    u = lambda shape, dtype: rng.uniform(-1, 1, shape).astype(dtype)  # noqa: E731
    yield ("nn-f32-unaligned-empty-segment", u((70, 100), np.float32), u((100, 50), np.float32),
           np.array([[0, 30], [30, 30], [10, 100]], np.int32), True,
           "steel_segmented_mm_nn_float32_float32_bm64_bn64_bk16_wm2_wn2")
    bounds = np.array([0, 20, 50, 96], np.uint32)
    yield ("nt-f16-boundaries-view", u((64, 96), np.float16), u((32, 96), np.float16).T,
           np.lib.stride_tricks.as_strided(bounds, (3, 2), (4, 4)), False,
           "steel_segmented_mm_nt_float16_float16_bm64_bn32_bk32_wm2_wn2")
    yield ("tn-bf16-batch-of-segments", u((100, 40), bfloat16).T, u((100, 70), bfloat16),
           np.array([[[0, 100], [5, 64]], [[64, 100], [0, 17]]], np.uint32), True,
           "steel_segmented_mm_tn_bfloat16_bfloat16_bm64_bn64_bk16_wm1_wn2")


CASES = list(_cases())


def reference(a, b, segments):
    a, b = a.astype(np.float64), b.astype(np.float64)
    pairs = np.asarray(segments).reshape(-1, 2)
    out = np.stack([a[:, s:e] @ b[s:e, :] for s, e in pairs])
    return out.reshape(*np.asarray(segments).shape[:-1], a.shape[0], b.shape[1])


@pytest.mark.parametrize("a,b,segments,contiguous,name", [
    pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_segmented_matches_numpy(a, b, segments, contiguous, name):
    plan = segmented.plan(a, b, segments)
    (launch,) = plan.launches
    assert launch.host_name == name and launch.function_constants[segmented.SEGMENTS_CONTIGUOUS] is contiguous
    np.testing.assert_allclose(plan.run().astype(np.float64), reference(a, b, segments), **TOLERANCE[a.dtype])


def test_reference_matches_mlx_cpu():
    mx = pytest.importorskip("mlx.core")
    _, a, b, segments, _, _ = CASES[0]
    theirs = mx.segmented_mm(mx.array(a), mx.array(b), mx.array(segments))
    np.testing.assert_allclose(np.array(theirs), reference(a, b, segments), atol=1e-4, rtol=1e-4)


def test_instantiations_match_the_cases():
    text = (kernels_dir() / segmented.SOURCE).read_text()
    assert sorted(re.findall(r'host_name\("([^"]+)"\)', text)) == sorted(c[-1] for c in CASES)


def test_segments_layouts():
    pairs = np.zeros((4, 2), np.uint32)
    assert segmented._segments_layout(pairs)[0] is True
    strided = np.zeros((4, 4), np.uint32)[:, ::2]  # last stride 2: copied
    contiguous, read = segmented._segments_layout(strided)
    assert contiguous and not np.shares_memory(read, strided)
