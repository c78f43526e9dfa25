"""The constructs MLX's kernels rely on that the emulator once lacked (issue #10 §2, §3),
each in a small probe of our own: it must compile, and where the construct once gave a
wrong result or a false diagnostic, run and give the right one. The MLX family tests in
tests/mlx run the real headers; these say which construct broke when one of them fails."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

UTILS = '#include "mlx/backend/metal/kernels/utils.h"\n'
PRELUDE = "#include <metal_stdlib>\nusing namespace metal;\n"

# name -> (the construct, probe source, kernel name, how to run it or None to only compile)
PROBES = {
    "uniform": ("uniform<int> / make_uniform (gemv.h, gemv_masked.h)", PRELUDE + """
kernel void k(device int* out [[buffer(0)]], constant int& n [[buffer(1)]]) {
  const uniform<int> size = make_uniform(n);
  const uniform<int> steps = size / make_uniform(4);
  out[0] = steps;
}""", "k", None),
    "tg_nullptr": ("`cond ? nullptr : threadgroup_array` (gemv.h)", PRELUDE + """
void probe_use(threadgroup float* t, device float* o) { o[0] = t ? 1.0f : 2.0f; }
template <int N> [[kernel]] void k(device float* o [[buffer(0)]]) {
  threadgroup float t[N == 0 ? 1 : N];
  probe_use(N == 0 ? nullptr : t, o);
}
template [[host_name("k")]] [[kernel]] decltype(k<4>) k<4>;""", "k", None),
    "quad": ("quad-group functions (quantized.h's qmv_quad_impl, compiled with every kernel)", PRELUDE + """
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = quad_sum(float(i)); }""",
             "k", "quad"),
    "simd_tg": ("simd_* of a threadgroup array element (softmax.h, sdpa_vector.h)", PRELUDE + """
kernel void k(device float* o [[buffer(0)]], uint l [[thread_index_in_simdgroup]]) {
  threadgroup float t[32];
  t[l] = l;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[l] = simd_max(t[l]) + simd_sum(t[l]);
}""", "k", None),
    "fast_exp": ("fast::exp(float) after MLX's bf16_math.h (rounded to bfloat16)", UTILS + """
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = fast::exp(0.1f * float(i)); }""",
                 "k", "fast_exp"),
    "gtgt": ("a kernel template whose parameter list ends in `>>` (steel_gemm_splitk.h)", PRELUDE + """
template <typename T, typename U> struct ProbeCast { static T apply(U x) { return T(x); } };
template <typename A, typename O, typename E = ProbeCast<O, A>>
[[kernel]] void k(const device A* i [[buffer(0)]], device O* o [[buffer(1)]], uint g [[thread_position_in_grid]]) {
  o[g] = E::apply(i[g]);
}
template [[host_name("k")]] [[kernel]] decltype(k<float, float>) k<float, float>;""", "k", None),
    "atomic_traits": ("Metal's internal type traits used by MLX's atomic.h", PRELUDE + """
#pragma METAL internals : enable
template <typename T> constexpr constant bool probe_native = _disjunction<is_same<T, int>, is_same<T, float>>::value;
#pragma METAL internals : disable
kernel void k(device int* o [[buffer(0)]]) { o[0] = probe_native<float> ? 1 : 0; }""", "k", None),
    "class_spec": ("an explicit specialization of a member operator() inside its class (reduction/ops.h)",
                   PRELUDE + """
template <typename U> struct ProbeSmaller {
  template <typename T> T operator()(T a, T b) thread { return a < b ? a : b; }
  template <> int operator()(int a, int b) thread { return a > b ? a : b; }
};
kernel void k(device float* o [[buffer(0)]]) { ProbeSmaller<float> smaller; o[0] = smaller(1.0f, 2.0f); }""", "k", None),
    "bf16_mma": ("static_cast<float> of a bfloat threadgroup element (steel's mma.h)", PRELUDE + """
kernel void k(device float* o [[buffer(0)]], uint l [[thread_position_in_threadgroup]]) {
  threadgroup bfloat t[4];
  t[l] = bfloat(1.5f);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const threadgroup bfloat* p = t;
  o[l] = static_cast<float>(p[l]);
}""", "k", None),
    "max_tg": ("max(float, threadgroup element) (sdpa_vector.h's GQA pass)", PRELUDE + """
kernel void k(device float* o [[buffer(0)]], uint l [[thread_position_in_threadgroup]]) {
  threadgroup float t[4];
  t[l] = l;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[l] = max(0.5f, t[l]);
}""", "k", None),
    "template_tg": ("a function template called with a threadgroup element and a value (reduction/ops.h ops in "
                    "reduce_col.h)", PRELUDE + """
template <typename T> T probe_pick(T a, T b) { return a < b ? a : b; }
kernel void k(device float* o [[buffer(0)]], uint l [[thread_position_in_threadgroup]]) {
  threadgroup float t[4];
  t[l] = l;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[l] = probe_pick(0.5f, t[l]);
}""", "k", None),
    "unbound": ("buffers left unbound, also a `constant int&` passed on but never read (MLX's host code)",
                PRELUDE + """
void probe_store(device float* o, constant int& unused) { o[0] = 1; }
kernel void k(device float* o [[buffer(0)]], constant int& unused [[buffer(1)]]) { probe_store(o, unused); }""",
                "k", "unbound"),
    "overloads": ("two kernel templates with one name (steel_gemm_masked.h)", PRELUDE + """
template <typename T, typename M, int N>
[[kernel, max_total_threads_per_threadgroup(N * 32)]] void k(device T* o [[buffer(0)]]) { o[0] = N; }
template <typename T, int N, bool B = false>
[[kernel, max_total_threads_per_threadgroup(N * 32)]] void k(device T* o [[buffer(0)]]) { o[0] = -N; }
template [[host_name("k")]] [[kernel]] decltype(k<float, bool, 3>) k<float, bool, 3>;""", "k", None),
    "address_space_methods": ("member functions qualified by an address space (gemv_masked.h's _NoMask)", PRELUDE + """
struct ProbeMask {
  char x;
  operator bool() thread { return true; }
  operator bool() const device { return true; }
};
kernel void k(const device ProbeMask* s [[buffer(0)]], device int* o [[buffer(1)]]) { o[0] = bool(s[0]) ? 1 : 0; }""",
                              "k", None),
    "divergent_barrier": ("#10 §3: a barrier reached by part of a simdgroup, then simd_shuffle_down (gemv.h's gemv_t "
                          "at an edge)", PRELUDE + """
kernel void k(device float* o [[buffer(0)]], constant int& n [[buffer(1)]],
              uint l [[thread_position_in_threadgroup]]) {
  float r = 0;
  if (l < 16) {
    for (int i = 0; i < n; ++i) { threadgroup_barrier(mem_flags::mem_none); r += 1; }
  }
  r += simd_shuffle_down(r, 1);
  o[l] = r;
}""", "k", "divergent"),
    "mem_none_order": ("#10 §3: a write and a read ordered only by threadgroup_barrier(mem_none) (gemv.h)", PRELUDE + """
kernel void k(device float* o [[buffer(0)]], uint l [[thread_position_in_threadgroup]]) {
  threadgroup float t[64];
  t[l] = l;
  threadgroup_barrier(mem_flags::mem_none);
  o[l] = t[(l + 32) % 64];
}""", "k", "mem_none"),
}


def _run(kind, kernel):
    if kind == "fast_exp":
        out = np.zeros(4, np.float32)
        kernel(out, threads=(4, 1, 1), threads_per_threadgroup=(4, 1, 1))
        return np.allclose(out, np.exp(0.1 * np.arange(4)), rtol=1e-6)
    if kind == "quad":
        out = np.zeros(8, np.float32)
        kernel(out, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))
        return np.array_equal(out, [6] * 4 + [22] * 4)
    if kind == "unbound":
        out = np.zeros(1, np.float32)
        kernel({0: out}, threads=(1, 1, 1), threads_per_threadgroup=(1, 1, 1))
        return out[0] == 1
    if kind == "divergent":
        out = np.zeros(32, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kernel(out, np.int32(2), threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
        return out[0] == 4 and out[20] == 0
    if kind == "mem_none":
        out = np.zeros(64, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a PortabilityWarning is the expected outcome
            kernel(out, threads=(64, 1, 1), threads_per_threadgroup=(64, 1, 1))
        return np.array_equal(out, (np.arange(64) + 32) % 64)
    raise ValueError(kind)


@pytest.mark.parametrize("name", PROBES)
def test_construct_mlx_relies_on(name):
    from gemmglossary.emulator import load_kernel
    from gemmglossary.paths import vendor_dir

    what, source, kernel_name, run = PROBES[name]
    kernel = load_kernel(source, kernel_name, include_dirs=[vendor_dir()])
    if run is not None:
        assert _run(run, kernel), f"wrong result from {what}"
