#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

// 32x32 output tile per threadgroup of 4 simdgroups; each simdgroup owns a 16x16 quarter
// as 2x2 8x8 accumulators. M, N, K multiples of 32 (no masking: this is a test kernel).
kernel void matmul_simd(device const float* A [[buffer(0)]],
                        device const float* B [[buffer(1)]],
                        device float* C [[buffer(2)]],
                        constant uint& M [[buffer(3)]],
                        constant uint& N [[buffer(4)]],
                        constant uint& K [[buffer(5)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]]) {
  uint r0 = tg.y * 32 + (sg / 2) * 16;
  uint c0 = tg.x * 32 + (sg % 2) * 16;
  simdgroup_float8x8 acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < K; k += 8) {
    simdgroup_float8x8 a[2], b[2];
    for (int i = 0; i < 2; ++i) simdgroup_load(a[i], A, K, ulong2(k, r0 + 8 * i));
    for (int j = 0; j < 2; ++j) simdgroup_load(b[j], B, N, ulong2(c0 + 8 * j, k));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) simdgroup_store(acc[i][j], C, N, ulong2(c0 + 8 * j, r0 + 8 * i));
}
