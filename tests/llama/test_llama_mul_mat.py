"""llama.cpp's mul_mm and mul_mv, unmodified, on the emulator against numpy.

Each case is dispatched as gemmglossary.llama.mul_mat restates the host, and the test first
checks that the host picks the kernel the case is about.

- mul_mm (the tiled simdgroup-matrix GEMM) for f32, f16, q4_0, q8_0 and q4_K weights: a full
  64 x 32 tile grid, and edge tiles (rows and columns not multiples of the tile: ``bc_out``;
  for float weights also K not a multiple of 32: ``bc_inp``), with src1's batches broadcast
  over src0's (r2 = 2, r3 = 1 and r2 = 1, r3 = 2).
- mul_mv for the same types: the decode shape (one row of activations) at K = N = 4096, and a
  small shape with broadcast batches and a partial last group of rows.

Weights are random blocks (every code and scale drawn, not quantized from data), so the
kernels' dequantization is checked against gemmglossary.llama.blocks on every bit pattern.

Tolerances: mul_mm stages both operands in half (``simdgroup_half8x8``), so its reference
rounds the dequantized weights and the activations to float16 first and accumulates in
float64; it and mul_mv (float32 sums) are then within 1e-4 relative of the output's scale.

At an edge of mul_mv (a last group of rows that is partial) llama.cpp's kernels read the
weight rows past the last one and discard their sums: the test expects the emulator's
warning for those reads (returned as 0) and checks every stored output.
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.emulator.errors import PortabilityWarning
from gemmglossary.llama import blocks, mul_mat
from gemmglossary.llama.launch import Tensor

TYPES = ("f32", "f16", "q4_0", "q8_0", "q4_K")



def weights(type_, n, k, batches=(1, 1), seed=0):
    """(Tensor, float32 values): ``batches`` = (ne02, ne03)."""
    rng = np.random.default_rng(seed)
    shape = (batches[1], batches[0], n)
    if type_ in ("f32", "f16"):
        w = rng.uniform(-1, 1, shape + (k,)).astype(np.float32 if type_ == "f32" else np.float16)
        return Tensor.of(w)
    data = blocks.random_blocks(rng, int(np.prod(shape)), k, type_).reshape(shape + (-1,))
    return Tensor.quantized(data, type_, k)


def activations(m, k, batches=(1, 1), seed=1):
    rng = np.random.default_rng(seed)
    return Tensor.of(rng.uniform(-1, 1, (batches[1], batches[0], m, k)).astype(np.float32))


def check(w, x, branch, *, half, **options):
    p = mul_mat.plan(w, x)
    assert p.choice.branch == branch, p.choice
    out = p.run(**options)
    if half:  # the tiles are staged in half
        wv = Tensor.of(w.values().astype(np.float16).reshape(w.data.shape[:-1] + (w.ne[0],)))
        xv = Tensor.of(x.values().astype(np.float16).reshape(x.data.shape))
        ref = mul_mat.reference(wv, xv)
    else:
        ref = mul_mat.reference(w, x)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-4 * scale)


MM_CASES = []
for t in TYPES:
    k = 256
    MM_CASES.append(pytest.param(t, 128, 64, k, (1, 1), (2, 1), id=f"{t}-full-r2"))
    MM_CASES.append(pytest.param(t, 100, 33, k, (1, 1), (1, 2), id=f"{t}-edge-r3"))
    if t in ("f32", "f16"):
        MM_CASES.append(pytest.param(t, 70, 40, 80, (2, 1), (2, 1), id=f"{t}-edge-k80"))


@pytest.mark.parametrize("type_,n,m,k,wb,xb", MM_CASES)
def test_mul_mm(type_, n, m, k, wb, xb):
    check(weights(type_, n, k, wb), activations(m, k, xb), "mul_mm", half=True)


MV_CASES = []
for t in TYPES:
    MV_CASES.append(pytest.param(t, 4096, 4096, (1, 1), (1, 1), id=f"{t}-decode-4096"))
    MV_CASES.append(pytest.param(t, 37, 512, (1, 1), (3, 1), id=f"{t}-partial-rows-r2"))


@pytest.mark.parametrize("type_,n,k,wb,xb", MV_CASES)
def test_mul_mv(type_, n, k, wb, xb):
    w, x = weights(type_, n, k, wb), activations(1, k, xb)
    choice = mul_mat.route(w, x)
    rows_per_group = choice.nr0 if type_ in mul_mat.MV_ROWS_PER_THREADGROUP else choice.nr0 * choice.nsg
    if n % rows_per_group == 0:
        check(w, x, "mul_mv", half=False)
        return
    # The last group of rows is partial: the kernel reads the weight rows past the last one
    # and discards their sums (helper_mv_reduce_and_write stores rows below ne01 only), so it
    # relies on memory after the tensor. The emulator lets those reads return 0 with a warning.
    with pytest.warns(PortabilityWarning, match=r"read outside a buffer .*'src0'"):
        check(w, x, "mul_mv", half=False, oob_reads="warn")


def test_bench_row_is_llamas_q4_0_decode_kernel():
    """`gemmglossary bench emulator`'s llama.cpp row: q4_0 mul_mv on the qmv row's matrix."""
    from gemmglossary.bench import matvec

    case = matvec.build("llama_q4_0", 512)
    assert case.plan.host_names == ["kernel_mul_mv_q4_0_f32"] and case.plan.choice.branch == "mul_mv"
    assert case.label == "llama.cpp q4_0 512×512"


def test_bench_row_is_timed_and_checked():
    from gemmglossary.bench import matvec

    (row,) = matvec.bench(["llama_q4_0"], repeats=1, n=512)
    assert row[2] is not None, row[3]  # else: the reason the benchmark printed
    assert row[-1] and row[2] > 0 and row[3] > 0, row
