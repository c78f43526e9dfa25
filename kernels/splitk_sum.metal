// The second pass of a split-K GEMM: C = the sum of the partial products.
//
// The first pass wrote one float partial product of C per partition of K, partition p's
// M x N slice starting p * M * N elements into `partials`. This kernel adds them up, one
// thread per element of C, in partition order (so the result is the same on every run).
//
// Buffers:   0: partials (device const float*), P x M x N
//            1: C (device float*), M x N row-major
//            2: P, 3: M, 4: N (constant uint&)
// Dispatch:  threadgroups of 16 x 16 threads, ceil(N/16) across and ceil(M/16) down.

#include <metal_stdlib>
using namespace metal;

kernel void splitk_sum(
    device const float* partials [[buffer(0)]],
    device float*       C        [[buffer(1)]],
    constant uint&      P        [[buffer(2)]],
    constant uint&      M        [[buffer(3)]],
    constant uint&      N        [[buffer(4)]],
    uint2               pos      [[thread_position_in_grid]])
{
    const uint row = pos.y, col = pos.x;
    if (row < M && col < N) {
        const uint i = row * N + col;
        float sum = 0.0f;
        for (uint p = 0; p < P; ++p) {
            sum += partials[p * M * N + i];  // partition p's slice is M * N further on
        }
        C[i] = sum;
    }
}
