"""MLX's split-K GEMM (steel_gemm_splitk.h), unmodified, on the emulator against numpy.

Four products that MLX's routing (mlx.matmul.route) sends to split-K on a base M1, one per
transposition and together covering: every dtype; 16- and 32-wide tiles; M and N multiples of
the tile and not; K a multiple of 16 and not; a last partition that does several more steps
than the others (K does not split evenly) and one that does only the partial step; 8, 16 and
32 partitions; both accumulation kernels, with the bias as a full matrix and as a broadcast
row. Each kernel is one compile.

Tolerances: partial sums and their sum are float32; float16/bfloat16 round the inputs and
the output (and bfloat16's bias product), inputs uniform in [-1, 1], K up to 2048.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.mlx import matmul, steel_splitk
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.paths import kernels_dir


TOLERANCE = {np.dtype(np.float32): dict(atol=1e-3, rtol=1e-4), np.dtype(np.float16): dict(atol=3e-2, rtol=1e-2),
             bfloat16: dict(atol=0.2, rtol=2e-2)}


def _cases():
    rng = np.random.default_rng(0)
    u = lambda shape, dtype: rng.uniform(-1, 1, shape).astype(dtype)  # noqa: E731
    yield "nn-f32-16x32-tiles-unaligned", u((33, 1000), np.float32), u((1000, 50), np.float32), None, 1.0, 0.0, 16
    yield ("nt-f16-aligned-bias-matrix", u((64, 2048), np.float16), u((64, 2048), np.float16).T,
           u((64, 64), np.float16), 0.5, 2.0, 32)
    yield "tn-bf16-last-partition-longer", u((640, 40), bfloat16).T, u((640, 16), bfloat16), None, 1.0, 0.0, 32
    yield ("tt-f32-K-tail-only-bias-row", u((520, 48), np.float32).T, u((48, 520), np.float32).T,
           u((48,), np.float32), 1.5, -1.0, 8)


CASES = list(_cases())


def reference(a, b, c, alpha, beta):
    out = a.astype(np.float64) @ b.astype(np.float64)
    return out if c is None else alpha * out + beta * c.astype(np.float64)


@pytest.mark.parametrize("a,b,c,alpha,beta,partitions", [
    pytest.param(*case[1:], id=case[0])
    for case in CASES])
def test_splitk_matches_numpy(a, b, c, alpha, beta, partitions):
    plan = steel_splitk.plan(a, b, c, alpha=alpha, beta=beta)
    gemm, accumulate = plan.launches
    assert gemm.threadgroups[2] == partitions == int(gemm.buffers[3]["split_k_partitions"])
    out = plan.run()
    np.testing.assert_allclose(out.astype(np.float64), reference(a, b, c, alpha, beta), **TOLERANCE[a.dtype])


def test_instantiations_match_the_cases():
    names = sorted(n for case in CASES for n in steel_splitk.plan(*case[1:4], alpha=case[4], beta=case[5]).host_names)
    text = (kernels_dir() / steel_splitk.SOURCE).read_text()
    assert sorted(re.findall(r'host_name\("([^"]+)"\)', text)) == names


def test_dispatch_follows_mlx():
    """Buffers and grids of the two launches, and the product MLX would not split."""
    _, a, b, c, alpha, beta, _ = CASES[1]
    gemm, accumulate = steel_splitk.plan(a, b, c, alpha=alpha, beta=beta).launches
    assert sorted(gemm.buffers) == [0, 1, 2, 3] and gemm.threads_per_threadgroup == (32, 2, 2)
    assert gemm.buffers[2].size == 32 * 64 * 64  # one float32 partial product per partition
    assert sorted(accumulate.buffers) == list(range(10)) and accumulate.threads == (64, 64, 1)
    assert accumulate.threads_per_threadgroup == matmul.block_dims(64, 64, 1)
    plain = steel_splitk.plan(a, b, c, alpha=1.0, beta=0.0).launches[1]  # addmm with beta 0: no bias read
    assert plain.host_name == "steel_gemm_splitk_accum_float16_float32" and sorted(plain.buffers) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="routes this 64×64 by 64×64 product to fused"):
        steel_splitk.plan(a[:, :64], b[:64])
