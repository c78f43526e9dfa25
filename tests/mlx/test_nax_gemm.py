"""MLX's NAX GEMM (``steel_gemm_fused_nax``), unmodified, on the emulator against numpy.

The kernel is MLX's, from the headers of the pinned wheel; kernels/mlx_steel_gemm_nax.metal
instantiates it and gemmglossary.mlx.nax plans the dispatch. Each case is a product that
MLX's host code sends to this kernel (checked with gemmglossary.mlx.matmul.route) with the
tile it picks for the device, so the three cases cover the three tiles MLX selects.

MLX fills the operands of matmul2d element by element in the layout its BaseNAXFrag
assumes, which Apple does not document: every launch raises a PortabilityWarning naming
that line of nax.h, and the emulator computes with that layout.

Tolerances: the inputs are exact in float32 and the emulator accumulates in float32, so
the error is the output's rounding (half an ulp of float16 or bfloat16, relative) plus
float32 sums of K products (below 1e-5·K absolute).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from gemmglossary.emulator import OutOfBoundsError, PortabilityWarning, load_kernel
from gemmglossary.mlx import matmul, nax
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.paths import vendor_dir

G17, S17 = matmul.Device("g", 17), matmul.Device("s", 17)
NAX_H = vendor_dir() / "mlx/backend/metal/kernels/steel/gemm/nax.h"

# (id, dtype, device, transposes, batch of A, batch of B, M, N, K, with C)
CASES = [
    ("f16-nn-aligned-128x128x512", np.float16, G17, "nn", (), (), 256, 256, 512, False),
    ("bf16-nt-edges-broadcast-batch-64x128x256", bfloat16, S17, "nt", (2, 2), (2, 1), 300, 72, 520, False),
    ("f16-tt-batch-axpby-64x128x64", np.float16, S17, "tt", (2,), (2,), 40, 100, 8200, True),
]


def _line(text: str) -> int:
    return next(i for i, ln in enumerate(NAX_H.read_text().splitlines(), 1) if text in ln)


def operands(dtype, code, batch_a, batch_b, M, N, K, seed):
    """A transposed operand is a column-contiguous view, as MLX meets a transposed array."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (*batch_a, K, M) if code[0] == "t" else (*batch_a, M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (*batch_b, N, K) if code[1] == "t" else (*batch_b, K, N)).astype(np.float32)
    a, b = a.astype(dtype), b.astype(dtype)
    return (np.swapaxes(a, -1, -2) if code[0] == "t" else a), (np.swapaxes(b, -1, -2) if code[1] == "t" else b)


def test_configs_are_the_host_choices():
    """Every tile MLX's host code can pick for this kernel is instantiated, in both types and
    all four transpositions, and nothing else."""
    picked = {matmul.nax_config(dev, M, N, K).as_tuple
              for dev in (G17, S17, matmul.Device("d", 17), matmul.Device("p", 18))
              for M, N, K in [(64, 64, 64), (64, 64, 8192), (8192, 8192, 8192)]}
    assert picked == set(nax.CONFIGS)
    source = nax.source_path().read_text()
    names = {matmul.fused_kernel_name(ta, tb, t, t, c, nax=True)
             for c in nax.CONFIGS for t in ("float16", "bfloat16") for ta in (0, 1) for tb in (0, 1)}
    declared = set(re.findall(r'host_name\("([^"]+)"\)', source))
    assert declared == names


def test_no_nax_no_plan():
    a = np.zeros((16, 16), np.float16)
    with pytest.raises(matmul.HostError, match="is_nax_available"):
        nax.plan(a, a, device=matmul.Device("g", 16))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nax_gemm_matches_numpy(case):
    name, dtype, device, code, batch_a, batch_b, M, N, K, with_c = case
    a, b = operands(dtype, code, batch_a, batch_b, M, N, K, seed=M + N + K)
    batch = np.broadcast_shapes(batch_a, batch_b)
    c = None
    kwargs = {}
    if with_c:
        c = np.random.default_rng(1).uniform(-1, 1, (*batch, M, N)).astype(dtype)
        kwargs = dict(alpha=2.0, beta=0.5)
    launch = nax.plan(a, b, c, device=device, **kwargs)

    # MLX's own routing sends this product here, with this tile, name and grid
    route = matmul.route(matmul.Problem(M, N, K, np.dtype(dtype).name, code[0] == "t", code[1] == "t",
                                        int(np.prod(batch, dtype=int))), device)
    assert route.kernel == "fused_nax" and route.kernel_name == launch.host_name, route
    assert (route.threadgroups, route.threads_per_threadgroup) == (launch.threadgroups, launch.threads_per_threadgroup)
    assert launch.function_constants[10] == (len(batch) > 1) and launch.function_constants[100] == with_c
    bm, bn, bk = route.config.bm, route.config.bn, route.config.bk
    assert [launch.function_constants[i] for i in (200, 201, 202)] == [M % bm == 0, N % bn == 0, K % bk == 0]

    kernel = load_kernel(nax.source_path(), launch.host_name, function_constants=launch.function_constants,
                         include_dirs=nax.include_dirs())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel(launch.buffers, threadgroups=launch.threadgroups,
               threads_per_threadgroup=launch.threads_per_threadgroup)
    messages = [str(w.message) for w in caught if issubclass(w.category, PortabilityWarning)]
    assert len(messages) == 1, messages
    assert f"nax.h:{_line('ct_a[i] = A[i];')} fills the left input" in messages[0], messages[0]
    assert f"run at {NAX_H}:{_line('gemm_op.run(ct_a, ct_b, ct_c);')}" in messages[0], messages[0]

    ref = a.astype(np.float64) @ b.astype(np.float64)
    if with_c:
        ref = kwargs["alpha"] * ref + kwargs["beta"] * c.astype(np.float64)
    ulp = 2.0**-11 if dtype == np.float16 else 2.0**-8
    np.testing.assert_allclose(launch.out.astype(np.float64), ref, rtol=ulp, atol=1e-5 * K)


SECOND_MMA = """
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/nax.h"
using namespace mlx::steel;
kernel void second_mma(device float* out [[buffer(0)]]) {
  BaseNAXFrag::dtype_frag_t<float> c0(0.0f), c1(0.0f);
  BaseNAXFrag::dtype_frag_t<half> a0(half(1.0f)), a1(half(1.0f)), b(half(1.0f));
  BaseNAXFrag::mma(c0, c1, a0, a1, metal::bool_constant<false>{}, b, metal::bool_constant<false>{});
  out[0] = c0[0];
}
"""


def test_second_mma_overload_writes_past_the_left_operand():
    """BaseNAXFrag's other mma (two A fragments, one B) keeps the 16x32x16 descriptor, so its
    left operand holds 8 elements per lane, and it writes elements 8 to 15 (nax.h). The
    fused GEMM never calls it (every tile has two B fragments per simdgroup: TN = 2)."""
    assert all(bn // wn == 32 for _, bn, _, _, wn in nax.CONFIGS)
    kernel = load_kernel(SECOND_MMA, "second_mma", include_dirs=nax.include_dirs())
    with pytest.raises(OutOfBoundsError) as e:
        kernel(np.zeros(1, np.float32), threads=32, threads_per_threadgroup=32)
    line = _line("ct_a[kElemsPerFrag + i] = Am1[i];")
    assert "'cooperative tensor (left input)': element index 8" in str(e.value)
    assert f"nax.h:{line}" in str(e.value), str(e.value)
