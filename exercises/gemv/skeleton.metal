// gemv.metal: y = A x, the matrix-vector product that dominates decoding.
//
// Teaches: a matrix-vector product reads every element of A exactly once and
// does one multiply-add with it, so it is bound by memory, not arithmetic; the
// only reuse left is of x, which each lane loads once per step into registers
// and applies to ROWS rows; the 32 lanes of a simdgroup stride along a row,
// each reading VEC neighbouring elements, so a simdgroup's loads of one row are
// contiguous; each lane ends with a partial sum per row, and simd_sum adds the
// 32 partial sums of a row in one call (no threadgroup memory, no barrier).
//
// Computes y = A * x, row-major float: A is M x K, x has K elements, y has M.
// Correct for every M, K >= 1.
//
// Buffers:   0: A (device const float*)    3: M (constant uint&)
//            1: x (device const float*)    4: K (constant uint&)
//            2: y (device float*)
// Dispatch:  threadgroup size THREADS x 1 x 1 (SIMDGROUPS simdgroups of 32;
//            4 x 32 = 128 at the defaults);
//            dispatchThreadgroups(ceil(M/ROWS_PER_THREADGROUP), 1, 1).
// Simdgroup s of threadgroup g owns rows g*ROWS_PER_THREADGROUP + s*ROWS ..
// + ROWS-1 of y (16 rows per threadgroup at the defaults).

#include <metal_stdlib>
using namespace metal;

#ifndef ROWS
#define ROWS 4        // rows of A per simdgroup: each element of x loaded serves ROWS rows
#endif
#ifndef SIMDGROUPS
#define SIMDGROUPS 4  // simdgroups per threadgroup, each with rows of its own
#endif

constant constexpr uint VEC = 4;                      // neighbouring elements a lane reads per row and step
constant constexpr uint STEP = 32 * VEC;              // columns one simdgroup covers per step
constant constexpr uint THREADS = 32 * SIMDGROUPS;
constant constexpr uint ROWS_PER_THREADGROUP = ROWS * SIMDGROUPS;

[[kernel, max_total_threads_per_threadgroup(THREADS)]]
void gemv(
    device const float* A    [[buffer(0)]],
    device const float* x    [[buffer(1)]],
    device float*       y    [[buffer(2)]],
    constant uint&      M    [[buffer(3)]],
    constant uint&      K    [[buffer(4)]],
    uint                tg   [[threadgroup_position_in_grid]],
    uint                sg   [[simdgroup_index_in_threadgroup]],
    uint                lane [[thread_index_in_simdgroup]])
{
    const uint row0 = tg * ROWS_PER_THREADGROUP + sg * ROWS;
    // The whole simdgroup leaves together, so simd_sum below is never reached
    // by only part of one.
    if (row0 >= M) return;
    const uint rows = min(uint(ROWS), M - row0);  // fewer in the last simdgroup

    float acc[ROWS] = {0.0f};
    const uint full = K / STEP * STEP;  // columns covered by whole steps

    for (uint k0 = 0; k0 < full; k0 += STEP) {
        const uint k = k0 + lane * VEC;
        float xv[VEC];
        for (uint j = 0; j < VEC; ++j) {
            xv[j] = x[k + j];  // loaded once, used for every row below
        }
        for (uint r = 0; r < rows; ++r) {
            device const float* a = A + ulong(row0 + r) * K + k;
            for (uint j = 0; j < VEC; ++j) {
                acc[r] += a[j] * xv[j];
            }
        }
    }

    // TODO(exercise): the last, partial step (the columns from `full` to K - 1,
    // each lane its VEC of them that exist), then the sum of each row over the
    // 32 lanes, stored by one lane into y[row0 + r] for the rows this simdgroup has.
    // END TODO
}
