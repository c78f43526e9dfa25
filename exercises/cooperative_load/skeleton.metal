// matmul_tiled.metal: threadgroup tiling, the first step past a naive matmul.
//
// Teaches: a 16x16 threadgroup stages a 16x16 tile of A and a 16x16 tile of B in
// threadgroup memory, so each value read from device memory is used 16 times;
// the two barriers of the K loop and the reason for each; zero-filled loads and
// a masked store, which make every M, N, K >= 1 correct.
//
// Computes C = A * B, all row-major float: A is M x K, B is K x N, C is M x N.
//
// Buffers:   0: A (device const float*)    3: M (constant uint&)
//            1: B (device const float*)    4: N (constant uint&)
//            2: C (device float*)          5: K (constant uint&)
// Dispatch:  threadgroup size 16 x 16 x 1 (exactly; the tile size is fixed);
//            dispatchThreadgroups(ceil(N/16), ceil(M/16), 1). Counted in threads
//            (dispatchThreads, mx.fast.metal_kernel's `grid`) that is
//            (ceil(N/16)*16, ceil(M/16)*16, 1): the grid is padded to whole
//            threadgroups, so every tile position has a thread to load it.
// Thread (x, y) of threadgroup (gx, gy) owns C[gy*16 + y][gx*16 + x].

#include <metal_stdlib>
using namespace metal;

constant constexpr uint TILE = 16;  // threadgroup tile side; must match the dispatch

kernel void matmul_tiled(
    device const float* A    [[buffer(0)]],
    device const float* B    [[buffer(1)]],
    device float*       C    [[buffer(2)]],
    constant uint&      M    [[buffer(3)]],
    constant uint&      N    [[buffer(4)]],
    constant uint&      K    [[buffer(5)]],
    uint2               lid  [[thread_position_in_threadgroup]],
    uint2               tgid [[threadgroup_position_in_grid]])
{
    // One tile of A and one of B, shared by the 256 threads of the threadgroup.
    threadgroup float tileA[TILE][TILE];
    threadgroup float tileB[TILE][TILE];

    const uint row = tgid.y * TILE + lid.y;  // row of C (and of A) this thread owns
    const uint col = tgid.x * TILE + lid.x;  // column of C (and of B) this thread owns

    float acc = 0.0f;

    for (uint k0 = 0; k0 < K; k0 += TILE) {
        // TODO(exercise): the cooperative load of step k0. Thread (lid.x, lid.y) writes
        // tileA[lid.y][lid.x] = A[row][k0 + lid.x] and tileB[lid.y][lid.x] = B[k0 + lid.y][col],
        // and 0 instead wherever that element lies outside A or B.
        // END TODO

        // Barrier 1: every element of both tiles is written before anyone reads.
        threadgroup_barrier(mem_flags::mem_threadgroup);

        for (uint k = 0; k < TILE; ++k) {
            acc += tileA[lid.y][k] * tileB[k][lid.x];
        }

        // Barrier 2: everyone is done reading before the next pass overwrites.
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }

    // Masked store: padding threads computed a value for a C element that does
    // not exist. They still had to run (they loaded tiles and hit both
    // barriers), but they must not write.
    if (row < M && col < N) {
        C[row * N + col] = acc;
    }
}
