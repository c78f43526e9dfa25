// A double-buffered 16x16 tiled matmul, C = A * B (row-major float), for the tests of the
// double-buffer figure: step s + 1 is loaded into one copy of each tile while step s is
// multiplied from the other, so one barrier per K step suffices.
// Dispatch: threadgroups (ceil(N/BN), ceil(M/BM), 1) of (BN, BM, 1) threads.

#include <metal_stdlib>
using namespace metal;

constant constexpr uint BM = 16;
constant constexpr uint BN = 16;
constant constexpr uint BK = 16;
constant constexpr uint THREADS = BM * BN;

kernel void double_buffered(device const float* A [[buffer(0)]],
                            device const float* B [[buffer(1)]],
                            device float*       C [[buffer(2)]],
                            constant uint&      M [[buffer(3)]],
                            constant uint&      N [[buffer(4)]],
                            constant uint&      K [[buffer(5)]],
                            uint2 tgid [[threadgroup_position_in_grid]],
                            uint2 lid  [[thread_position_in_threadgroup]])
{
    threadgroup float tileA[2][BM][BK];
    threadgroup float tileB[2][BK][BN];
    const uint row = tgid.y * BM + lid.y;
    const uint col = tgid.x * BN + lid.x;
    const uint steps = (K + BK - 1) / BK;

    tileA[0][lid.y][lid.x] = (row < M && lid.x < K) ? A[row * K + lid.x] : 0.0f;
    tileB[0][lid.y][lid.x] = (lid.y < K && col < N) ? B[lid.y * N + col] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);

    float acc = 0.0f;
    for (uint s = 0; s < steps; ++s) {
        const uint cur = s % 2, nxt = 1 - cur;
        if (s + 1 < steps) {  // the same for every thread
            const uint k0 = (s + 1) * BK;
            tileA[nxt][lid.y][lid.x] = (row < M && k0 + lid.x < K) ? A[row * K + k0 + lid.x] : 0.0f;
            tileB[nxt][lid.y][lid.x] = (k0 + lid.y < K && col < N) ? B[(k0 + lid.y) * N + col] : 0.0f;
        }
        for (uint k = 0; k < BK; ++k) {
            acc += tileA[cur][lid.y][k] * tileB[cur][k][lid.x];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);  // the only barrier of a K step
    }
    if (row < M && col < N) {
        C[row * N + col] = acc;
    }
}
