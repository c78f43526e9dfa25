"""Constructs of real Metal code, one small kernel each (kernels/constructs.metal), checked
against numpy or exact values; the file is compiled once for the whole module."""

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import (CompileError, DataRaceError, OutOfBoundsError, PortabilityError, PortabilityWarning,
                                   load_kernel)

SRC = Path(__file__).parent / "kernels" / "constructs.metal"


@pytest.fixture(scope="module")
def kernel():
    return lambda name, **kw: load_kernel(SRC, name, **kw)


def test_uniform_values(kernel):
    out = np.zeros(4 * 3, np.int32)
    kernel("uniform_values")(np.array([23], np.int32), out, threads=3, threads_per_threadgroup=3)
    iters = 23 // 4
    for i, row in enumerate(out.reshape(3, 4)):
        assert row.tolist() == [iters, 23 - 4 * iters, sum(range(iters)), 8 + i]


def _quads(a):
    return a.reshape(-1, 4)


def test_quad_group_functions(kernel):
    v = (np.arange(32) * 7 % 3 + 1).astype(np.int32)  # 1..3
    out = np.zeros(32 * 24, np.float32)
    kernel("quad_fns")(v, out, threads=32, threads_per_threadgroup=32)
    got = out.reshape(32, 24)
    f = v.astype(np.float32)
    for g, (qv, qf) in enumerate(zip(_quads(v), _quads(f))):
        for q in range(4):
            r = got[g * 4 + q]
            assert r[0] == qf.sum() and r[1] == qf.prod() and r[2] == qf.max() and r[3] == qf.min()
            assert r[4] == np.bitwise_and.reduce(qv) and r[5] == np.bitwise_or.reduce(qv)
            assert r[6] == np.bitwise_xor.reduce(qv)
            assert r[7] == qf[:q].sum() and r[8] == qf[:q + 1].sum()
            assert r[9] == qf[:q].prod() and r[10] == qf[:q + 1].prod()
            assert r[11] == qf[(q + 1) % 4] and r[12] == qf[q ^ 3]
            assert r[13] == (qf[q - 1] if q >= 1 else qf[q]), "shuffle_up keeps the lowest lane's value"
            assert r[14] == (qf[q + 2] if q + 2 < 4 else qf[q]), "shuffle_down keeps the upper lanes' values"
            assert r[15] == qf[(q - 1) % 4] and r[16] == qf[(q + 3) % 4]
            assert r[17] == qf[2] and r[18] == qf[0]
            assert r[19] == float((qv > 1).all()) and r[20] == float((qv > 2).any())
            assert r[21] == sum(1 << k for k in range(4) if qv[k] > 1)
            # fill_up by 1: lane 0 takes the fill value (-f) of lane 3
            assert r[22] == (qf[q - 1] if q >= 1 else -qf[3])
            # fill_down by 1 within halves of 2 lanes: the upper lane of each half takes the
            # fill value of the half's lower lane
            half = q // 2 * 2
            assert r[23] == (qf[q + 1] if q % 2 == 0 else -qf[half])


def test_quad_group_functions_over_active_lanes(kernel):
    v = (np.arange(32) * 5 % 3 + 1).astype(np.int32)
    out = np.full(32 * 8, -7, np.float32)
    kernel("quad_active")(v, out, threads=32, threads_per_threadgroup=32)
    got = out.reshape(32, 8)
    f = v.astype(np.float32)
    for g, qf in enumerate(_quads(f)):
        act = qf[:3]
        for q in range(3):
            r = got[g * 4 + q]
            assert r[0] == act.sum() and r[1] == act[:q + 1].sum() and r[2] == act[:q].prod()
            assert r[3] == float((act > 1).all())
            assert r[4] == sum(1 << k for k in range(3) if act[k] > 1)
            assert r[5] == 0b0111 and r[6] == float(q == 0) and r[7] == act[0]
        assert np.all(got[g * 4 + 3] == -7), "a returned lane writes nothing"


def test_simd_and_quad_functions_on_threadgroup_elements(kernel):
    x = (np.arange(32) % 5 * 0.5 + 0.5).astype(np.float32)
    out = np.zeros(32 * 10, np.float32)
    kernel("simd_on_threadgroup")(x, out, threads=32, threads_per_threadgroup=32)
    got = out.reshape(32, 10)
    for t in range(32):
        r = got[t]
        assert r[0] == np.float32(x.sum()) and r[1] == x.max()
        assert r[2] == x[t // 4 * 4:t // 4 * 4 + 4].sum()
        assert r[3] == x[(t + 3) % 32]
        np.testing.assert_allclose(r[4], np.prod(x[:t], dtype=np.float32), rtol=1e-6)
        np.testing.assert_allclose(r[5], np.prod(x[:t + 1], dtype=np.float32), rtol=1e-6)
        assert r[6] == x[5] and r[7] == -x[5]
        assert r[8] == (-x[t + 1] if t < 31 else -x[t])
        assert r[9] == sum(1 << k for k in range(8) if x[k] > 1)


def test_fast_and_precise_keep_float_overloads_when_a_header_adds_bfloat_ones(kernel):
    x = np.array([0.5, 1.25, 2.0], np.float32)
    out = np.zeros(3 * 9, np.float32)
    kernel("fast_precise")(x, out, threads=3, threads_per_threadgroup=3)
    got = out.reshape(3, 9)
    ulp = dict(rtol=2e-7)
    np.testing.assert_allclose(got[:, 0], np.exp(x), **ulp)
    np.testing.assert_allclose(got[:, 1], np.sqrt(x), **ulp)
    np.testing.assert_allclose(got[:, 2], np.exp(x), **ulp)
    np.testing.assert_allclose(got[:, 3], np.sin(x), **ulp)
    np.testing.assert_array_equal(got[:, 4], np.exp(x.astype(np.float16)).astype(np.float32))
    np.testing.assert_allclose(got[:, 5], np.exp(x), **ulp)
    # bfloat arguments reach the header's overloads
    assert got[:, 6].tolist() == [43] * 3 and got[:, 7].tolist() == [46] * 3 and got[:, 8].tolist() == [42] * 3


def test_metal_internal_type_traits(kernel):
    out = np.zeros(6, np.int32)
    kernel("internal_traits")(out, threads=1, threads_per_threadgroup=1)
    assert out.tolist() == [1, 1, 2, 2, 1, 0]


@pytest.mark.parametrize("name,expect", [("angle_close_float", lambda i: 3 * i), ("scaled_4", lambda i: 4 * i),
                                         ("scaled_5", lambda i: 5 * i)])
def test_kernel_template_forms(kernel, name, expect):
    out = np.zeros(6, np.float32)
    kernel(name)(out, threads=6, threads_per_threadgroup=6)
    assert out.tolist() == [expect(i) for i in range(6)]


@pytest.mark.parametrize("use", [0, 1])
def test_threadgroup_array_where_a_pointer_is_expected(kernel, use):
    out = np.zeros(16, np.float32)
    kernel("array_as_pointer")(out, use, threads=8, threads_per_threadgroup=8)
    if use:
        assert out[:8].tolist() == [36] * 8 and out[8:].tolist() == [8 - t for t in range(8)]
    else:
        assert out[:8].tolist() == [-1] * 8 and out[8:].tolist() == [-2] * 8


def test_matrix_types(kernel):
    x = np.arange(1, 13, dtype=np.float32) * 0.5
    out = np.zeros(32, np.float32)
    kernel("matrices")(x, out, threads=1, threads_per_threadgroup=1)
    a = x[:6].reshape(3, 2).T          # columns are stored one after the other
    b = x[6:12].reshape(2, 3).T
    ab = a @ b
    v = np.array([1, -2, 0.5], np.float32)
    e = ab + 2.5 * np.eye(2) - 2.0 * ab * 0.25
    h = np.array([[1.5, -1.0], [2.0, 4.0]]) @ np.array([2.0, 1.0])
    m4 = np.array([[2, 1, 0, 0], [0, 3, 1, 0], [1, 0, 4, 0], [0, 0, 0, 5]], np.float64).T
    expect = [*ab.T.ravel(), *(a @ v), *(np.array([3, -1]) @ a), *e.T.ravel(), *a.ravel(), np.linalg.det(ab),
              *h, np.linalg.det(m4), 9 + 1]
    np.testing.assert_allclose(out[:len(expect)], expect, rtol=1e-5)


def test_explicit_specialization_inside_a_class(kernel):
    out = np.zeros(6, np.float32)
    kernel("member_specialization")(out, threads=1, threads_per_threadgroup=1)
    assert out.tolist() == [2, 3, 10, 20, 4, 30]


def test_explicit_specialization_with_arguments_inside_a_class_is_an_error():
    src = """#include <metal_stdlib>
using namespace metal;
struct S {
  template <int N> int f() { return N; }
  template <> int f<0>() { return -1; }
};
kernel void k(device int* o [[buffer(0)]]) { S s; o[0] = s.f<0>(); }
"""
    with pytest.raises(CompileError, match=r"<source>:5: error: an explicit specialization with template arguments"):
        load_kernel(src, "k")


ASM_SRC = """#include <metal_stdlib>
using namespace metal;
METAL_FUNC float air_exp(float x) __asm("air.fast_exp.f32");
METAL_FUNC float air_unused(float x) __asm("air.unused.f32");
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  o[i] = USE_IT ? air_exp(o[i]) : o[i] + 1.0f;
}
"""


def test_asm_linkage_to_an_air_intrinsic_is_a_compile_error_where_it_is_called():
    with pytest.raises(CompileError) as e:
        load_kernel(ASM_SRC, "k", defines={"USE_IT": 1})
    msg = str(e.value)
    assert msg.startswith("<source>:3:") and "'air.fast_exp.f32' is an undocumented Metal intrinsic" in msg
    assert "Metal 4 compilers reject" in msg and "<source>:6" in msg  # the line that calls it
    # declared but never called: nothing to run, nothing to report
    o = np.zeros(2, np.float32)
    load_kernel(ASM_SRC, "k", defines={"USE_IT": 0})(o, threads=2, threads_per_threadgroup=2)
    assert o.tolist() == [1, 1]


def test_vector_stores_to_threadgroup_memory_are_writes(kernel):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "read before any thread wrote it"
        kernel("vector_stores")(x, out, threads=16, threads_per_threadgroup=16)
    tile = x.reshape(16, 4).copy()
    tile[:, 1] += 100
    copy = np.roll(tile, -1, axis=0)
    tile[:, 2:] = -1
    np.testing.assert_array_equal(out.reshape(16, 4), tile + copy * 1000)


def test_a_race_through_a_vector_store_is_found(kernel):
    with pytest.raises(DataRaceError) as e:
        kernel("vector_store_race")(np.zeros(1, np.float32), threads=2, threads_per_threadgroup=2)
    msg = str(e.value)
    src = str(SRC)
    assert "'tile[5]'" in msg and f"{src}:{_line('reinterpret_cast<threadgroup float4*>(tile)[1]')}" in msg
    assert f"{src}:{_line('out[0] = tile[5]')}" in msg


def test_threads_writing_neighbouring_bytes_do_not_race(kernel):
    x = (np.arange(16) * 5 % 7).astype(np.uint8)
    out = np.zeros(16, np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no "read before any thread wrote it"
        kernel("byte_neighbours")(x, out, threads=16, threads_per_threadgroup=16)
    t = np.arange(16)
    nxt = x[(t + 1) % 16].astype(int)
    np.testing.assert_array_equal(out, np.where(nxt > 1, 100, 0) + nxt + 1)


def test_a_race_on_one_byte_is_found(kernel):
    with pytest.raises(DataRaceError) as e:
        kernel("byte_race")(np.zeros(4, np.uint8), threads=4, threads_per_threadgroup=4)
    assert "'bytes[0]'" in str(e.value) and f"{SRC}:{_line('bytes[t / 2] = uchar(t);')}" in str(e.value)


def test_a_trace_names_the_writer_of_each_byte(kernel):
    from gemmglossary.emulator import Tracing

    x = np.arange(16, dtype=np.uint8)
    out = np.zeros(16, np.uint8)
    trace = kernel("byte_neighbours")(x, out, threads=16, threads_per_threadgroup=16,
                                      trace=Tracing(snapshots=True))
    first = trace.snapshots[0]
    assert first.regions["bytes"].writers().tolist() == list(range(16))
    assert first.regions["flags"].writers().tolist() == list(range(16))
    np.testing.assert_array_equal(first.regions["bytes"].values(np.uint8), x + 1)


def test_members_of_threadgroup_objects(kernel):
    out = np.zeros(4, np.float32)
    rec_size = 40  # Rec: lo, hi, padding to Inner's 8-byte alignment (float2), Inner (16), vals (12), padding
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no race, no "read before any thread wrote it"
        kernel("struct_members")(out, threads=4, threads_per_threadgroup=4,
                                 threadgroup_memory={0: 4 * rec_size})
    t = np.arange(4)
    nxt = (t + 1) % 4
    expect = 2.0 * nxt + 100.0 * nxt + t + (t + 0.5) + 7 + 9 + (t + 1) + (1 + 3 + t) * 1000.0
    np.testing.assert_array_equal(out, expect.astype(np.float32))


def test_a_race_through_a_member_is_found(kernel):
    with pytest.raises(DataRaceError) as e:
        kernel("struct_member_race")(np.zeros(1, np.float32), threads=2, threads_per_threadgroup=2)
    msg = str(e.value)
    assert "'pairs[1]'" in msg
    assert f"{SRC}:{_line('if (t == 0) q[1].val = 1.0f;')}" in msg
    assert f"{SRC}:{_line('out[0] = (q + 1)->val;')}" in msg


def test_a_bfloat_element_converts_to_an_integer(kernel):
    x = np.array([1.0, 2.5, 300.0, 7.75], np.float32)
    out, out2 = np.zeros(4, np.uint32), np.zeros(4, np.int32)
    kernel("bfloat_element_to_integer")(x, out, out2, threads=4, threads_per_threadgroup=4)
    assert out.tolist() == [7, 300, 2, 1] and out2.tolist() == [1, 2, 300, 7]


def test_a_brace_list_initializes_a_vector_as_an_aggregate(kernel):
    out = np.full(16, -1, np.float32)
    kernel("vector_brace_lists")(out, threads=1, threads_per_threadgroup=1)
    assert out.tolist() == [1, 0, 2, 0, 0, 5, 5, 0, 3, 0, 0, 0, 0, 4, 7, 0]


NAMES_OF_STD_SRC = """#include <metal_stdlib>
using namespace metal;
constant bool forward [[function_constant(0)]];  // MLX's rope.metal
constant int move = 3;
kernel void k(device int* out [[buffer(0)]]) { out[0] = forward ? move : -move; }
"""


@pytest.mark.parametrize("forward,expect", [(True, 3), (False, -3)])
def test_std_names_are_free_for_kernels(forward, expect):
    """`using namespace metal;` brings no `forward` or `move`: Metal's library has neither."""
    out = np.zeros(1, np.int32)
    load_kernel(NAMES_OF_STD_SRC, "k", function_constants={"forward": forward})(out, threads=1,
                                                                               threads_per_threadgroup=1)
    assert out[0] == expect


TG_INIT_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
  threadgroup float buf[4] = {0}, other[2] = {0.0f, 0};
  if (t == 0) buf[1] = 5;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[t] = buf[1] + other[1];
}
"""


def test_a_zero_initializer_of_threadgroup_memory_warns():
    """MLX's layer_norm.metal: `threadgroup float local_buffer[SIMD_SIZE] = {0};` (which it
    writes before reading). The initializer is not applied: `other[1]`, never written, reads
    as the NaN threadgroup memory starts as here, so a kernel that relies on it shows."""
    k = load_kernel(TG_INIT_SRC, "k")
    out = np.zeros(4, np.float32)
    with pytest.warns(PortabilityWarning, match=r"'buf' \(\{ 0 \}\), 'other' .* at <source>:4 have initializers"):
        k(out, threads=4, threads_per_threadgroup=4)
    assert np.isnan(out).all()
    with pytest.raises(PortabilityError):
        k(out, threads=4, threads_per_threadgroup=4, strict=True)


def test_another_initializer_of_threadgroup_memory_is_refused():
    with pytest.raises(CompileError, match=r"<source>:4: error: threadgroup variable 'buf' has an initializer \(\{ 1 \}\)"):
        load_kernel(TG_INIT_SRC.replace("buf[4] = {0}", "buf[4] = {1}"), "k")


STEEL_CONST_SRC = """#include <metal_stdlib>
using namespace metal;
#define STEEL_CONST static constant constexpr const
STEEL_CONST bool inv_ [[function_constant(0)]];  // MLX's fft.h
template <typename T> struct Traits { using scalar_t = T; };
template <typename T> struct Traits<vec<T, 2>> { using scalar_t = T; };
kernel void k(device float* out [[buffer(0)]]) {
  Traits<float2>::scalar_t x = inv_ ? -1.0f : 1.0f;
  out[0] = x;
}
"""


@pytest.mark.parametrize("inv", [True, False])
def test_static_constexpr_function_constants_and_vector_specializations(inv):
    out = np.zeros(1, np.float32)
    load_kernel(STEEL_CONST_SRC, "k", function_constants={"inv_": inv})(out, threads=1, threads_per_threadgroup=1)
    assert out[0] == (-1 if inv else 1)


def test_a_product_of_simdgroup_matrices(kernel):
    rng = np.random.default_rng(5)
    a, b = (rng.uniform(-1, 1, (8, 8)).astype(np.float32) for _ in range(2))
    out = np.zeros((8, 8), np.float32)
    kernel("simdgroup_matrix_product")(a, b, out, threads=32, threads_per_threadgroup=32)
    np.testing.assert_allclose(out, (a.astype(np.float64) @ b @ a), rtol=1e-5, atol=1e-5)


DEDUCED_SRC = """#include <metal_stdlib>
using namespace metal;
// an explicit instantiation that names no template arguments: they are deduced from its
// parameter types (MLX's conv.metal instantiates naive_unfold_Nd so)
template <typename T, int N> struct Dims { int n[N]; };
template <typename T, int N>
kernel void deduced(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                    const constant Dims<T, N>* dims [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = in[i] * T(N) + T(dims->n[N - 1]);
}
template [[host_name("deduced_float_2")]] [[kernel]] void deduced(
    const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
    const constant Dims<float, 2>* dims [[buffer(2)]], uint i [[thread_position_in_grid]]);
template [[host_name("deduced_int_3")]] [[kernel]] void deduced(
    const device int* in [[buffer(0)]], device int* out [[buffer(1)]],
    const constant Dims<int, 3>* dims [[buffer(2)]], uint i [[thread_position_in_grid]]);
"""


@pytest.mark.parametrize("name,dtype,n", [("deduced_float_2", np.float32, 2), ("deduced_int_3", np.int32, 3)])
def test_template_arguments_deduced_from_an_instantiation(name, dtype, n):
    x = np.arange(5, dtype=dtype)
    out = np.zeros(5, dtype)
    dims = np.array([10, 20, 30][:n], np.int32)
    load_kernel(DEDUCED_SRC, name)(x, out, dims.tobytes(), threads=5, threads_per_threadgroup=5)
    assert out.tolist() == (x * n + dims[-1]).tolist()


COHERENT_SRC = """#include <metal_stdlib>
#include <metal_atomic>
using namespace metal;
kernel void k(volatile coherent(system) device uint* stamp [[buffer(0)]],
              const volatile coherent(device) device uint* in [[buffer(1)]],
              constant uint& value [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  stamp[i] = value + in[i];  // MLX's fence.metal
  atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
}
"""


def test_coherent_and_volatile_pointers():
    stamp = np.zeros(4, np.uint32)
    load_kernel(COHERENT_SRC, "k")(stamp, np.arange(4, dtype=np.uint32), np.uint32(7), threads=4,
                                   threads_per_threadgroup=4)
    assert stamp.tolist() == [7, 8, 9, 10]
    with pytest.raises(CompileError, match=r"<source>:4: error: coherent\(threadgroup\)"):
        load_kernel(COHERENT_SRC.replace("coherent(system)", "coherent(threadgroup)"), "k")


ARRAYS_AND_OBJECTS_SRC = """#include <metal_stdlib>
using namespace metal;
// a parameter of array type in an address space is a pointer into it (MLX's utils.h:
// `elem_to_loc_2(uint2 elem, constant const int64_t strides[2])`)
long stride_of(constant const int64_t strides[2], int k) { return strides[k]; }
// a template deduces T from a threadgroup array (MLX's quantized_utils.h gemm_loop_aligned)
template <typename T> void fill(threadgroup T* a, uint t, T scale) { a[t] = T(t) * scale; }
template <typename T> struct Cx { T re, im; };
template <typename T> Cx<T> operator*(Cx<T> a, Cx<T> b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
template <typename T> thread Cx<T>& operator+=(thread Cx<T>& a, Cx<T> b) { a.re += b.re; a.im += b.im; return a; }
kernel void k(device float* out [[buffer(0)]], constant const int64_t* st [[buffer(1)]],
              uint t [[thread_index_in_threadgroup]]) {
  threadgroup float tile[4];
  threadgroup Cx<float> cx[4];
  fill(tile, t, float(stride_of(st, 1)));
  cx[t] = Cx<float>{float(t), 1.0f};
  threadgroup_barrier(mem_flags::mem_threadgroup);
  Cx<float> acc = {0.0f, 0.0f};
  for (int i = 0; i < 4; ++i) acc += cx[i];            // the class's templated operator
  Cx<float> p = cx[t] * cx[(t + 1) % 4];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (t == 0) cx[0] += Cx<float>{10.0f, 0.0f};         // onto a threadgroup object
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[4 * t] = tile[(t + 1) % 4];
  out[4 * t + 1] = acc.re + acc.im * 100.0f;
  out[4 * t + 2] = p.re + p.im * 100.0f;
  out[4 * t + 3] = cx[0].re;
}
"""


def test_array_parameters_array_arguments_and_operators_of_threadgroup_objects():
    out = np.zeros(16, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_kernel(ARRAYS_AND_OBJECTS_SRC, "k")(out, np.array([1, 3], np.int64), threads=4, threads_per_threadgroup=4)
    got = out.reshape(4, 4)
    t = np.arange(4)
    z = t + 1j
    prod = z * z[(t + 1) % 4]
    assert got[:, 0].tolist() == (3.0 * ((t + 1) % 4)).tolist()
    assert got[:, 1].tolist() == [6 + 400] * 4
    np.testing.assert_array_equal(got[:, 2], (prod.real + prod.imag * 100).astype(np.float32))
    assert got[:, 3].tolist() == [10] * 4


TG_VECTOR_VAR_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
  threadgroup float4 v;
  if (t == 0) v.xy = float2(1.0f, 2.0f);
  if (t == 1) v.z = 3.0f;
  if (t == 2) v.w = 4.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[t] = dot(v.xyz, float3(1.0f, 10.0f, 100.0f)) + v.w * 1000.0f;
}
"""


def test_components_of_a_threadgroup_vector_variable():
    out = np.zeros(4, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # each component written by its own thread: no race
        load_kernel(TG_VECTOR_VAR_SRC, "k")(out, threads=4, threads_per_threadgroup=4)
    assert out.tolist() == [4321.0] * 4


THREAD_ARRAY_SRC = """#include <metal_stdlib>
using namespace metal;
struct Acc { float v[4]; };
kernel void k(device float* out [[buffer(0)]], constant int& at [[buffer(1)]], constant int& what [[buffer(2)]],
              uint t [[thread_index_in_threadgroup]]) {
  float regs[4] = {1, 2, 3, 4};
  Acc acc = {{5, 6, 7, 8}};
  if (what == 0) regs[at + int(t)] = 9.0f;
  if (what == 1) out[t] = acc.v[at];
  out[t] = regs[0] + acc.v[3];
}
"""


@pytest.mark.parametrize("what,at,line", [(0, -3, 8), (0, 4, 8), (1, 4, 9)])
def test_an_index_outside_a_threads_array_is_an_error_at_its_line(what, at, line):
    """A thread's own array, or an array member: the compiler's bounds check traps there (MLX's
    layer_norm writes `thread_x[i]` for i from a negative n in the threads past a short row)."""
    k = load_kernel(THREAD_ARRAY_SRC, "k")
    out = np.zeros(2, np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        k(out, np.int32(at), np.int32(what), threads=2, threads_per_threadgroup=2)
    msg = str(e.value)
    assert f"out-of-bounds index into an array of fixed size" in msg and f"at <source>:{line} " in msg
    assert "oob_reads" not in msg
    k(out, np.int32(0), np.int32(0), threads=1, threads_per_threadgroup=1)  # in bounds: runs
    assert out[0] == 17


def _line(text):
    return next(i for i, ln in enumerate(SRC.read_text().splitlines(), 1) if text in ln)


SOFT_HALF_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const half* in [[buffer(0)]], device float* out [[buffer(1)]],
              uint t [[thread_index_in_threadgroup]]) {
  threadgroup half As[8];
  threadgroup float Bs[8];
  As[t] = in[t];
  Bs[t] = float(in[t]) * 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float a = static_cast<float>(As[(t + 1) % 8]);  // as MLX's mma.h loads a fragment
  half b = static_cast<half>(Bs[t]);
  half b2 = Bs[t];
  float c = As[t] * 2.0f;
  half d = As[t] + As[t];
  out[t] = a + float(b + b2) * 10.0f + c * 100.0f + float(d) * 1000.0f;
}
"""


@pytest.mark.parametrize("how", ["software half", "clang++"])
def test_threadgroup_elements_convert_with_the_software_half_type(monkeypatch, how):
    """clang++ 14 has no _Float16 on x86-64, so half is the shim's own type there; forcing
    that type (MSLEMU_SOFT_HALF) reproduces it with any compiler."""
    from gemmglossary.emulator import build

    if how == "clang++":
        if shutil.which("clang++") is None:
            pytest.skip("clang++ is not installed")
        monkeypatch.setenv("CXX", "clang++")
        build.compiler.cache_clear()
    else:
        monkeypatch.setattr(build, "CXXFLAGS", [*build.CXXFLAGS, "-DMSLEMU_SOFT_HALF"])
    try:
        x = (np.arange(8) * 0.25).astype(np.float16)
        out = np.zeros(8, np.float32)
        load_kernel(SOFT_HALF_SRC, "k")(x, out, threads=8, threads_per_threadgroup=8)
    finally:
        build.compiler.cache_clear()
    f = x.astype(np.float32)
    np.testing.assert_array_equal(out, np.roll(f, -1) + 2 * (2 * f) * 10 + 2 * f * 100 + 2 * f * 1000)


UNBOUND_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]], const device float* bias [[buffer(1)]],
              constant bool& use [[buffer(2)]], constant float& scale [[buffer(3)]],
              uint i [[thread_position_in_grid]]) {
  if (use) out[i] = bias[i];
  else if (i == 9) out[i] = scale;
  else out[i] = 1.0f;
}
"""


def test_buffers_a_kernel_does_not_touch_may_stay_unbound():
    k = load_kernel(UNBOUND_SRC, "k")
    out = np.zeros(4, np.float32)
    k({0: out, 2: np.array(False)}, threads=4, threads_per_threadgroup=4)
    assert out.tolist() == [1] * 4
    out2 = np.zeros(4, np.float32)
    k(out2, None, False, None, threads=4, threads_per_threadgroup=4)  # positional: None is unbound
    assert out2.tolist() == [1] * 4


def test_an_access_to_an_unbound_buffer_names_the_parameter():
    from gemmglossary.emulator import OutOfBoundsError

    k = load_kernel(UNBOUND_SRC, "k")
    with pytest.raises(OutOfBoundsError, match=r"parameter 'bias' \[\[buffer\(1\)\]\] at \S*<source>:6, but the launch left that buffer unbound"):
        k({0: np.zeros(4, np.float32), 2: np.array(True)}, threads=4, threads_per_threadgroup=4)
    # a reference parameter (constant float&) read while unbound
    with pytest.raises(OutOfBoundsError, match=r"parameter 'scale' \[\[buffer\(3\)\]\] at \S*<source>:7, but the launch left that buffer unbound"):
        k({0: np.zeros(10, np.float32), 2: np.array(False)}, threads=10, threads_per_threadgroup=10)


OVERLOADED_SRC = """#include <metal_stdlib>
using namespace metal;
template <typename T, typename M, int N>
[[kernel, max_total_threads_per_threadgroup(N * 32)]] void k(device T* out [[buffer(0)]],
                                                             uint i [[thread_position_in_grid]]) {
  out[i] = T(N) + T(sizeof(M));
}
template <typename T, int N, bool twice = false>
[[kernel]] void k(device T* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = T(N) * (twice ? 2 : -1);
}
template [[host_name("k3")]] [[kernel]] decltype(k<float, short, 2>) k<float, short, 2>;
template [[host_name("k2")]] [[kernel]] decltype(k<float, 5>) k<float, 5>;
template [[host_name("k2t")]] [[kernel]] decltype(k<float, 5, true>) k<float, 5, true>;
"""


def test_overloaded_kernel_templates():
    """Kernel templates of one name told apart by their template parameter lists
    (MLX's steel_gemm_masked.h has two block_masked_gemm)."""
    k3 = load_kernel(OVERLOADED_SRC, "k3")
    assert k3.max_total_threads_per_threadgroup == 64 and k3.parameters[0][2] == 0
    out = np.zeros(2, np.float32)
    k3(out, threads=2, threads_per_threadgroup=2)
    assert out.tolist() == [4, 4]
    for name, value in (("k2", -5), ("k2t", 10)):
        k = load_kernel(OVERLOADED_SRC, name)
        assert k.max_total_threads_per_threadgroup == 1024 and k.parameters[0][2] == 1
        k(out, threads=2, threads_per_threadgroup=2)
        assert out.tolist() == [value, value]


def test_threadgroup_elements_passed_to_templates(kernel):
    x = (np.arange(16) * 7 % 11 + 3).astype(np.float32)
    out = np.zeros(16 * 3, np.float32)
    kernel("elements_to_templates")(x, out, threads=16, threads_per_threadgroup=16)
    got = out.reshape(16, 3)
    assert np.all(got[:, 0] == x.min())
    assert np.all(got[:, 1] == 4), "a float element is 4 bytes wide, not the size of a proxy"
    np.testing.assert_array_equal(got[:, 2], np.minimum(x, 50))


def test_members_qualified_by_address_space(kernel):
    out = np.zeros(3, np.float32)
    kernel("address_space_members")(bytes(1), np.array([3.0], np.float32).tobytes(), out, threads=1,
                                    threads_per_threadgroup=1)
    assert out.tolist() == [1, 6, 8]


def test_the_shims_names_stay_out_of_the_kernels_way(kernel):
    out = np.zeros(1, np.float32)
    kernel("common_names")(out, threads=1, threads_per_threadgroup=1)
    assert out[0] == 17
