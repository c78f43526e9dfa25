// A matrix-vector product over llama.cpp's q4_0 blocks: y = W x, the scale read from inside
// each block (ggml-common.h's block_q4_0: a half d, then 16 bytes of 4-bit codes).
//
// W (N x K, K a multiple of 32) is N rows of K/32 blocks of 9 ushort words each: word 0 holds
// the bits of d, words 1-8 the 16 code bytes (little-endian: byte 2i is the low byte of word
// i + 1). In byte j (j < 16) the low nibble is weight j's code and the high nibble weight
// j + 16's; a weight is d * (code - 8). x and y are float.
//
// Buffers:   0: W (device const ushort*)   2: y (device float*)
//            1: x (device const float*)    3: N (constant uint&)   4: K (constant uint&)
// Dispatch:  threadgroups of 64 threads (2 simdgroups), ceil(N / 2) of them; simdgroup s of
//            threadgroup g owns row 2g + s, and lane l reads blocks l, l + 32, ... of it.

#include <metal_stdlib>
using namespace metal;

constant constexpr uint QK = 32;            // weights per block
constant constexpr uint BLOCK_WORDS = 9;    // 18 bytes: d, then 16 code bytes
constant constexpr uint SIMDGROUPS = 2;

[[kernel, max_total_threads_per_threadgroup(32 * SIMDGROUPS)]]
void q4_0_gemv(
    device const ushort* W    [[buffer(0)]],
    device const float*  x    [[buffer(1)]],
    device float*        y    [[buffer(2)]],
    constant uint&       N    [[buffer(3)]],
    constant uint&       K    [[buffer(4)]],
    uint                 tg   [[threadgroup_position_in_grid]],
    uint                 sg   [[simdgroup_index_in_threadgroup]],
    uint                 lane [[thread_index_in_simdgroup]])
{
    const uint row = tg * SIMDGROUPS + sg;
    if (row >= N) return;  // the whole simdgroup, before the simd_sum
    const uint nblocks = K / QK;
    device const ushort* blocks = W + row * nblocks * BLOCK_WORDS;

    float acc = 0.0f;
    for (uint b = lane; b < nblocks; b += 32) {
        device const ushort* blk = blocks + b * BLOCK_WORDS;
        device const float* xb = x + b * QK;
        const float d = float(as_type<half>(blk[0]));
        device const uchar* qs = (device const uchar*)(blk + 1);
        float sum = 0.0f;
        for (uint j = 0; j < QK / 2; ++j) {
            const uchar byte = qs[j];
            sum += xb[j] * (float(byte & 0xF) - 8.0f) + xb[j + QK / 2] * (float(byte >> 4) - 8.0f);
        }
        acc += d * sum;
    }
    acc = simd_sum(acc);
    if (lane == 0) {
        y[row] = acc;
    }
}
