"""MLX's affine quantized matmul (quantized.h), unmodified, on the emulator against numpy.

The reference is our own numpy quantization (gemmglossary.mlx.affine), proved bit for bit
against the wheel's mx.quantize on MLX's CPU backend, then x @ dequantize(W)ᵀ (or x @ W)
in float64. MLX's routing (choose_kernel) is checked on both sides of every threshold
without running anything.

Each execution case is one compile. The 15 cases give each of qmv_fast, qmv, qvm, qmm_t and
qmm_n each dtype once, each (bits, group size) pair of {4, 8} × {32, 64, 128} at least once,
a batch (with W broadcast along it once) and none, qmm_t with N a multiple of 32 and not,
and the kernels' edge paths: qmv with fewer than 8 outputs (every read guarded) and with a
last tile moved back over computed rows, a K tail shorter than a block, K shorter than one
block; qvm with K not a multiple of 32 and a simdgroup past the last column; qmm_t and qmm_n
with a partial last row tile; qmm_n with K not a multiple of 32. The tile shapes come from
MLX's routing on a base M1 (its qmv batch limit is 14 rows for K, N ≤ 2048).

Tolerances: the kernels dequantize and accumulate in float32 (float32 |error| ≤ 1e-4·|value|
+ 1e-4); float16 and bfloat16 round x, the scales and biases (part of the reference: it uses
the stored ones) and the output: rtol 1e-2 / 2e-2. One more rounding in MLX 0.32.1: below 8
bits, qmv_fast and qmv (load_vector in quantized.h) add x four or eight values at a time in
x's own type before the float32 sum that multiplies the biases; in bfloat16 (8 significant
bits) that put 31 of the 200 outputs of the 4-bit bfloat16 qmv_fast case outside its
tolerance on random x (measured here). Their bfloat16 cases take x on a grid of eighths in [-1, 1],
where every such partial sum is exact, so the tolerance above still measures the kernel.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.emulator.errors import OutOfBoundsError, PortabilityWarning
from gemmglossary.mlx import affine, quantized
from gemmglossary.mlx.matmul import Device
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.paths import kernels_dir


TOLERANCE = {np.dtype(np.float32): dict(atol=1e-4, rtol=1e-4), np.dtype(np.float16): dict(atol=2e-2, rtol=1e-2),
             bfloat16: dict(atol=5e-2, rtol=2e-2)}
F32, F16, BF16 = np.float32, np.float16, bfloat16


def weights(rng, shape, dtype, group_size, bits):
    """A quantized W whose groups have different ranges (and one group of zeros)."""
    w = rng.standard_normal(shape) * rng.uniform(0.1, 2.0, (*shape[:-1], 1))
    w[..., :1, :group_size] = 0.0
    return affine.quantize(w.astype(dtype), group_size, bits)


def _cases():
    rng = np.random.default_rng(0)

    def case(name, kernel, dtype, gs, bits, x_shape, w_shape, transpose=True, expect=None):
        x = rng.uniform(-1, 1, x_shape)
        if dtype is BF16 and kernel in ("qmv_fast", "qmv"):
            x = np.round(x * 8) / 8  # see the tolerances above
        return (name, x.astype(dtype), weights(rng, w_shape, dtype, gs, bits), transpose, expect or kernel)

    yield case("qmv_fast-f32", "qmv_fast", F32, 64, 4, (1, 512), (16, 512))
    yield case("qmv_fast-f16-batched", "qmv_fast", F16, 32, 8, (2, 3, 256), (2, 24, 256))
    yield case("qmv_fast-bf16-rows-fold-into-M", "qmv_fast", BF16, 128, 4, (5, 1, 1024), (40, 1024))
    yield case("qmv-f32-last-tile-moved-back", "qmv", F32, 128, 8, (1, 384), (22, 384))
    yield case("qmv-f16-6-outputs-K-below-one-block", "qmv", F16, 32, 4, (1, 96), (6, 96))
    yield case("qmv-bf16-batched", "qmv", BF16, 64, 8, (2, 2, 192), (2, 16, 192))
    yield case("qvm-f32-batched-K-tail", "qvm", F32, 32, 4, (2, 1, 100), (2, 100, 64), transpose=False)
    yield case("qvm-f16", "qvm", F16, 64, 8, (3, 64), (64, 128), transpose=False)
    yield case("qvm-bf16-simdgroup-past-N", "qvm", BF16, 32, 4, (1, 40), (40, 96), transpose=False)
    yield case("qmm_t-f32-batched-unaligned-N", "qmm_t", F32, 32, 8, (2, 20, 64), (2, 40, 64))
    yield case("qmm_t-f16-aligned-N", "qmm_t", F16, 128, 4, (40, 128), (64, 128))
    yield case("qmm_t-bf16-W-broadcast", "qmm_t", BF16, 64, 4, (3, 33, 128), (1, 50, 128))
    yield case("qmm_n-f32-K-tail", "qmm_n", F32, 128, 4, (36, 70), (70, 128), transpose=False)
    yield case("qmm_n-f16-batched", "qmm_n", F16, 128, 8, (2, 8, 64), (2, 64, 128), transpose=False)
    yield case("qmm_n-bf16", "qmm_n", BF16, 32, 8, (33, 96), (96, 64), transpose=False)


CASES = list(_cases())


def reference(x, w, transpose):
    dense = affine.dequantize(w)
    return x.astype(np.float64) @ (np.swapaxes(dense, -1, -2) if transpose else dense)


def reads_past_w(kernel: str, w) -> bool:
    """qmm_t with N not a multiple of its 32-row tile: see test_qmm_t_edge_tile_reads_past_w."""
    return kernel == "qmm_t" and w.wq.shape[-2] % 32 != 0


@pytest.mark.parametrize("x,w,transpose,kernel", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_kernel_matches_numpy(x, w, transpose, kernel):
    plan = quantized.plan(x, w, transpose=transpose)
    (name,) = plan.host_names
    assert name.startswith(f"affine_{kernel}_")
    if reads_past_w(kernel, w):
        with pytest.warns(PortabilityWarning, match=r"read outside a buffer.*quantized\.h:\d+"):
            out = plan.run(oob_reads="warn")
    else:
        out = plan.run()
    np.testing.assert_allclose(out.astype(np.float64), reference(x, w, transpose), **TOLERANCE[x.dtype])


def test_qmm_t_edge_tile_reads_past_w():
    """In MLX 0.32.1, QuantizedBlockLoader::load_safe (quantized.h) tests a row of W against
    the tile's K extent instead of its row count when it loads along K (qmm_t), so the last
    tile of an N that is not a multiple of 32 reads the scales, biases and weights of rows
    past N. Those rows only feed output columns that the masked store drops. The emulator
    reports the read; allowing out-of-bounds reads gives the right result (the cases above)."""
    _, x, w, transpose, kernel = next(c for c in CASES if reads_past_w(c[4], c[2]))
    plan = quantized.plan(x, w, transpose=transpose)
    with pytest.raises(OutOfBoundsError, match=r"out-of-bounds read of '(scales|biases|w)'.*quantized\.h:\d+"):
        plan.run()


def test_cases_cover_the_design():
    """The covering design above, checked: every kernel × dtype, every bits × group size, and
    the instantiation file holds exactly the kernels the cases run."""
    plans = [quantized.plan(x, w, transpose=t) for _, x, w, t, _ in CASES]
    kernel_dtype = {(k, np.dtype(x.dtype)) for _, x, _, _, k in CASES}
    assert len(kernel_dtype) == 5 * 3
    assert {(w.bits, w.group_size) for _, _, w, _, _ in CASES} == {(b, g) for b in (4, 8) for g in (32, 64, 128)}
    names = sorted(p.host_names[0] for p in plans)
    text = (kernels_dir() / quantized.SOURCE).read_text()
    assert sorted(re.findall(r'host_name\("([^"]+)"\)', text)) == names
    assert any("_batch_1" in n for n in names) and any("_alN_true" in n for n in names)


def test_unbatched_launch_leaves_batch_buffers_unbound():
    _, x, w, t, _ = CASES[0]
    launch = quantized.plan(x, w, transpose=t).launches[0]
    assert sorted(launch.buffers) == [0, 1, 2, 3, 4, 5, 6]
    _, x, w, t, _ = CASES[9]  # batched qmm_t: sizes K, N, M, then 8 batch buffers
    launch = quantized.plan(x, w, transpose=t).launches[0]
    assert sorted(launch.buffers) == list(range(16))
    assert list(launch.buffers[12]) == [2, 40, 16]  # W's shape in uint32 words: 64 values of 8 bits
    assert launch.threadgroups == (2, 1, 2) and launch.threads_per_threadgroup == (32, 2, 2)


def test_quantize_matches_mlx_bit_for_bit():
    """Our numpy quantization gives MLX's packed words, scales and biases exactly (MLX CPU),
    for every bit width and group size, in every dtype; dequantization agrees too."""
    mx = pytest.importorskip("mlx.core")
    to_mx = {np.dtype(F32): mx.float32, np.dtype(F16): mx.float16, BF16: mx.bfloat16}
    rng = np.random.default_rng(1)
    for dtype in (F32, F16, BF16):
        for bits in affine.BITS:
            for gs in affine.GROUP_SIZES:
                w = (rng.standard_normal((6, 256)) * rng.uniform(0.01, 3, (6, 1))).astype(dtype)
                w[1, :gs] = 0  # a group of zeros: scale 1e-7 (negative), bias 0
                w[2, gs:2 * gs] = np.abs(w[2, gs:2 * gs])  # only positive values
                ours = affine.quantize(w, gs, bits)
                wq, scales, biases = mx.quantize(mx.array(w.astype(np.float32)).astype(to_mx[np.dtype(dtype)]),
                                                 group_size=gs, bits=bits)
                where = f"{np.dtype(dtype)} bits={bits} group_size={gs}"
                assert np.array_equal(np.array(wq), ours.wq), where
                assert np.array_equal(np.array(scales.astype(mx.float32)), ours.scales.astype(np.float32)), where
                assert np.array_equal(np.array(biases.astype(mx.float32)), ours.biases.astype(np.float32)), where
                theirs = mx.dequantize(wq, scales.astype(mx.float32), biases.astype(mx.float32), group_size=gs, bits=bits)
                np.testing.assert_allclose(np.array(theirs), affine.dequantize(ours), rtol=1e-6, atol=1e-6)


def test_packing_is_low_bits_first():
    """Word 0 of a 4-bit row holds weights 0..7 from its least significant nibble up."""
    q = np.arange(16, dtype=np.uint32)[None, :]
    assert affine.pack(q, 4)[0, 0] == 0x76543210 and affine.pack(q, 4)[0, 1] == 0xFEDCBA98
    assert affine.pack(np.array([[1, 2, 3, 4]]), 8)[0, 0] == 0x04030201
    for bits in affine.BITS:
        q = np.random.default_rng(bits).integers(0, 2**bits, (3, 64))
        assert np.array_equal(affine.unpack(affine.pack(q, bits), bits), q)


def test_mlx_quantized_matmul_agrees_with_the_reference():
    """mx.quantized_matmul (CPU) on our quantized W gives the reference product, for both layouts."""
    mx = pytest.importorskip("mlx.core")
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (3, 128)).astype(np.float32)
    for transpose, shape in ((True, (48, 128)), (False, (128, 64))):
        w = weights(rng, shape, np.float32, 64, 4)
        theirs = mx.quantized_matmul(mx.array(x), mx.array(w.wq), mx.array(w.scales), mx.array(w.biases),
                                     transpose=transpose, group_size=64, bits=4)
        np.testing.assert_allclose(np.array(theirs), reference(x, w, transpose), rtol=1e-4, atol=1e-4)


M1, M3, M5, ULTRA = Device("g", 13), Device("g", 15), Device("s", 17), Device("d", 14)


@pytest.mark.parametrize("problem,transpose,gs,bits,device,kernel", [
    # transposed weights (x @ Wᵀ), below the batch limit: matrix-vector kernels
    ((1, 4096, 4096, 1), True, 64, 4, M1, "qmv_fast"),
    ((1, 4096, 4096, 1), True, 64, 8, M1, "qmv_fast"),
    ((1, 4096, 4000, 1), True, 64, 4, M1, "qmv"),          # K not a multiple of 512
    ((1, 4095, 4096, 1), True, 64, 4, M1, "qmv"),          # N not a multiple of 8
    ((1, 512, 768, 1), True, 64, 8, M1, "qmv_fast"),       # 8 bits: K a multiple of 256 suffices
    ((1, 512, 768, 1), True, 64, 4, M1, "qmv"),
    ((1, 512, 128, 1), True, 64, 4, M1, "qmv_quad"),       # K of 64 or 128
    ((1, 512, 128, 1), True, 64, 6, M1, "qmv"),            # ... with a power-of-2 bit width only
    ((5, 4096, 4096, 1), True, 64, 4, M1, "qmv_fast"),     # several rows: one simdgroup row each on M1/M2
    ((5, 4096, 4096, 1), True, 64, 4, M3, "qmv_wide"),     # ... the wide kernel from M3
    ((1, 4096, 4096, 1), True, 64, 4, M3, "qmv_fast"),
    # the batch limit: 14 rows on M1 for K, N ≤ 2048, 10 to 4096, then 6
    ((13, 2048, 2048, 1), True, 64, 4, M1, "qmv_fast"),
    ((14, 2048, 2048, 1), True, 64, 4, M1, "qmm_t_splitk"),
    ((9, 4096, 4096, 1), True, 64, 4, M1, "qmv_fast"),
    ((10, 4096, 4096, 1), True, 64, 4, M1, "qmm_t_splitk"),
    ((6, 8192, 4096, 1), True, 64, 4, M1, "qmm_t_splitk"),
    ((31, 2048, 2048, 1), True, 64, 4, ULTRA, "qmv_fast"),
    ((32, 2048, 2048, 1), True, 64, 4, ULTRA, "qmm_t_splitk"),
    ((32, 2048, 2048, 1), True, 64, 4, M5, "qmv_wide"),      # M5's limit is 33
    ((33, 2048, 2048, 1), True, 64, 4, M5, "qmm_t_splitk"),  # split K is tried before NAX
    # split K needs whole groups and whole 32-wide steps; else (or with a batch) plain qmm_t
    ((64, 512, 128, 1), True, 128, 4, M1, "qmm_t"),         # K / group size = 1
    ((64, 512, 320, 1), True, 64, 4, M1, "qmm_t_splitk"),   # 32 tiles: 16 partitions wanted, 5 fit K
    ((512, 8192, 4096, 1), True, 64, 4, M1, "qmm_t"),       # 4096 tiles: one partition
    ((64, 512, 4096, 3), True, 64, 4, M1, "qmm_t"),         # a batch
    ((64, 512, 4096, 3), True, 64, 4, M5, "qmm_t_nax"),
    ((64, 512, 4032, 3), True, 64, 4, M5, "qmm_t_nax"),
    ((64, 512, 4000, 3), True, 32, 4, M5, "qmm_t"),         # K not a multiple of 64
    # W stored K × N (x @ W)
    ((3, 512, 1023, 1), False, 64, 4, M1, "qvm"),
    ((3, 512, 1024, 1), False, 64, 4, M1, "qvm_split_k"),
    ((4, 512, 1024, 1), False, 64, 4, M1, "qmm_n"),
    ((4, 512, 1024, 1), False, 64, 4, M5, "qmm_n"),
])
def test_choose_kernel(problem, transpose, gs, bits, device, kernel):
    M, N, K, B = problem
    chosen = quantized.choose_kernel(quantized.Problem(M, N, K, B), transpose=transpose, bits=bits, group_size=gs,
                                     device=device)
    assert chosen == kernel


def test_vector_limit_table():
    limits = {f"{d.letter}{d.generation}": [quantized.vector_limit(d, k, n) for k, n in ((2048, 2048), (4096, 2048),
                                                                                       (8192, 4096))]
              for d in (Device("g", 12), M1, M3, Device("s", 16), M5, ULTRA, Device("d", 17))}
    assert limits == {"g12": [18, 12, 10], "g13": [14, 10, 6], "g15": [13, 15, 13], "s16": [13, 15, 13],
                      "s17": [33, 25, 13], "d14": [32, 18, 12], "d17": [32, 18, 12]}


def test_kernels_not_planned_say_why():
    rng = np.random.default_rng(3)
    w = weights(rng, (64, 128), np.float32, 64, 4)
    with pytest.raises(NotImplementedError, match="qmv_quad"):
        quantized.plan(rng.uniform(-1, 1, (1, 128)).astype(np.float32), w)
