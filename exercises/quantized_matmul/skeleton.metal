// qmv4.metal: y = W x with W quantized to 4 bits, stored the way MLX stores it.
//
// Teaches: affine quantization keeps, for every GROUP_SIZE consecutive weights
// of a row, one scale s and one bias b, and each weight as a 4-bit integer q,
// with w = s * q + b; eight of them are packed into a 32-bit word, the first
// weight in the lowest four bits. The product never rebuilds W: a lane reads
// one word, takes its eight nibbles apart with a shift and a mask, and since
// the eight weights share s and b,
//     sum_j x_j * (s * q_j + b) = s * (sum_j x_j * q_j) + b * (sum_j x_j),
// so dequantization costs two multiply-adds per word, not per weight. The
// rest is gemv.metal: ROWS rows per simdgroup reuse each loaded x, lanes
// stride along the row one word apart, and simd_sum adds the lanes' sums.
//
// Computes y = W * x for float x (K) and y (N), W (N x K) given as
//     wq     (N x K/8 uint)               weight (n, k) in bits 4*(k%8) .. 4*(k%8)+3 of wq[n][k/8]
//     scales (N x K/GROUP_SIZE float)      scales[n][g] and biases[n][g] serve
//     biases (N x K/GROUP_SIZE float)      weights g*GROUP_SIZE .. (g+1)*GROUP_SIZE-1 of row n
// so that W[n][k] = scales[n][k/GROUP_SIZE] * q + biases[n][k/GROUP_SIZE].
// Correct for every N >= 1 and every K that is a multiple of GROUP_SIZE (the
// format holds whole groups only). GROUP_SIZE (-D, default 64) is a multiple of 8.
//
// Buffers:   0: wq (device const uint*)      4: y (device float*)
//            1: scales (device const float*) 5: N (constant uint&)
//            2: biases (device const float*) 6: K (constant uint&)
//            3: x (device const float*)
// Dispatch:  threadgroup size THREADS x 1 x 1 (SIMDGROUPS simdgroups of 32;
//            2 x 32 = 64 at the defaults);
//            dispatchThreadgroups(ceil(N/ROWS_PER_THREADGROUP), 1, 1).
// Simdgroup s of threadgroup g owns rows g*ROWS_PER_THREADGROUP + s*ROWS ..
// + ROWS-1 of y (8 rows per threadgroup at the defaults).

#include <metal_stdlib>
using namespace metal;

#ifndef GROUP_SIZE
#define GROUP_SIZE 64  // weights per scale and bias: 32, 64 or 128 in MLX
#endif
#ifndef ROWS
#define ROWS 4         // rows of W per simdgroup
#endif
#ifndef SIMDGROUPS
#define SIMDGROUPS 2
#endif

constant constexpr uint BITS = 4;
constant constexpr uint PACK = 32 / BITS;   // weights per uint32 word
constant constexpr uint STEP = 32 * PACK;   // weights one simdgroup covers per step: a word per lane
constant constexpr uint THREADS = 32 * SIMDGROUPS;
constant constexpr uint ROWS_PER_THREADGROUP = ROWS * SIMDGROUPS;
static_assert(GROUP_SIZE % PACK == 0, "a word's eight weights must lie in one group");

[[kernel, max_total_threads_per_threadgroup(THREADS)]]
void qmv4(
    device const uint*  wq     [[buffer(0)]],
    device const float* scales [[buffer(1)]],
    device const float* biases [[buffer(2)]],
    device const float* x      [[buffer(3)]],
    device float*       y      [[buffer(4)]],
    constant uint&      N      [[buffer(5)]],
    constant uint&      K      [[buffer(6)]],
    uint                tg     [[threadgroup_position_in_grid]],
    uint                sg     [[simdgroup_index_in_threadgroup]],
    uint                lane   [[thread_index_in_simdgroup]])
{
    const uint row0 = tg * ROWS_PER_THREADGROUP + sg * ROWS;
    if (row0 >= N) return;  // the whole simdgroup, before any simd_sum
    const uint rows = min(uint(ROWS), N - row0);
    const uint words = K / PACK;         // words per row of wq
    const uint groups = K / GROUP_SIZE;  // scales (and biases) per row

    float acc[ROWS] = {0.0f};
    // Lane l reads words l, l + 32, l + 64, ... of each of its rows; lanes past
    // the last word of a partial step skip it.
    for (uint w = lane; w < words; w += 32) {
        const uint k = w * PACK;  // the word's first weight
        float xv[PACK];
        float xsum = 0.0f;
        for (uint j = 0; j < PACK; ++j) {
            xv[j] = x[k + j];
            xsum += xv[j];
        }
        // TODO(exercise): for each of this simdgroup's rows n = row0 + r, r < rows:
        // take the row's word w apart into its eight 4-bit integers q (weight k + j
        // is nibble j, from the least significant bits), and add to acc[r] the
        // product of x[k .. k + 7] with the weights scale * q + bias, with the scale
        // and bias of the word's group. xv[] holds x[k .. k + 7], xsum their sum.
        // END TODO
    }

    for (uint r = 0; r < ROWS; ++r) {
        const float total = simd_sum(acc[r]);
        if (lane == 0 && r < rows) {
            y[row0 + r] = total;
        }
    }
}
