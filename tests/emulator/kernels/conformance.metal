// Conformance kernels for the Metal emulator: each one is written so that a wrong
// emulation of its construct gives a wrong answer (see tests/emulator/test_conformance.py).
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

// scalar constructor = DIAGONAL; make_filled = every element
kernel void sgm_diag(device float* out [[buffer(0)]]) {
  simdgroup_float8x8 d(2.0f);
  simdgroup_float8x8 f = make_filled_simdgroup_matrix<float, 8, 8>(3.0f);
  simdgroup_store(d, out, 8);
  simdgroup_store(f, out + 64, 8);
}

// src is 16 x 16 (row length 16). out0: block at origin (col 8, row 0); out1: same block
// transposed; out2: 16-wide destination, fragment stored at origin (col 0, row 8).
kernel void sgm_load(device const float* src [[buffer(0)]],
                     device float* out [[buffer(1)]]) {
  simdgroup_float8x8 m;
  simdgroup_load(m, src, 16, ulong2(8, 0));
  simdgroup_store(m, out, 8);
  simdgroup_float8x8 t;
  simdgroup_load(t, src, 16, ulong2(8, 0), true);
  simdgroup_store(t, out + 64, 8);
  simdgroup_store(m, out + 128, 16, ulong2(0, 8));
}

// every lane reports the two elements it holds
kernel void sgm_lanes(device const float* src [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      ushort lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 m;
  simdgroup_load(m, src, 8);
  thread auto& e = m.thread_elements();
  out[lane * 2 + 0] = e[0];
  out[lane * 2 + 1] = e[1];
  // and writing through thread_elements changes the fragment
  e[0] = -1.0f;
  simdgroup_store(m, out + 64, 8);
}

// d = a * b + c and d2 = a * b, through threadgroup memory
kernel void sgm_mma(device const float* a [[buffer(0)]],
                    device const float* b [[buffer(1)]],
                    device const float* c [[buffer(2)]],
                    device float* out [[buffer(3)]],
                    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float ta[64];
  ta[tid] = a[tid];
  ta[tid + 32] = a[tid + 32];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 ma, mb, mc, md, me;
  simdgroup_load(ma, ta, 8);
  simdgroup_load(mb, b, 8);
  simdgroup_load(mc, c, 8);
  simdgroup_multiply_accumulate(md, ma, mb, mc);
  simdgroup_multiply(me, ma, mb);
  simdgroup_store(md, out, 8);
  simdgroup_store(me, out + 64, 8);
}

kernel void sgm_half(device const half* a [[buffer(0)]],
                     device const half* b [[buffer(1)]],
                     device float* out [[buffer(2)]]) {
  simdgroup_half8x8 ma, mb;
  simdgroup_load(ma, a, 8);
  simdgroup_load(mb, b, 8);
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  simdgroup_multiply_accumulate(acc, ma, mb, acc);
  simdgroup_store(acc, out, 8);
}

// every thread-position attribute, 3-component vectors
kernel void attrs3(device uint* out [[buffer(0)]],
                   uint3 tpig [[thread_position_in_grid]],
                   uint3 tpitg [[thread_position_in_threadgroup]],
                   uint3 tgpig [[threadgroup_position_in_grid]],
                   uint3 tptg [[threads_per_threadgroup]],
                   uint3 tgpg [[threadgroups_per_grid]],
                   uint3 tpg [[threads_per_grid]],
                   uint tiitg [[thread_index_in_threadgroup]],
                   uint lane [[thread_index_in_simdgroup]],
                   uint sg [[simdgroup_index_in_threadgroup]],
                   uint nsg [[simdgroups_per_threadgroup]],
                   uint width [[thread_execution_width]],
                   uint tpsg [[threads_per_simdgroup]]) {
  uint slot = (tpig.z * tpg.y + tpig.y) * tpg.x + tpig.x;
  device uint* o = out + slot * 24;
  o[0] = tpig.x; o[1] = tpig.y; o[2] = tpig.z;
  o[3] = tpitg.x; o[4] = tpitg.y; o[5] = tpitg.z;
  o[6] = tgpig.x; o[7] = tgpig.y; o[8] = tgpig.z;
  o[9] = tptg.x; o[10] = tptg.y; o[11] = tptg.z;
  o[12] = tgpg.x; o[13] = tgpg.y; o[14] = tgpg.z;
  o[15] = tpg.x; o[16] = tpg.y; o[17] = tpg.z;
  o[18] = tiitg; o[19] = lane; o[20] = sg; o[21] = nsg; o[22] = width; o[23] = tpsg;
}

// 2-component ushort vectors
kernel void attrs2(device uint* out [[buffer(0)]],
                   ushort2 tpig [[thread_position_in_grid]],
                   ushort2 tpitg [[thread_position_in_threadgroup]],
                   ushort2 tgpig [[threadgroup_position_in_grid]],
                   ushort2 tptg [[threads_per_threadgroup]],
                   ushort2 tgpg [[threadgroups_per_grid]],
                   ushort2 tpg [[threads_per_grid]],
                   ushort tiitg [[thread_index_in_threadgroup]]) {
  uint slot = tpig.y * tpg.x + tpig.x;
  device uint* o = out + slot * 13;
  o[0] = tpig.x; o[1] = tpig.y; o[2] = tpitg.x; o[3] = tpitg.y; o[4] = tgpig.x; o[5] = tgpig.y;
  o[6] = tptg.x; o[7] = tptg.y; o[8] = tgpg.x; o[9] = tgpg.y; o[10] = tpg.x; o[11] = tpg.y; o[12] = tiitg;
}

// scalars
kernel void attrs1(device uint* out [[buffer(0)]],
                   uint tpig [[thread_position_in_grid]],
                   ushort tpitg [[thread_position_in_threadgroup]],
                   uint tgpig [[threadgroup_position_in_grid]],
                   uint tptg [[threads_per_threadgroup]],
                   uint tgpg [[threadgroups_per_grid]],
                   uint tpg [[threads_per_grid]]) {
  device uint* o = out + tpig * 6;
  o[0] = tpig; o[1] = tpitg; o[2] = tgpig; o[3] = tptg; o[4] = tgpg; o[5] = tpg;
}

// simd-group functions. Lanes with (lane % 8 == 7) return early in simdgroup 0.
kernel void simd_fns(device const int* in [[buffer(0)]],
                     device int* out [[buffer(1)]],
                     uint tid [[thread_index_in_threadgroup]],
                     ushort lane [[thread_index_in_simdgroup]],
                     ushort sg [[simdgroup_index_in_threadgroup]]) {
  if (sg == 0 && lane % 8 == 7) return;
  int v = in[tid];
  device int* o = out + tid * 10;
  o[0] = simd_shuffle(v, (ushort)((lane + 5) % 32));
  o[1] = simd_shuffle_xor(v, (ushort)3);
  o[2] = simd_shuffle_up(v, (ushort)2);
  o[3] = simd_shuffle_down(v, (ushort)2);
  o[4] = simd_broadcast(v, (ushort)4);
  o[5] = simd_sum(v);
  o[6] = simd_max(v);
  o[7] = simd_min(v);
  o[8] = simd_prefix_exclusive_sum(v);
  o[9] = simd_shuffle(v, (ushort)lane);
}

// early return before a barrier: allowed on Apple GPUs (with a portability warning)
kernel void early_return(device float* out [[buffer(0)]],
                         uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float s[64];
  if (tid >= 40) return;
  s[tid] = (float)tid * 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = s[(tid + 1) % 40];
}

// threadgroup memory given at launch
kernel void tg_param(device float* out [[buffer(0)]],
                     threadgroup float* scratch [[threadgroup(0)]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint n [[threads_per_threadgroup]]) {
  scratch[tid] = (float)tid;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = scratch[n - 1 - tid];
}

// half arithmetic rounds to half after every operation
kernel void half_ops(device const half* a [[buffer(0)]],
                     device const half* b [[buffer(1)]],
                     device half* out [[buffer(2)]],
                     uint i [[thread_position_in_grid]]) {
  half x = a[i], y = b[i];
  half s = x + y;
  half p = x * y;
  half d = x - y;
  half q = x / y;
  out[i * 5 + 0] = s;
  out[i * 5 + 1] = p;
  out[i * 5 + 2] = d;
  out[i * 5 + 3] = q;
  out[i * 5 + 4] = s * 0.5h;
}

// vectors: constructors, swizzles, arithmetic, comparisons, select
kernel void vectors(device float* out [[buffer(0)]],
                    device int* iout [[buffer(1)]]) {
  float4 v = float4(1.0f, 2.0f, 3.0f, 4.0f);
  float2 a = v.xy;           // 1 2
  float2 b = v.wz;           // 4 3
  float3 c = float3(a, 5.0f);  // 1 2 5
  float4 d = float4(b, a);   // 4 3 1 2
  v.xy = v.yx;               // 2 1 3 4
  float4 e = d * 2.0f + 1.0f;  // 9 7 3 5
  float4 f = select(float4(0.0f), float4(1.0f), d > float4(2.5f));  // 1 1 0 0
  float4 g = float4(c.zyx, 7.0f);  // 5 2 1 7
  float4 h = min(d, float4(2.0f)) + max(d, 3.0f);  // 2+4 2+3 1+3 2+3 = 6 5 4 5
  float4 k = float4(0.0f);
  k.zw = a;                  // 0 0 1 2
  k.x += 10.0f;              // 10 0 1 2
  float4 w = float4(v.r, v.g, v.b, v.a);  // 2 1 3 4
  float4 vals[9] = {float4(a, b), float4(c, 0.0f), d, v, e, f, g, h, k};
  for (int i = 0; i < 9; ++i) {
    for (int j = 0; j < 4; ++j) out[i * 4 + j] = vals[i][j];
  }
  out[36] = dot(d, float4(1.0f));
  out[37] = w.x * 1000 + w.y * 100 + w.z * 10 + w.w;
  int2 ia = int2(7, -3);
  uint2 ub = uint2(5u, 9u);
  int3 ic = int3(ia.yx, 4);
  ushort2 us = ushort2(ub);
  iout[0] = ia.x / 2; iout[1] = ia.y % 2; iout[2] = ic.x; iout[3] = ic.y; iout[4] = ic.z;
  iout[5] = (int)(ub.x * ub.y); iout[6] = us.y; iout[7] = all(ia > int2(-5)) ? 1 : 0; iout[8] = any(ia > int2(100)) ? 1 : 0;
  iout[9] = as_type<int>(1.0f);
}

[[max_total_threads_per_threadgroup(64)]] kernel void mtt_a(device float* o [[buffer(0)]]) { o[0] = 1.0f; }
[[kernel, max_total_threads_per_threadgroup(96)]] void mtt_b(device float* o [[buffer(0)]]) { o[0] = 1.0f; }
kernel void __attribute__((max_total_threads_per_threadgroup(128))) mtt_c(device float* o [[buffer(0)]]) { o[0] = 1.0f; }
__attribute__((max_total_threads_per_threadgroup(160))) kernel void mtt_d(device float* o [[buffer(0)]]) { o[0] = 1.0f; }
kernel void mtt_none(device float* o [[buffer(0)]]) { o[0] = 1.0f; }

// template kernels, instantiated the MSL way; max_total_threads from template arguments
template <typename T, int S>
[[kernel, max_total_threads_per_threadgroup(S * 32)]]
void scale_t(device const T* in [[buffer(0)]],
             device T* out [[buffer(1)]],
             uint i [[thread_position_in_grid]]) {
  out[i] = in[i] * T(S);
}
template [[host_name("scale_float_3")]] [[kernel]] decltype(scale_t<float, 3>) scale_t<float, 3>;
template [[host_name("scale_half_2")]] [[kernel]] decltype(scale_t<half, 2>) scale_t<half, 2>;

// address spaces: overloads that differ only by address space must stay distinct
inline int which(const device float* p) { return 1; }
inline int which(const threadgroup float* p) { return 2; }
inline int which(const constant float* p) { return 3; }
inline int which(const thread float* p) { return 4; }
struct Params { uint n; float scale; };
kernel void spaces(device float* out [[buffer(0)]],
                   constant float* c [[buffer(1)]],
                   constant Params& prm [[buffer(2)]],
                   uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float t[4];
  float local[2] = {1.0f, 2.0f};
  t[tid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    out[0] = which(out);
    out[1] = which(t);
    out[2] = which(c);
    out[3] = which(local);
    out[4] = c[1] * prm.scale + prm.n;
  }
}

// pointers: arithmetic, comparison, casts between element types, float4 in device memory
kernel void pointers(device const float4* v [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     constant uint& n [[buffer(2)]]) {
  device const float* f = (device const float*)v;
  float s = 0.0f;
  for (device const float* p = f; p < f + n * 4; p += 4) s += *p;  // x components
  out[0] = s;
  out[1] = v[1].y + v[n - 1].w;
  device const float* last = &f[n * 4 - 1];
  out[2] = (float)(last - f);
  out[3] = *reinterpret_cast<device const float*>(v + 2);
}

// simd-group functions on vector and half values; simdgroup_barrier orders threadgroup
// memory inside one simdgroup
kernel void simd_types(device float2* out2 [[buffer(0)]],
                       device half* outh [[buffer(1)]],
                       device float* outb [[buffer(2)]],
                       ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float s[32];
  float2 v = float2(lane, 2 * lane);
  out2[lane] = simd_shuffle_down(v, (ushort)1) + simd_sum(v);
  outh[lane] = simd_max((half)lane * 0.5h);
  s[lane] = (float)lane;
  simdgroup_barrier(mem_flags::mem_threadgroup);
  outb[lane] = s[31 - lane];
}

kernel void simd_race(device float* out [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float s[32];
  s[lane] = (float)lane;
  out[lane] = s[31 - lane];  // no simdgroup_barrier: a race even inside one simdgroup
}

// transposed store, and a 16-thread threadgroup (a partial simdgroup) using simd_sum
kernel void sgm_store_t(device const float* src [[buffer(0)]],
                        device float* out [[buffer(1)]]) {
  simdgroup_float8x8 m;
  simdgroup_load(m, src, 8);
  simdgroup_store(m, out, 8, ulong2(0, 0), true);
}
