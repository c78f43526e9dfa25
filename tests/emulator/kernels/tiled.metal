#include <metal_stdlib>
using namespace metal;

#define TILE 16

// C = A * B with 16x16 threadgroup tiles. BARRIER1/BARRIER2 can be disabled with -D.
#ifndef BARRIER1
#define BARRIER1 1
#endif
#ifndef BARRIER2
#define BARRIER2 1
#endif

kernel void matmul_tiled(device const float* A [[buffer(0)]],
                         device const float* B [[buffer(1)]],
                         device float* C [[buffer(2)]],
                         constant uint& M [[buffer(3)]],
                         constant uint& N [[buffer(4)]],
                         constant uint& K [[buffer(5)]],
                         uint2 gid [[thread_position_in_grid]],
                         uint2 lid [[thread_position_in_threadgroup]]) {
  threadgroup float As[TILE][TILE];
  threadgroup float Bs[TILE][TILE];
  uint row = gid.y, col = gid.x;
  float acc = 0.0f;
  for (uint t = 0; t < K; t += TILE) {
    uint ac = t + lid.x, br = t + lid.y;
    As[lid.y][lid.x] = (row < M && ac < K) ? A[row * K + ac] : 0.0f;
    Bs[lid.y][lid.x] = (br < K && col < N) ? B[br * N + col] : 0.0f;
#if BARRIER1
    threadgroup_barrier(mem_flags::mem_threadgroup);
#endif
    for (uint k = 0; k < TILE; ++k) {
      acc += As[lid.y][k] * Bs[k][lid.x];
    }
#if BARRIER2
    threadgroup_barrier(mem_flags::mem_threadgroup);
#endif
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
