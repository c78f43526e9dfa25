// Everyday MSL idioms the emulator must compile and run (tests/emulator/test_idioms.py).
#include <metal_stdlib>
using namespace metal;

struct Params {
  uint n;
  float scale;
  float4 bias;
};

kernel void reduce_sum(device const float* in [[buffer(0)]],
                       device float* out [[buffer(1)]],
                       constant Params& p [[buffer(2)]],
                       uint gid [[thread_position_in_grid]],
                       uint lid [[thread_position_in_threadgroup]],
                       uint sgid [[simdgroup_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]],
                       uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  float v = gid < p.n ? in[gid] * p.scale : 0.0f;
  v = simd_sum(v);
  if (lane == 0) partial[sgid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sgid == 0) {
    float w = lane < nsg ? partial[lane] : 0.0f;
    w = simd_sum(w);
    if (lane == 0) out[gid / 256] = w;
  }
}

kernel void softmax_row(device const float* x [[buffer(0)]],
                        device float* y [[buffer(1)]],
                        constant uint& n [[buffer(2)]],
                        uint lane [[thread_index_in_simdgroup]]) {
  float m = -numeric_limits<float>::infinity();
  for (uint i = lane; i < n; i += 32) m = max(m, x[i]);
  m = simd_max(m);
  float s = 0.0f;
  for (uint i = lane; i < n; i += 32) s += fast::exp(x[i] - m);
  s = simd_sum(s);
  for (uint i = lane; i < n; i += 32) y[i] = metal::precise::exp(x[i] - m) / s;
}

kernel void histogram(device const uint* in [[buffer(0)]],
                      device atomic_uint* bins [[buffer(1)]],
                      uint gid [[thread_position_in_grid]],
                      uint lid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_uint local[8];
  if (lid < 8) atomic_store_explicit(&local[lid], 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&local[in[gid] % 8], 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid < 8) atomic_fetch_add_explicit(&bins[lid], atomic_load_explicit(&local[lid], memory_order_relaxed), memory_order_relaxed);
}

kernel void transpose(device const float* a [[buffer(0)]],
                      device float* b [[buffer(1)]],
                      constant uint2& dims [[buffer(2)]],
                      uint2 gid [[thread_position_in_grid]],
                      uint2 lid [[thread_position_in_threadgroup]],
                      uint2 tg [[threadgroup_position_in_grid]]) {
  threadgroup float tile[16][17];
  if (gid.x < dims.x && gid.y < dims.y) tile[lid.y][lid.x] = a[gid.y * dims.x + gid.x];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint2 o = uint2(tg.y * 16 + lid.x, tg.x * 16 + lid.y);
  if (o.x < dims.y && o.y < dims.x) b[o.y * dims.y + o.x] = tile[lid.x][lid.y];
}

kernel void vec4_ops(device const float4* a [[buffer(0)]],
                     device half4* out [[buffer(1)]],
                     constant Params& p [[buffer(2)]],
                     uint i [[thread_position_in_grid]]) {
  float4 v = a[i] * p.scale + p.bias;
  v = clamp(v, -10.0f, 10.0f);
  half4 h = half4(v);
  h = h * 2.0h;
  out[i] = h + half4(dot(v, float4(1)), as_type<uint>(1.0f) == 0x3f800000u ? 1.0h : 0.0h, (half)popcount(7u), abs(-1.0h));
}

constant float weights[4] = {0.5f, 1.0f, 2.0f, 4.0f};
constant float4 offs = float4(1, 2, 3, 4);
constant constexpr int K = 3;

struct Particle { float4 pos; float4 vel; };

inline void bump(thread float& x, device float& y) { x += 1.0f; y += x; }
inline float sum_tg(const threadgroup float* p, int n) { float s = 0; for (int i = 0; i < n; ++i) s += p[i]; return s; }

kernel void misc(device Particle* ps [[buffer(0)]],
                 device float* out [[buffer(1)]],
                 uint tid [[thread_index_in_threadgroup]],
                 uint n [[threads_per_threadgroup]]) {
  threadgroup float total;
  threadgroup float vals[64];
  threadgroup int counter;
  if (tid == 0) { total = 0.0f; counter = 0; }
  vals[tid] = weights[tid % 4] * K;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    total = sum_tg(vals, (int)n);
    total += 1.0f;
    counter++;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  ps[tid].pos += ps[tid].vel * 0.5f + offs;
  float x = (float)tid;
  bump(x, out[tid]);
  out[tid] += total + counter;
  int4 iv = int4(ps[tid].pos);
  uint4 bits = as_type<uint4>(ps[tid].pos);
  out[n + tid] = (float)(iv.x % 3) + (float)((bits.y >> 31) & 1u) + float(half4(1.5h).x) + static_cast<float>(int2(7, 8).y);
}

kernel void more_math(device float4* out [[buffer(0)]]) {
  float4 a = float4(-1.5f, 2.0f, 0.0f, 3.0f);
  float4 b = float4(2.0f, -1.0f, 1.0f, 3.0f);
  out[0] = float4(min3(1.0f, -2.0f, 3.0f), max3(1.0f, -2.0f, 3.0f), median3(1.0f, -2.0f, 3.0f), 0.0f);
  out[1] = fmax(a, b) + step(b, a);
  out[2] = sign(a) * copysign(float4(1.0f), b);
  float4 c = a.bgra;
  c.rg = c.ar;
  out[3] = c;
}
