"""MLX's gemv and gemv_t (gemv.h), unmodified, on the emulator against numpy.

One compile per case. Together the cases reach every block shape family of MLX's host rule
(gemv: 4 or 8 simdgroups along the outputs, 8 × 4 threads for short inputs, 8 simdgroups
splitting a long input; gemv_t: 2, 4 or 16 simdgroups, 8 × 4 or 4 × 8 threads), fewer than 4
outputs (one per thread), an input length that is not a multiple of the block (the guarded
last step) and one shorter than the block (no full step), an output count that leaves a
partial last block (the shifted last rows / columns), contiguous and broadcast batches (nc0 /
nc1), batches that fold into M, a matrix given as a transposed view, the bias (axpby), and
each kernel with float32, float16 and bfloat16.

Tolerances: the kernels accumulate in float32; float32 |error| ≤ 1e-4·√K-ish (atol 1e-3
at K = 8192), float16 rounds the inputs and output (rtol 1e-2), bfloat16 also the bias
product (rtol 2e-2); inputs are uniform in [-1, 1].
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.mlx import gemv
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.paths import kernels_dir


TOLERANCE = {np.dtype(np.float32): dict(atol=1e-3, rtol=1e-4), np.dtype(np.float16): dict(atol=2e-2, rtol=1e-2),
             bfloat16: dict(atol=5e-2, rtol=2e-2)}


def uniform(rng, shape, dtype):
    return rng.uniform(-1, 1, shape).astype(dtype)


def _cases():
    rng = np.random.default_rng(0)
    f32, f16, bf16 = np.float32, np.float16, bfloat16
    # (id, a, b, c, alpha, beta, expected host name)
    yield ("gemv-rows-partial-block", uniform(rng, (67, 200), f32), uniform(rng, (200, 1), f32), None, 1, 0,
           "gemv_float32_bm4_bn1_sm1_sn32_tm4_tn4_nc0_axpby0")
    yield ("gemv-folded-batch-short-k-3-outputs", uniform(rng, (3, 1, 50), f16), uniform(rng, (50, 1), f16), None,
           1, 0, "gemv_float16_bm1_bn1_sm8_sn4_tm1_tn4_nc0_axpby0")
    yield ("gemv-long-k-broadcast-batch-bias", uniform(rng, (2, 3, 10, 1000), bf16), uniform(rng, (2, 1, 1000, 1), bf16),
           uniform(rng, (10, 1), bf16), 0.5, 2.0, "gemv_bfloat16_bm1_bn8_sm1_sn32_tm4_tn4_nc1_axpby1")
    yield ("gemv-4096-rows-batched", uniform(rng, (2, 4102, 70), f32), uniform(rng, (2, 70, 1), f32), None, 1, 0,
           "gemv_float32_bm8_bn1_sm1_sn32_tm4_tn4_nc0_axpby0")
    yield ("gemv_t-columns-partial-block", uniform(rng, (1, 70), f32), uniform(rng, (70, 130), f32), None, 1, 0,
           "gemv_t_float32_bm1_bn2_sm8_sn4_tm4_tn4_nc0_axpby0")
    yield ("gemv_t-3-outputs-bias", uniform(rng, (1, 40), f16), uniform(rng, (40, 3), f16), uniform(rng, (3,), f16),
           1, 1, "gemv_t_float16_bm1_bn2_sm8_sn4_tm4_tn1_nc0_axpby1")
    yield ("gemv_t-broadcast-batch-bias", uniform(rng, (2, 3, 1, 33), bf16), uniform(rng, (2, 1, 33, 600), bf16),
           uniform(rng, (600,), bf16), 2.0, 0.5, "gemv_t_bfloat16_bm1_bn4_sm8_sn4_tm4_tn4_nc1_axpby1")
    yield ("gemv_t-long-k-2048-outputs", uniform(rng, (1, 8192), f32), uniform(rng, (8192, 2048), f32), None, 1, 0,
           "gemv_t_float32_bm1_bn16_sm4_sn8_tm4_tn4_nc0_axpby0")
    yield ("gemv_t-transposed-matrix-view", uniform(rng, (20, 2049), f16).T, uniform(rng, (20, 1), f16), None, 1, 0,
           "gemv_t_float16_bm1_bn16_sm8_sn4_tm4_tn4_nc0_axpby0")


CASES = list(_cases())


def reference(a, b, c, alpha, beta):
    out = a.astype(np.float64) @ b.astype(np.float64)
    return out if c is None else alpha * out + beta * c.astype(np.float64)


@pytest.mark.parametrize("a,b,c,alpha,beta,name", [
    pytest.param(*c[1:], id=c[0])
    for c in CASES])
def test_gemv_matches_numpy(a, b, c, alpha, beta, name):
    plan = gemv.plan(a, b, c, alpha=alpha, beta=beta)
    assert plan.host_names == [name]
    out = plan.run()
    np.testing.assert_allclose(out.astype(np.float64), reference(a, b, c, alpha, beta), **TOLERANCE[a.dtype])


def test_instantiations_match_the_cases():
    """Every kernel of mlx_gemv.metal is run by a case, and every case's kernel is in the file."""
    text = (kernels_dir() / gemv.SOURCE).read_text()
    assert sorted(re.findall(r'host_name\("([^"]+)"\)', text)) == sorted(c[-1] for c in CASES)


def test_layout_rules():
    """A dense row vector with a matrix gives gemv_t; the matrix as a transposed view gives gemv;
    a vector with a gap between its elements is copied; unbound buffers stay unbound."""
    rng = np.random.default_rng(1)
    x, w = uniform(rng, (1, 16), np.float32), uniform(rng, (16, 8), np.float32)
    launch = gemv.plan(x, w).launches[0]
    assert launch.host_name.startswith("gemv_t_")
    assert sorted(launch.buffers) == [0, 1, 3, 4, 5, 6, 9, 10, 11, 12]  # 2, 7, 8, 13, 14: only with a bias
    launch = gemv.plan(x, np.ascontiguousarray(w.T).T).launches[0]
    assert launch.host_name.startswith("gemv_") and not launch.host_name.startswith("gemv_t_")
    assert int(launch.buffers[6]) == 16  # the leading dimension of the column-major matrix
    strided = uniform(rng, (1, 32), np.float32)[:, ::2]
    launch = gemv.plan(strided, w).launches[0]
    assert launch.buffers[1].size == 16  # copied to a dense vector


def test_not_a_gemv():
    rng = np.random.default_rng(2)
    with pytest.raises(ValueError, match="not a matrix-vector product"):
        gemv.plan(uniform(rng, (3, 1, 8), np.float32), uniform(rng, (8, 5), np.float32))  # folds to 3 × 5
    with pytest.raises(ValueError, match="dot_product"):
        gemv.plan(uniform(rng, (1, 8), np.float32), uniform(rng, (8, 1), np.float32))
