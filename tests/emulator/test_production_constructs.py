"""Constructs of production Metal libraries (llama.cpp's kernels use each of them), one small
kernel of our own each, in a source of its own: a Metal library compiles as a whole, so one
unsupported construct would stop every kernel of a shared file. Each is checked against
exact values, so that a wrong meaning gives a wrong number."""

import warnings

import numpy as np
import pytest

from gemmglossary.emulator import DataRaceError, PortabilityWarning, load_kernel

# A kernel template whose template parameter is a function (a typedef'd function-pointer type,
# and the function type a decltype gives), instantiated with a specialization of a function
# template, in both forms of explicit instantiation: decltype(...) and the full declaration.
FUNCTION_PARAMETER_SRC = """#include <metal_stdlib>
using namespace metal;
typedef void (*combine_t)(thread float &, float);
void add_to(thread float & a, float b) { a += b; }
void scale_by(thread float & a, float b) { a *= b; }
template <combine_t op> void apply(device float * out, float v, uint i) { float x = out[i]; op(x, v); out[i] = x; }
typedef decltype(apply<add_to>) apply_t;
template <apply_t fn>
kernel void run(device float * out [[buffer(0)]], constant float & v [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  fn(out, v, i);
}
typedef decltype(run<apply<add_to>>) run_t;
template [[host_name("run_add")]] kernel run_t run<apply<add_to>>;
template [[host_name("run_scale")]] kernel void run<apply<scale_by>>(device float * out [[buffer(0)]],
    constant float & v [[buffer(1)]], uint i [[thread_position_in_grid]]);
"""


@pytest.mark.parametrize("name,expect", [("run_add", lambda x: x + 3), ("run_scale", lambda x: x * 3)])
def test_a_function_as_a_kernel_template_argument(name, expect):
    x = np.arange(8, dtype=np.float32)
    out = x.copy()
    load_kernel(FUNCTION_PARAMETER_SRC, name)(out, np.float32(3), threads=8, threads_per_threadgroup=8)
    np.testing.assert_array_equal(out, expect(x))


# Address spaces inside a function-pointer type of a template parameter list.
ADDRESS_SPACE_IN_FUNCTION_TYPE_SRC = """#include <metal_stdlib>
using namespace metal;
void load_twice(device const float * src, short k, thread float4 & r) { r = float4(src[k]) * 2.0f; }
void load_negated(device const float * src, short k, thread float4 & r) { r = -float4(src[k]); }
template <typename T, void (*load)(device const T *, short, thread float4 &)>
kernel void gather(device const T * src [[buffer(0)]], device float4 * out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float4 r;
  load(src, short(i), r);
  out[i] = r;
}
template [[host_name("gather_twice")]] kernel decltype(gather<float, load_twice>) gather<float, load_twice>;
template [[host_name("gather_negated")]] kernel decltype(gather<float, load_negated>) gather<float, load_negated>;
"""


@pytest.mark.parametrize("name,factor", [("gather_twice", 2), ("gather_negated", -1)])
def test_address_spaces_in_a_function_pointer_template_parameter(name, factor):
    src = np.arange(4, dtype=np.float32) + 1
    out = np.zeros((4, 4), np.float32)
    load_kernel(ADDRESS_SPACE_IN_FUNCTION_TYPE_SRC, name)(src, out, threads=4, threads_per_threadgroup=4)
    np.testing.assert_array_equal(out, np.repeat(src[:, None] * factor, 4, axis=1))


# Scalar select with an integer condition: Metal converts it to bool.
SELECT_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void signs(device const uchar * bits [[buffer(0)]], device int * out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = select(1, -1, bits[0] & (1 << i));
  out[8 + i] = int(select(0.5f, 2.0f, int(i) - 3));
}
"""


def test_select_with_an_integer_condition():
    out = np.zeros(16, np.int32)
    load_kernel(SELECT_SRC, "signs")(np.array([0b10100101], np.uint8), out, threads=8, threads_per_threadgroup=8)
    assert out[:8].tolist() == [-1 if 0b10100101 >> i & 1 else 1 for i in range(8)]
    assert out[8:].tolist() == [2 if i != 3 else 0 for i in range(8)]


# GNU array range designators, with a bound that is a template parameter, mixed with plain
# designators and positional elements; elements no designator names are zero.
RANGE_DESIGNATOR_SRC = """#include <metal_stdlib>
using namespace metal;
template <short N>
kernel void fill(device float * out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  int base = 5;
  float a[N] = { [0 ... N-3] = -FLT_MAX/2, 7.0f };
  float b[8] = { 1.0f, [3 ... 4] = 2.0f, 3.0f, [7] = 4.0f };
  int c[4] = { [1 ... 3] = base + 1 };
  for (short k = 0; k < N; ++k) out[k] = a[k];
  for (short k = 0; k < 8; ++k) out[N + k] = b[k];
  for (short k = 0; k < 4; ++k) out[N + 8 + k] = float(c[k]);
}
template [[host_name("fill6")]] kernel decltype(fill<6>) fill<6>;
"""


def test_gnu_range_designators():
    out = np.full(6 + 12, np.nan, np.float32)
    load_kernel(RANGE_DESIGNATOR_SRC, "fill6")(out, threads=1, threads_per_threadgroup=1)
    big = np.float32(-np.finfo(np.float32).max / 2)
    assert out[:6].tolist() == [big] * 4 + [7, 0]
    assert out[6:14].tolist() == [1, 0, 0, 2, 2, 3, 0, 4]
    assert out[14:18].tolist() == [0, 6, 6, 6]


# The half-precision limits Metal's compiler predefines.
HALF_LIMITS_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void limits(device float * out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[0] = __FLT16_MAX__;
  out[1] = -__FLT16_MAX__/2;
  out[2] = __FLT16_MIN__;
  out[3] = __FLT16_EPSILON__;
  out[4] = __FLT16_DENORM_MIN__;
  out[5] = __FLT16_MANT_DIG__ + 100 * __FLT16_DIG__;
#if __FLT16_MAX_EXP__ == 16 && __FLT16_MIN_EXP__ == -13 && __FLT16_MAX_10_EXP__ == 4 && __FLT16_MIN_10_EXP__ == -4
  out[6] = 1.0f;
#else
  out[6] = 0.0f;
#endif
  half h = __FLT16_MAX__;
  out[7] = float(h + h);  // a half: the sum overflows to infinity
}
"""


def test_half_precision_limit_macros():
    out = np.zeros(8, np.float32)
    load_kernel(HALF_LIMITS_SRC, "limits")(out, threads=1, threads_per_threadgroup=1)
    f16 = np.finfo(np.float16)
    assert out[:5].tolist() == [f16.max, -f16.max / 2, f16.tiny, f16.eps, f16.smallest_subnormal]
    assert out[5] == 311 and out[6] == 1 and out[7] == np.inf


# make_filled_simdgroup_matrix with the row count left to its default (the column count).
FILLED_MATRIX_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void filled(device float * out [[buffer(0)]], uint i [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 a = make_filled_simdgroup_matrix<float, 8>(2.0f);
  simdgroup_float8x8 b = make_filled_simdgroup_matrix<float, 8>(0.5f);
  simdgroup_float8x8 c;
  simdgroup_multiply(c, a, b);
  simdgroup_store(c, out, 8);
}
"""


def test_a_filled_simdgroup_matrix_with_default_rows():
    out = np.zeros(64, np.float32)
    load_kernel(FILLED_MATRIX_SRC, "filled")(out, threads=32, threads_per_threadgroup=32)
    np.testing.assert_array_equal(out, np.full(64, 8.0, np.float32))


# One thread reads an element, every thread passes an execution-only barrier, then another
# thread writes it: the read was executed before the write could be (no race), while a
# write followed by another thread's read across the same barrier is left unordered for
# memory (a portability warning), and with no barrier at all it is a race.
EXECUTION_BARRIER_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void war(device float * out [[buffer(0)]], threadgroup float * buf [[threadgroup(0)]],
                uint t [[thread_index_in_threadgroup]]) {
  buf[t] = float(t);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float v = buf[(t + 1) % 64];
  threadgroup_barrier(mem_flags::mem_none);
  buf[t] = v * 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[t] = buf[t];
}
kernel void raw(device float * out [[buffer(0)]], threadgroup float * buf [[threadgroup(0)]],
                uint t [[thread_index_in_threadgroup]]) {
  buf[t] = float(t);
  threadgroup_barrier(mem_flags::mem_none);
  out[t] = buf[(t + 1) % 64];
}
kernel void unordered(device float * out [[buffer(0)]], threadgroup float * buf [[threadgroup(0)]],
                      uint t [[thread_index_in_threadgroup]]) {
  buf[t] = float(t);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float v = buf[(t + 1) % 64];
  buf[t] = v * 2.0f;
  out[t] = v;
}
"""


def _run_barrier_kernel(name):
    out = np.zeros(64, np.float32)
    load_kernel(EXECUTION_BARRIER_SRC, name)(out, threads=64, threads_per_threadgroup=64,
                                             threadgroup_memory={0: 64 * 4})
    return out


def test_a_read_then_a_write_across_an_execution_barrier_is_not_a_race():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PortabilityWarning)
        out = _run_barrier_kernel("war")
    np.testing.assert_array_equal(out, (np.arange(64) + 1) % 64 * 2)


def test_a_write_then_a_read_across_an_execution_barrier_warns():
    with pytest.warns(PortabilityWarning, match="without mem_flags::mem_threadgroup"):
        out = _run_barrier_kernel("raw")
    np.testing.assert_array_equal(out, (np.arange(64) + 1) % 64)


def test_a_read_then_a_write_with_no_barrier_is_a_race():
    with pytest.raises(DataRaceError, match="data race"):
        _run_barrier_kernel("unordered")


# An integer division or remainder by a zero the kernel reads at run time (llama.cpp's soft_max
# computes `i03 % args.ne13` with ne13 == 0 when it has no mask, and does not use the result):
# Metal gives an undefined value and goes on, so the emulator does not crash; on x86-64, where
# the CPU traps, it gives 0 and a warning names the line.
DIVISION_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void rows(device int * out [[buffer(0)]], constant int & n [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  const int r = int(i) % n;
  const long q = long(i) / long(n);
  out[i] = int(r + q);
  out[6 + i] = int(i) * 3;
}
"""


@pytest.mark.parametrize("n", [0, 3])
def test_an_integer_division_by_zero_does_not_stop_the_kernel(n):
    import platform

    out = np.full(12, -1, np.int32)
    k = load_kernel(DIVISION_SRC, "rows")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        k(out, np.int32(n), threads=6, threads_per_threadgroup=6)
    i = np.arange(6)
    # the quotient and remainder by zero are 0 (what arm64's instructions give, and the
    # emulator on x86-64); the rest of the kernel runs as written
    assert out[:6].tolist() == (i * 0 if n == 0 else i % n + i // n).tolist()
    assert out[6:].tolist() == (i * 3).tolist()
    lines = [str(w.message) for w in seen if issubclass(w.category, PortabilityWarning)]
    if n == 0 and platform.machine() in ("x86_64", "AMD64"):
        assert any("divides an integer by zero" in m and "<source>:4" in m for m in lines), lines
    if n != 0:
        assert not lines


# A kernel whose first statement divides: the line table's rows before its first change of
# file, which addr2line (binutils 2.40, DWARF 5) reads as the compiled file's (kernel.cpp),
# and the warning named no line (symbolize.py reads those rows from the table itself).
FIRST_DIVISION_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void quotients(device long * out [[buffer(0)]], constant long & n [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
  out[i] = long(i) / n;
}
"""


@pytest.mark.skipif(__import__("platform").machine() not in ("x86_64", "AMD64"),
                    reason="only x86-64 traps on an integer division by zero (arm64 gives 0 silently)")
def test_a_division_by_zero_in_the_first_statement_names_its_line():
    out = np.full(4, -1, np.int64)
    k = load_kernel(FIRST_DIVISION_SRC, "quotients")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        k(out, np.int64(0), threads=4, threads_per_threadgroup=4)
    lines = [str(w.message) for w in seen if issubclass(w.category, PortabilityWarning)]
    assert lines and all("divides an integer by zero" in m and "<source>:5" in m for m in lines), lines
    assert out.tolist() == [0, 0, 0, 0]


# A threadgroup array cast to a pointer to another type (llama.cpp's flash attention reads
# `threadgroup half sk[N]` through `(threadgroup half4x4 *) sk`).
RECAST_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void recast(device float4 * out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
  threadgroup half sk[64];
  threadgroup half4x4 * sk4x4 = (threadgroup half4x4 *) sk;
  sk[t] = half(t);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (t < 4) {
    half4x4 m = sk4x4[t];
    out[t] = float4(m[1]);
  }
}
"""


def test_a_threadgroup_array_read_through_a_pointer_to_another_type():
    out = np.zeros((4, 4), np.float32)
    load_kernel(RECAST_SRC, "recast")(out, threads=64, threads_per_threadgroup=64)
    np.testing.assert_array_equal(out, [[16 * t + 4 + k for k in range(4)] for t in range(4)])


# A conditional expression with a half arm and a float or integer arm (llama.cpp's
# dequantize_q5_K: `il < 2 ? xb->d : xb->d / 16.f`): Metal's half is arithmetic, so the
# expression has the usual arithmetic conversions' type. With the shim's own half class
# (clang++ 14 on x86-64 has no _Float16; MSLEMU_SOFT_HALF forces it with any compiler) C++
# alone finds it ambiguous.
CONDITIONAL_SRC = """#include <metal_stdlib>
using namespace metal;
struct block { half d; };
kernel void pick(device const block * xb [[buffer(0)]], device float * out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  const float d = i < 2 ? xb[i].d : xb[i].d / 16.f;
  const half e = i < 2 ? xb[i].d : 1;
  out[i] = d + float(e) * 100.0f + (i % 2 ? (i < 3 ? xb[i].d : 2.5f) : 0.25f) * 1000.0f;
}
"""


@pytest.mark.parametrize("how", ["software half", "clang++", "host"])
def test_a_conditional_of_half_and_float(monkeypatch, how):
    import shutil

    from gemmglossary.emulator import build

    if how == "clang++":
        if shutil.which("clang++") is None:
            pytest.skip("clang++ is not installed")
        monkeypatch.setenv("CXX", "clang++")
        build.compiler.cache_clear()
    elif how == "software half":
        monkeypatch.setattr(build, "CXXFLAGS", [*build.CXXFLAGS, "-DMSLEMU_SOFT_HALF"])
    try:
        h = (np.arange(5) * 0.5 + 1).astype(np.float16)
        out = np.zeros(5, np.float32)
        load_kernel(CONDITIONAL_SRC, "pick")(h.view(np.dtype([("d", np.float16)])), out, threads=5,
                                             threads_per_threadgroup=5)
    finally:
        build.compiler.cache_clear()
    f = h.astype(np.float32)
    i = np.arange(5)
    d = np.where(i < 2, f, f / 16)
    e = np.where(i < 2, f, 1)
    nested = np.where(i % 2 == 1, np.where(i < 3, f, 2.5), 0.25)
    np.testing.assert_allclose(out, d + e * 100 + nested * 1000, rtol=1e-6)


# Structs holding an anonymous union with a vector member (llama.cpp's quantized blocks),
# and a named union, assigned whole: every Metal type copies bytewise.
UNION_SRC = """#include <metal_stdlib>
using namespace metal;
typedef struct { union { struct { half d; half m; }; half2 dm; }; uchar qs[4]; } block;
union bits { half2 h; uint u; };
kernel void copy_blocks(device const block * src [[buffer(0)]], device block * dst [[buffer(1)]],
                        device uint * out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  block b = src[i];
  b.qs[0] += 1;
  block c;
  c = b;
  dst[i] = c;
  bits x; x.h = c.dm; bits y; y = x;
  out[i] = y.u;
}
"""


def test_structs_with_a_union_of_vectors_are_assigned_bytewise():
    block = np.dtype([("d", np.float16), ("m", np.float16), ("qs", np.uint8, 4)])
    src = np.zeros(3, block)
    src["d"], src["m"], src["qs"] = [1, 2, 3], [-1, -2, -3], np.arange(12).reshape(3, 4)
    dst, out = np.zeros(3, block), np.zeros(3, np.uint32)
    load_kernel(UNION_SRC, "copy_blocks")(src, dst, out, threads=3, threads_per_threadgroup=3)
    want = src.copy()
    want["qs"][:, 0] += 1
    assert dst.tobytes() == want.tobytes()
    halves = np.stack([src["d"], src["m"]], axis=1)
    assert out.tolist() == halves.view(np.uint32).ravel().tolist()


def test_kernels_compile_at_their_level_and_a_level_in_the_extra_flags_wins(monkeypatch):
    """build.KERNEL_OPT for a kernel (the runtime's -O2 is CXXFLAGS' own); an -O level given
    in GEMMGLOSSARY_EMULATOR_CXXFLAGS (appended to CXXFLAGS) comes after it and wins."""
    from gemmglossary.emulator import build

    seen = []

    def compile_(d, pre, filename, fcs, kernel, cxx, ver, flags, **kw):
        seen.append([f for f in flags if f.startswith("-O")])
        raise build.CompileError("stopped by the test")
    monkeypatch.setattr(build, "_compile", compile_)
    src = "kernel void k(device int * o [[buffer(0)]]) { o[0] = 7; }\n"
    for extra in ([], ["-O2"]):
        monkeypatch.setattr(build, "CXXFLAGS", [*build.CXXFLAGS, *extra, "-DMSLEMU_LEVEL_TEST"])
        with pytest.raises(build.CompileError, match="stopped by the test"):
            load_kernel(src, "k")
    assert seen == [[build.KERNEL_OPT], [build.KERNEL_OPT, "-O2"]]
