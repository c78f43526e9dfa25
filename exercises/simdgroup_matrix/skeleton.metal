// matmul_simd.metal: the tiled matmul rebuilt on simdgroup_matrix.
//
// Teaches: an 8x8 simdgroup_float8x8 fragment lives spread across the 32 lanes
// of a simdgroup and is loaded, multiplied and stored as a whole; four
// simdgroups split a 32x32 C tile into 16x16 quadrants, each held as 2x2
// fragments (accumulators); simdgroup_load reads a fragment out of a threadgroup
// tile given the tile's row length and the fragment's (col, row) origin; and
// results go through threadgroup memory so the store to C can be masked.
//
// Computes C = A * B, all row-major float: A is M x K, B is K x N, C is M x N.
// Correct for every M, N, K >= 1.
//
// Buffers:   0: A (device const float*)    3: M (constant uint&)
//            1: B (device const float*)    4: N (constant uint&)
//            2: C (device float*)          5: K (constant uint&)
// Dispatch:  threadgroup size 128 x 1 x 1 (4 simdgroups of 32);
//            dispatchThreadgroups(ceil(N/32), ceil(M/32), 1). Counted in threads
//            (dispatchThreads, mx.fast.metal_kernel's `grid`) that is
//            (ceil(N/32)*128, ceil(M/32), 1): x is multiplied by 128, y is not.
// Threadgroup (gx, gy) owns C[gy*32 .. gy*32+31][gx*32 .. gx*32+31].

#include <metal_stdlib>
#include <metal_simdgroup_matrix>  // simdgroup_float8x8, simdgroup_load/store/multiply_accumulate
using namespace metal;

constant constexpr uint BM = 32;        // rows of C per threadgroup
constant constexpr uint BN = 32;        // columns of C per threadgroup
constant constexpr uint BK = 16;        // depth of one K step (two 8-wide fragments)
constant constexpr uint THREADS = 128;  // 4 simdgroups x 32 lanes

kernel void matmul_simd(
    device const float* A    [[buffer(0)]],
    device const float* B    [[buffer(1)]],
    device float*       C    [[buffer(2)]],
    constant uint&      M    [[buffer(3)]],
    constant uint&      N    [[buffer(4)]],
    constant uint&      K    [[buffer(5)]],
    uint2               tgid [[threadgroup_position_in_grid]],
    uint                tid  [[thread_index_in_threadgroup]],
    uint                sgid [[simdgroup_index_in_threadgroup]])
{
    threadgroup float tileA[BM * BK];  // 32 x 16, row-major, row length BK
    threadgroup float tileB[BK * BN];  // 16 x 32, row-major, row length BN
    threadgroup float tileC[BM * BN];  // 32 x 32 result, staged for the masked store

    const uint row0 = tgid.y * BM;  // first row of this threadgroup's C tile
    const uint col0 = tgid.x * BN;  // first column of this threadgroup's C tile

    // Simdgroup 0: top-left quadrant, 1: top-right, 2: bottom-left, 3: bottom-right.
    const uint qrow = (sgid / 2) * 16;  // quadrant origin inside the 32x32 tile
    const uint qcol = (sgid % 2) * 16;

    // acc[i][j] holds the 8x8 block at (qrow + 8i, qcol + 8j) of the tile.
    simdgroup_float8x8 acc[2][2];
    for (uint i = 0; i < 2; ++i) {
        for (uint j = 0; j < 2; ++j) {
            acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        }
    }

    for (uint k0 = 0; k0 < K; k0 += BK) {
        // Cooperative load: 512 elements per tile, 4 per thread; consecutive
        // threads read consecutive addresses; zero outside the matrix.
        for (uint e = tid; e < BM * BK; e += THREADS) {
            const uint r = e / BK, k = e % BK;
            const uint gr = row0 + r, gk = k0 + k;
            tileA[e] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
        }
        for (uint e = tid; e < BK * BN; e += THREADS) {
            const uint k = e / BN, c = e % BN;
            const uint gk = k0 + k, gc = col0 + c;
            tileB[e] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);  // tiles complete

        for (uint kk = 0; kk < BK; kk += 8) {
            // TODO(exercise): one 8-deep step of this simdgroup's 16x16 quadrant. Load the
            // two 8x8 fragments of A (rows qrow and qrow + 8 of tileA, columns kk .. kk+7)
            // and the two of B (rows kk .. kk+7 of tileB, columns qcol and qcol + 8) with
            // simdgroup_load, then accumulate acc[i][j] += a[i] * b[j] for i, j in {0, 1}.
            // END TODO
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);  // tiles free to overwrite
    }

    // simdgroup_store writes all 64 elements with no mask, so store the fragments
    // into the threadgroup tile (always in range), then copy out element by element.
    for (uint i = 0; i < 2; ++i) {
        for (uint j = 0; j < 2; ++j) {
            simdgroup_store(acc[i][j], tileC, BN, ulong2(qcol + 8 * j, qrow + 8 * i));
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // all quadrants in tileC

    for (uint e = tid; e < BM * BN; e += THREADS) {
        const uint r = e / BN, c = e % BN;
        if (row0 + r < M && col0 + c < N) {
            C[(row0 + r) * N + col0 + c] = tileC[e];
        }
    }
}
