"""Metal 4 tensor operations on the emulator: MetalPerformancePrimitives' matmul2d.

What is checked: the documented semantics (tensor extents and slices, transposed operands,
multiply and multiply-accumulate, element types), the layout the emulator chose where Apple
leaves it to the implementation (MLX's BaseNAXFrag), the PortabilityWarning for a kernel
that depends on that layout, and the uniform-control-flow rule of execution_simdgroup.
The test kernels are in one source, compiled once; kernels/nax_matmul.metal is the page's.

Tolerances: the emulator sums float32 products in k order and rounds once to the
destination type, so against a float64 reference |error| ≤ 1e-5·K for float outputs, and
half an ulp of the output type on top of that for half and bfloat outputs.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from gemmglossary.emulator import (CompileError, LaunchError, OutOfBoundsError, PortabilityWarning,
                                   SimdgroupDivergenceError, load_kernel)
from gemmglossary.paths import kernels_dir

BF16 = np.dtype(ml_dtypes.bfloat16)

SOURCE = r"""
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
using ext2 = dextents<int32_t, 2>;

// D (M x N) = op(A) op(B) [+ D]: one run with tensor operands; the matrices are at most
// 32 x 48, K any (dynamic k: read from the tensors)
template <typename TI, typename TO, bool TL, bool TR, bool ACC, bool RELAXED>
kernel void tensor_mm(device TI* A [[buffer(0)]], device TI* B [[buffer(1)]], device TO* D [[buffer(2)]],
                      constant int* MNK [[buffer(3)]]) {
  const int M = MNK[0], N = MNK[1], K = MNK[2];
  auto tA = tensor<device TI, ext2, tensor_inline>(A, TL ? ext2(M, K) : ext2(K, M));
  auto tB = tensor<device TI, ext2, tensor_inline>(B, TR ? ext2(K, N) : ext2(N, K));
  auto tD = tensor<device TO, ext2, tensor_inline>(D, ext2(N, M));
  constexpr auto desc = matmul2d_descriptor(32, 48, static_cast<int>(dynamic_extent), TL, TR, RELAXED,
      ACC ? matmul2d_descriptor::mode::multiply_accumulate : matmul2d_descriptor::mode::multiply);
  matmul2d<desc, execution_simdgroup> op;
  op.run(tA, tB, tD);
}
template [[host_name("mm_half_float_nn")]] [[kernel]] decltype(tensor_mm<half, float, false, false, false, false>) tensor_mm<half, float, false, false, false, false>;
template [[host_name("mm_bfloat_bfloat_tn_acc")]] [[kernel]] decltype(tensor_mm<bfloat, bfloat, true, false, true, false>) tensor_mm<bfloat, bfloat, true, false, true, false>;
template [[host_name("mm_float_float_nt_relaxed")]] [[kernel]] decltype(tensor_mm<float, float, false, true, false, true>) tensor_mm<float, float, false, true, false, true>;
template [[host_name("mm_half_half_tt_acc")]] [[kernel]] decltype(tensor_mm<half, half, true, true, true, false>) tensor_mm<half, half, true, true, true, false>;

// the layout: each lane stores 1000*lane + i into element i of a 32 x 32 destination, and
// reports get_multidimensional_index(i)
kernel void lane_map(device float* out [[buffer(0)]], device int* where [[buffer(1)]],
                     ushort lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc = matmul2d_descriptor(32, 32, 16);
  matmul2d<desc, execution_simdgroup> op;
  auto t = tensor<device float, ext2, tensor_inline>(out, ext2(32, 32));
  auto d = op.get_destination_cooperative_tensor<decltype(t), decltype(t), float>();
  for (uint16_t i = 0; i < d.get_capacity(); ++i) {
    d[i] = 1000.0f * lane + i;
    auto idx = d.get_multidimensional_index(i);
    where[(lane * d.get_capacity() + i) * 2] = idx[0];
    where[(lane * d.get_capacity() + i) * 2 + 1] = idx[1];
  }
  d.store(t);
}

// 16 x 16 x 16 with operands placed by index where MLX's BaseNAXFrag puts them (FILL 0),
// loaded from tensors (FILL 1), or an accumulator of ones written by index (FILL 2)
kernel void fill(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                 constant int& how [[buffer(3)]], ushort lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, 16, false, false, true, matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroup> op;
  auto tA = tensor<device half, ext2, tensor_inline>(A, ext2(16, 16));
  auto tB = tensor<device half, ext2, tensor_inline>(B, ext2(16, 16));
  auto tC = tensor<device float, ext2, tensor_inline>(C, ext2(16, 16));
  auto a = op.get_left_input_cooperative_tensor<half, half, float>();
  auto b = op.get_right_input_cooperative_tensor<half, half, float>();
  auto c = op.get_destination_cooperative_tensor<decltype(a), decltype(b), float>();
  const short fm = ((lane >> 4) & 1) * 4 + ((lane >> 1) & 3), fn = (((lane >> 3) & 1) * 2 + (lane & 1)) * 4;
  if (how == 0) {
    for (short i = 0; i < 8; ++i) {
      a[i] = A[(fm + (i / 4) * 8) * 16 + fn + i % 4];
      b[i] = B[(fm + (i / 4) * 8) * 16 + fn + i % 4];
      c[i] = 0.0f;
    }
  } else {
    a.load(tA);
    b.load(tB);
    for (uint16_t i = 0; i < c.get_capacity(); ++i) c[i] = how == 2 ? 1.0f : 0.0f;
  }
  op.run(a, b, c);
  c.store(tC);
}

// misuse
kernel void misuse(device half* A [[buffer(0)]], device float* C [[buffer(1)]], constant int& what [[buffer(2)]],
                   ushort lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, 16);
  matmul2d<desc, execution_simdgroup> op;
  auto tA = tensor<device half, ext2, tensor_inline>(A, ext2(16, 16));
  auto tC = tensor<device float, ext2, tensor_inline>(C, ext2(16, 16));
  if (what == 0) {
    if (lane >= 16) return;
    op.run(tA, tA, tC);
  } else if (what == 1) {
    if (lane < 16) op.run(tA, tA, tC);
    else op.run(tA, tA, tC);
  } else if (what == 2) {
    auto a = op.get_left_input_cooperative_tensor<half, half, float>();
    for (short i = 0; i < 16; ++i) a[i] = half(1.0f);  // the capacity is 8
  } else {
    auto mine = tA.slice(0, lane % 2);  // a different view on odd lanes
    op.run(mine, tA, tC);
  }
}
"""


def line(text: str, nth: int = 1) -> int:
    """1-based line of SOURCE holding the nth occurrence of text."""
    hits = [i + 1 for i, ln in enumerate(SOURCE.splitlines()) if text in ln]
    return hits[nth - 1]


@pytest.fixture(scope="module")
def kernels():
    return lambda name: load_kernel(SOURCE, name)


def _rand(shape, dtype, rng):
    return rng.uniform(-1, 1, shape).astype(np.float32).astype(dtype)


@pytest.mark.parametrize("name,ti,to,tl,tr,acc", [
    ("mm_half_float_nn", np.float16, np.float32, False, False, False),
    ("mm_bfloat_bfloat_tn_acc", BF16, BF16, True, False, True),
    ("mm_float_float_nt_relaxed", np.float32, np.float32, False, True, False),
    ("mm_half_half_tt_acc", np.float16, np.float16, True, True, True),
])
def test_tensor_operands(kernels, name, ti, to, tl, tr, acc):
    """Extents stop the op: the 32 x 48 op computes only the M x N corner, reads zeros
    past K and leaves everything past D's extents alone."""
    M, N, K = 20, 40, 37
    rng = np.random.default_rng(sum(map(ord, name)))
    a = _rand((K, M) if tl else (M, K), ti, rng)
    b = _rand((N, K) if tr else (K, N), ti, rng)
    d0 = _rand((M, N), to, rng)
    d = np.concatenate([d0.ravel(), np.full(8, 7, to)])  # a guard after D's last element
    kernels(name)(a, b, d, np.array([M, N, K], np.int32), threads=32, threads_per_threadgroup=32)
    A = (a.T if tl else a).astype(np.float64)
    B = (b.T if tr else b).astype(np.float64)
    ref = A @ B + (d0.astype(np.float64) if acc else 0)
    ulp = {np.dtype(np.float32): 0, np.dtype(np.float16): 2.0**-11, BF16: 2.0**-8}[np.dtype(to)]
    np.testing.assert_allclose(d[:M * N].reshape(M, N).astype(np.float64), ref, atol=1e-5 * K, rtol=ulp)
    assert (d[M * N:].astype(np.float32) == 7).all(), "a store past the destination's extents"


def test_layout_is_mlx_basenaxfrag(kernels):
    """Where Apple leaves the element-to-lane mapping to the implementation, the emulator
    uses the one MLX's BaseNAXFrag computes, per 16x16 block, blocks in row-major order."""
    out = np.zeros((32, 32), np.float32)
    where = np.zeros((32, 32, 2), np.int32)
    kernels("lane_map")(out, where, threads=32, threads_per_threadgroup=32)
    for lane in range(32):
        qid = lane >> 2
        fm, fn = (qid & 4) | ((lane >> 1) & 3), ((qid & 2) | (lane & 1)) * 4
        for i in range(32):
            block, e = divmod(i, 8)
            row = (block // 2) * 16 + fm + (e >> 2) * 8
            col = (block % 2) * 16 + fn + e % 4
            assert out[row, col] == 1000 * lane + i, (lane, i)
            assert tuple(where[lane, i]) == (col, row), (lane, i)


def test_the_pages_lane_table_is_the_emulators_layout(kernels):
    """docs/emulator.md ("Metal 4 tensor operations") draws one 16x16 block: rows r and r + 8
    of each column group belong to one lane. It must be what the emulator computes with."""
    out = np.zeros((32, 32), np.float32)
    kernels("lane_map")(out, np.zeros((32, 32, 2), np.int32), threads=32, threads_per_threadgroup=32)
    lane = out.astype(int) // 1000
    page = (Path(__file__).resolve().parents[2] / "docs/emulator.md").read_text()
    rows = re.findall(r"^\| \*\*(\d+), (\d+)\*\* \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", page, re.M)
    assert len(rows) == 8, "the lane table is gone from the page"
    for r0, r8, *lanes in rows:
        for group, ln in enumerate(map(int, lanes)):
            cols = slice(4 * group, 4 * group + 4)
            assert (lane[int(r0), cols] == ln).all() and (lane[int(r8), cols] == ln).all(), (r0, group)


@pytest.mark.parametrize("how", [0, 1, 2], ids=["by-index", "load", "constant"])
def test_layout_dependence_warns(kernels, how):
    rng = np.random.default_rng(how)
    a, b = _rand((16, 16), np.float16, rng), _rand((16, 16), np.float16, rng)
    c = np.zeros((16, 16), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernels("fill")(a, b, c, np.int32(how), threads=32, threads_per_threadgroup=32)
    ref = a.astype(np.float64) @ b.astype(np.float64) + (1.0 if how == 2 else 0.0)
    np.testing.assert_allclose(c, ref, atol=1e-5 * 16)
    portability = [w for w in caught if issubclass(w.category, PortabilityWarning)]
    if how == 0:
        assert len(portability) == 1
        msg = str(portability[0].message)
        assert f"<source>:{line('a[i] = A[')} fills the left input" in msg, msg
        assert f"run at <source>:{line('op.run(a, b, c);')}" in msg, msg
        assert "BaseNAXFrag" in msg
    else:
        assert not portability, [str(w.message) for w in portability]


def test_run_reached_by_part_of_the_simdgroup(kernels):
    with pytest.raises(SimdgroupDivergenceError) as e:
        kernels("misuse")(np.zeros(256, np.float16), np.zeros(256, np.float32), np.int32(0),
                          threads=32, threads_per_threadgroup=32)
    msg = str(e.value)
    assert f"matmul2d run at <source>:{line('op.run(tA, tA, tC);')}" in msg and "lanes 0-15 only" in msg and "lanes 16-31 finished the kernel without reaching it" in msg, msg


def test_runs_at_two_places(kernels):
    with pytest.raises(SimdgroupDivergenceError) as e:
        kernels("misuse")(np.zeros(256, np.float16), np.zeros(256, np.float32), np.int32(1),
                          threads=32, threads_per_threadgroup=32)
    msg = str(e.value)
    assert f"matmul2d::run at <source>:{line('if (lane < 16) op.run')}" in msg, msg
    assert f"<source>:{line('else op.run')}" in msg, msg


def test_element_past_the_capacity(kernels):
    with pytest.raises(OutOfBoundsError) as e:
        kernels("misuse")(np.zeros(256, np.float16), np.zeros(256, np.float32), np.int32(2),
                          threads=32, threads_per_threadgroup=32)
    msg = str(e.value)
    assert "cooperative tensor (left input)" in msg and "index 8" in msg and f"<source>:{line('a[i] = half(1.0f)')}" in msg, msg


def test_lanes_pass_different_tensors(kernels):
    at = line("op.run(mine, tA, tC);")
    with pytest.raises(SimdgroupDivergenceError, match=rf"run at <source>:{at}: lanes 0 and 1 .* different tensors"):
        kernels("misuse")(np.zeros(256, np.float16), np.zeros(256, np.float32), np.int32(3),
                          threads=32, threads_per_threadgroup=32)


def test_partial_simdgroup_is_a_launch_error(kernels):
    with pytest.raises(LaunchError, match=r"simdgroup 0 has 16 threads"):
        kernels("misuse")(np.zeros(256, np.float16), np.zeros(256, np.float32), np.int32(1),
                          threads=16, threads_per_threadgroup=16)


UNSUPPORTED = {
    "execution_simdgroups": ("""
kernel void k(device half* A [[buffer(0)]], device float* C [[buffer(1)]]) {
  auto t = tensor<device half, ext2, tensor_inline>(A, ext2(16, 16));
  auto c = tensor<device float, ext2, tensor_inline>(C, ext2(16, 16));
  matmul2d<matmul2d_descriptor(16, 16, 16), execution_simdgroups<4>> op;
  op.run(t, t, c);
}
""", "matmul2d<matmul2d_descriptor", r"execution_simdgroups<N>.*execution_simdgroup scope only"),
    "tensor_handle": ("""
kernel void k(tensor<device half, ext2> A [[buffer(0)]]) {
  (void)A;
}
""", "kernel void k", r"tensor_handle .* not supported by the emulator"),
}


@pytest.mark.parametrize("what", sorted(UNSUPPORTED))
def test_unsupported_is_a_compile_error_at_the_line(what):
    body, at, message = UNSUPPORTED[what]
    src = SOURCE.split("template <typename TI")[0] + body
    where = next(i for i, ln in enumerate(src.splitlines(), 1) if at in ln)
    with pytest.raises(CompileError, match=message) as e:
        load_kernel(src, "k")
    assert str(e.value).startswith(f"<source>:{where}:"), str(e.value)


@pytest.mark.parametrize("shape", [(64, 64, 32), (50, 70, 45), (1, 1, 1), (130, 33, 100)],
                         ids=lambda s: "x".join(map(str, s)))
def test_first_party_nax_matmul(shape):
    """kernels/nax_matmul.metal, the page's kernel: documented API only, so no warning."""
    M, N, K = shape
    rng = np.random.default_rng(M * N * K)
    a, b = _rand((M, K), np.float16, rng), _rand((K, N), np.float16, rng)
    c = np.zeros((M, N), np.float32)
    k = load_kernel(kernels_dir() / "nax_matmul.metal", "nax_matmul")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PortabilityWarning)
        k(a, b, c, np.uint32(M), np.uint32(N), np.uint32(K),
          threadgroups=(-(-N // 64), -(-M // 64), 1), threads_per_threadgroup=(128, 1, 1))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-5 * K)
