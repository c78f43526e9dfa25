// Constructs of real Metal code that the emulator once failed on, one small kernel each;
// every kernel is written so that a wrong emulation gives a wrong number
// (tests/emulator/test_constructs.py checks them against numpy or exact values).
#include <metal_stdlib>
#include <metal_uniform>
using namespace metal;

// <metal_uniform>: uniform<T> values, made with make_uniform, in arithmetic and loop bounds
kernel void uniform_values(device const int* n [[buffer(0)]],
                           device int* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  constexpr const uniform<int> stride = make_uniform(4);
  const uniform<int> size = make_uniform(n[0]);
  const uniform<int> iters = size / stride;
  const uniform<int> leftover = size - stride * iters;
  int acc = 0;
  for (int k = 0; k < iters; ++k) acc += k;
  const uniform<float2> v = make_uniform(float2(1.5f, 2.5f));
  float2 w = v * 2.0f;
  out[i * 4 + 0] = iters;
  out[i * 4 + 1] = leftover;
  out[i * 4 + 2] = acc;
  out[i * 4 + 3] = int(w.x + w.y) + int(i);
}
