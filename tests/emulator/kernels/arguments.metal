// Parameters of every element type the emulator checks arrays against (tests/emulator/test_arguments.py).
#include <metal_stdlib>
using namespace metal;

struct Params { uint n; float scale; };

kernel void types(device float* f [[buffer(0)]], device half* h [[buffer(1)]], device bfloat* b [[buffer(2)]],
                  device float4* v4 [[buffer(3)]], device float3* v3 [[buffer(4)]],
                  device packed_float3* p3 [[buffer(5)]], device atomic_uint* a [[buffer(6)]],
                  device bool* flags [[buffer(7)]], constant Params& p [[buffer(8)]], device void* raw [[buffer(9)]],
                  constant uint& n [[buffer(10)]], device int* out [[buffer(11)]], constant float2& sc [[buffer(12)]],
                  uint i [[thread_position_in_grid]]) {
  f[i] = f[i] * p.scale;
  h[i] = h[i] + half(1);
  b[i] = bfloat(float(b[i]) * 2.0f);
  v4[i] = v4[i] + float4(1.0f);
  v3[i] = v3[i] * 2.0f;
  p3[i] = float3(p3[i]) + float3(sc.x);
  atomic_fetch_add_explicit(a, 1u, memory_order_relaxed);
  flags[i] = !flags[i];
  ((device uchar*)raw)[i] = uchar(i);
  if (i == 0) { out[0] = int(n); out[1] = int(p.n); out[2] = int(sc.y); }
}
