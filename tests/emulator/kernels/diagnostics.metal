// Broken kernels for the emulator's diagnostics tests (tests/emulator/test_diagnostics.py).
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

kernel void divergent_barrier(device float* out [[buffer(0)]],
                              uint tid [[thread_index_in_threadgroup]]) {
  if (tid < 16) {
    threadgroup_barrier(mem_flags::mem_threadgroup);  // line 9
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);  // line 11
  }
  out[tid] = 1.0f;
}

// stores a whole 8x8 fragment per threadgroup: the edge tile runs off the end of C
kernel void unmasked_store(device float* C [[buffer(0)]],
                           constant uint& N [[buffer(1)]],
                           uint2 tg [[threadgroup_position_in_grid]]) {
  simdgroup_float8x8 one = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  simdgroup_store(one, C, N, ulong2(tg.x * 8, tg.y * 8));  // line 21
}

kernel void partial_simd(device int* out [[buffer(0)]],
                         uint lane [[thread_index_in_simdgroup]]) {
  int v = (int)lane;
  if (lane < 16) {
    v = simd_sum(v);  // line 28
  }
  threadgroup_barrier(mem_flags::mem_none);  // line 30
  out[lane] = v;
}

kernel void split_simd(device int* out [[buffer(0)]],
                       uint lane [[thread_index_in_simdgroup]]) {
  int v = (int)lane;
  if (lane < 16) {
    v = simd_sum(v);  // line 38
  } else {
    v = simd_max(v);  // line 40
  }
  out[lane] = v;
}

kernel void spin(device const int* flag [[buffer(0)]],
                 device int* out [[buffer(1)]]) {
  int n = 0;
  while (flag[0] == 0) {  // line 48
    n++;
  }
  out[0] = n;
}

kernel void trap(device int* out [[buffer(0)]], uint tid [[thread_position_in_grid]]) {
  if (tid == 3) __builtin_trap();  // line 55
  out[tid] = 1;
}

kernel void wild_pointer(device int* out [[buffer(0)]], uint tid [[thread_position_in_grid]]) {
  thread int* p = (thread int*)(ulong)(64 + tid);
  *p = 1;  // line 61
  out[tid] = 1;
}

kernel void oob_read(device const float* in [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  out[i] = in[i + 1];  // line 68
}

kernel void tg_race_simple(device float* out [[buffer(0)]],
                           uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float s[64];
  s[tid] = (float)tid;  // line 74
  out[tid] = s[63 - tid];  // line 75
}

kernel void divergent_mma(device float* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 a(1.0f), b(2.0f), c;
  if (lane < 16) {
    simdgroup_multiply(c, a, b);  // line 81
  } else {
    simdgroup_multiply(c, b, a);  // line 83
  }
  simdgroup_store(c, out, 8);
}

kernel void partial_mma(device float* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 a(1.0f), b(2.0f), c = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  if (lane < 16) {
    simdgroup_multiply(c, a, b);  // line 91
  }
  threadgroup_barrier(mem_flags::mem_none);
  simdgroup_store(c, out, 8);
}
