// reductions.metal: sums across a simdgroup and across a threadgroup.
//
// Teaches: the 32 lanes of a simdgroup exchange registers directly, so a sum
// over them needs no threadgroup memory and no barrier: simd_sum does it in one
// call, or by hand in log2(32) = 5 halving steps of simd_shuffle_down (lane i
// adds lane i + offset; only lane 0 ends with the total) or simd_shuffle_xor
// (lane i adds lane i ^ mask; every lane ends with it). A threadgroup sum is two
// levels: each simdgroup reduces its lanes, one lane per simdgroup writes the
// partial sum to threadgroup memory, a barrier, and simdgroup 0 reduces the
// partials. A threadgroup whose size is not a multiple of 32 ends with a partial
// simdgroup: simd_sum adds only its active lanes, while a shuffle that reads a
// lane past the end gets an undefined value.
//
// Three kernels, float throughout, each correct for every n >= 1:
//
// reduce_sum: out[g] = the sum of values[i] over i = g*T + t + j*G*T (t < T, j >= 0):
//   the G threadgroups of T threads split values[] between them, and out holds one
//   partial sum per threadgroup; the same kernel run again on out (one
//   threadgroup) gives the total.
//   Buffers:   0: values (device const float*, n)  2: n (constant uint&)
//              1: out (device float*, G)
//   Dispatch:  any threadgroup size T <= 1024 (not necessarily a multiple of 32);
//              dispatchThreadgroups(G, 1, 1), any G >= 1.
//
// shuffle_down_sum: out[s] = the sum of values[32s .. 32s+31] (elements past n count
//   as 0), by five simd_shuffle_down steps; steps[(s*6 + level)*32 + lane] is the
//   value of each lane before the first step (level 0) and after each (1 .. 5).
//   Buffers:   0: values (device const float*, n)  2: steps (device float*, 6 x 32 per simdgroup)
//              1: out (device float*, ceil(n/32))   3: n (constant uint&)
//   Dispatch:  threadgroup size a multiple of 32; dispatchThreads(ceil(n/32)*32, 1, 1).
//
// xor_sum: out[i] = the sum of the 32 elements of i's simdgroup, values[32s .. 32s+31]
//   (elements past n count as 0), by five simd_shuffle_xor steps: every lane
//   ends with the total.
//   Buffers:   0: values (device const float*, n)  2: n (constant uint&)
//              1: out (device float*, n)
//   Dispatch:  as shuffle_down_sum.

#include <metal_stdlib>
using namespace metal;

constant constexpr uint MAX_SIMDGROUPS = 32;  // 1024 threads, Metal's largest threadgroup
constant constexpr uint LEVELS = 5;           // halving steps from 32 lanes to 1

kernel void reduce_sum(
    device const float* values [[buffer(0)]],
    device float*       out    [[buffer(1)]],
    constant uint&      n      [[buffer(2)]],
    uint                gid    [[thread_position_in_grid]],
    uint                grid   [[threads_per_grid]],
    uint                tg     [[threadgroup_position_in_grid]],
    uint                sg     [[simdgroup_index_in_threadgroup]],
    uint                sgs    [[simdgroups_per_threadgroup]],
    uint                lane   [[thread_index_in_simdgroup]])
{
    threadgroup float partials[MAX_SIMDGROUPS];

    // Each thread sums its strided share of values[].
    float v = 0.0f;
    for (uint i = gid; i < n; i += grid) {
        v += values[i];
    }

    // Level 1: the lanes of each simdgroup (only the active ones, in a partial simdgroup).
    v = simd_sum(v);
    if (lane == 0) {
        partials[sg] = v;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // every partial written before any is read

    // Level 2: simdgroup 0 adds the sgs partials; its lanes past them add nothing.
    if (sg == 0) {
        v = lane < sgs ? partials[lane] : 0.0f;
        v = simd_sum(v);
        if (lane == 0) {
            out[tg] = v;
        }
    }
}

kernel void shuffle_down_sum(
    device const float* values [[buffer(0)]],
    device float*       out    [[buffer(1)]],
    device float*       steps  [[buffer(2)]],
    constant uint&      n      [[buffer(3)]],
    uint                gid    [[thread_position_in_grid]],
    uint                lane   [[thread_index_in_simdgroup]])
{
    const uint s = gid / 32;  // this simdgroup's block of 32 elements
    // Lanes past n stay, holding 0: the shuffles below read every lane.
    float v = gid < n ? values[gid] : 0.0f;
    steps[(s * (LEVELS + 1)) * 32 + lane] = v;
    uint level = 1;
    for (ushort offset = 16; offset > 0; offset /= 2) {
        // Lane i adds lane i + offset. The top `offset` lanes have no such lane
        // and get their own value back: from here on only lanes below offset
        // hold sums that mean anything.
        v += simd_shuffle_down(v, offset);
        steps[(s * (LEVELS + 1) + level) * 32 + lane] = v;
        ++level;
    }
    if (lane == 0) {
        out[s] = v;
    }
}

kernel void xor_sum(
    device const float* values [[buffer(0)]],
    device float*       out    [[buffer(1)]],
    constant uint&      n      [[buffer(2)]],
    uint                gid    [[thread_position_in_grid]])
{
    float v = gid < n ? values[gid] : 0.0f;
    for (ushort mask = 16; mask > 0; mask /= 2) {
        v += simd_shuffle_xor(v, mask);  // lanes i and i ^ mask swap and add: both hold the pair's sum
    }
    if (gid < n) {
        out[gid] = v;
    }
}
