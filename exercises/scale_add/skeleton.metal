// scale_add.metal: a first kernel, C = alpha * A + beta * B element by element.
//
// Computes C[r][c] = alpha * A[r][c] + beta * B[r][c]; A, B, C are M x N row-major
// float. Correct for every M, N >= 1.
//
// Buffers:   0: A (device const float*)    3: M (constant uint&)
//            1: B (device const float*)    4: N (constant uint&)
//            2: C (device float*)          5: alpha (constant float&)
//                                          6: beta  (constant float&)
// Dispatch:  threadgroup size 16 x 16 x 1;
//            dispatchThreadgroups(ceil(N/16), ceil(M/16), 1).
// Thread (x, y) of the grid owns C[y][x].

#include <metal_stdlib>
using namespace metal;

kernel void scale_add(
    device const float* A     [[buffer(0)]],
    device const float* B     [[buffer(1)]],
    device float*       C     [[buffer(2)]],
    constant uint&      M     [[buffer(3)]],
    constant uint&      N     [[buffer(4)]],
    constant float&     alpha [[buffer(5)]],
    constant float&     beta  [[buffer(6)]],
    uint2               pos   [[thread_position_in_grid]])
{
    const uint row = pos.y;  // y runs down the rows of C
    const uint col = pos.x;  // x runs along a row

    // TODO(exercise): compute this thread's element, C[row][col]. The element is at
    // offset row * N + col of each buffer. The grid is whole 16 x 16 threadgroups, so
    // it overhangs C when M or N is not a multiple of 16: a thread outside C must not
    // read or write anything.
    // END TODO
}
