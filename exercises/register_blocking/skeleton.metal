// matmul_simd_blocked.metal: register blocking on top of simdgroup_matrix.
//
// Teaches: matmul_simd.metal with the per-simdgroup accumulator grid made a
// compile-time choice. Each simdgroup holds TM x TN fragments of 8x8. Per
// 8-deep K step it loads TM fragments of A and TN of B and issues TM*TN
// multiply-accumulates: each A fragment is reused TN times and each B fragment
// TM times straight from registers. Bigger TM, TN = more reuse per load, and more
// registers per lane (2 floats per fragment).
//
// Compile-time constants (override with -D, e.g. -DTM=2 -DTN=2 for matmul_simd's shape):
//   WM x WN   simdgroups per threadgroup              (default 2 x 2)
//   TM x TN   8x8 fragments per simdgroup             (default 4 x 2)
//   BK        K depth per step, a multiple of 8       (default 16)
// Derived: a simdgroup owns a (TM*8) x (TN*8) block of C; the threadgroup owns
//   BM x BN = (WM*TM*8) x (WN*TN*8) (defaults: 64 x 32) with WM*WN*32 threads.
//
// Computes C = A * B, all row-major float: A is M x K, B is K x N, C is M x N.
// Correct for every M, N, K >= 1.
//
// Buffers:   0: A (device const float*)    3: M (constant uint&)
//            1: B (device const float*)    4: N (constant uint&)
//            2: C (device float*)          5: K (constant uint&)
// Dispatch:  threadgroup size (WM*WN*32) x 1 x 1 (defaults: 128);
//            dispatchThreadgroups(ceil(N/BN), ceil(M/BM), 1). Counted in threads:
//            (ceil(N/BN)*WM*WN*32, ceil(M/BM), 1).

#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

#ifndef WM
#define WM 2
#endif
#ifndef WN
#define WN 2
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 2
#endif
#ifndef BK
#define BK 16
#endif

constant constexpr uint SM = TM * 8;           // rows of C per simdgroup
constant constexpr uint SN = TN * 8;           // columns of C per simdgroup
constant constexpr uint BM = WM * SM;          // rows of C per threadgroup
constant constexpr uint BN = WN * SN;          // columns of C per threadgroup
constant constexpr uint THREADS = WM * WN * 32;

static_assert(BK % 8 == 0, "BK must be a whole number of 8-deep fragments");
static_assert((BM * BK + BK * BN + BM * BN) * 4 <= 32768,
              "tiles exceed 32 KB of threadgroup memory");

kernel void matmul_simd_blocked(
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
    threadgroup float tileA[BM * BK];  // BM x BK, row length BK
    threadgroup float tileB[BK * BN];  // BK x BN, row length BN
    threadgroup float tileC[BM * BN];  // BM x BN result, staged for the masked store

    const uint row0 = tgid.y * BM;
    const uint col0 = tgid.x * BN;

    // Simdgroups are laid out row-major over the WM x WN grid of simdgroup blocks.
    const uint srow = (sgid / WN) * SM;  // this simdgroup's block inside the tile
    const uint scol = (sgid % WN) * SN;

    simdgroup_float8x8 acc[TM][TN];  // TM*TN accumulators, all in registers
    for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
            acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        }
    }

    for (uint k0 = 0; k0 < K; k0 += BK) {
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
        threadgroup_barrier(mem_flags::mem_threadgroup);

        for (uint kk = 0; kk < BK; kk += 8) {
            // TODO(exercise): one 8-deep step of this simdgroup's (TM*8) x (TN*8) block: TM
            // fragment loads of A, TN of B, then TM*TN multiply-accumulates into acc, each
            // fragment of A used TN times and each of B TM times. Write it for any TM, TN.
            // END TODO
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }

    for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
            simdgroup_store(acc[i][j], tileC, BN, ulong2(scol + 8 * j, srow + 8 * i));
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (uint e = tid; e < BM * BN; e += THREADS) {
        const uint r = e / BN, c = e % BN;
        if (row0 + r < M && col0 + c < N) {
            C[(row0 + r) * N + col0 + c] = tileC[e];
        }
    }
}
