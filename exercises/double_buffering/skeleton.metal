// tiled_gemm_db.metal: tiled_gemm.metal with double-buffered tiles, C = alpha * A * B + beta * C.
//
// Teaches double buffering (software pipelining of the K loop), the one change from
// tiled_gemm.metal:
//   1. two copies of each staged tile, tileA[2] and tileB[2], used alternately: step s
//      multiplies copy s % 2 while the same threads stage step s + 1 into the other copy;
//   2. a prologue that stages step 0 before the loop;
//   3. one threadgroup_barrier per K step instead of two. It orders the staging of step s
//      before its reads (read after write), and the reads of step s - 1 before step s + 1
//      is staged into their copy (write after read);
//   4. the price: twice the threadgroup memory for the tiles, 32 KB at the defaults, all
//      that the static_assert below allows.
// The tile pyramid, the float4 loads with zero fill and the epilogue are tiled_gemm.metal's.
// Every M, N, K >= 1 is handled: partial tiles are zero-filled on load and the
// store is masked, so no shape rule applies.
//
// Compile-time constants (override with -D):
//   WM x WN   simdgroups per threadgroup                       (default 2 x 2)
//   TM x TN   8x8 fragments per simdgroup (register blocking)  (default 4 x 4)
//   BK        K depth staged per step, a multiple of 8         (default 16)
// Defaults: 64 x 64 of C per threadgroup, 32 x 32 per simdgroup, 128 threads.
//
// Buffers:   0: A (device const float*), M x K row-major, row stride lda (>= K)
//            1: B (device const float*), K x N row-major, row stride ldb (>= N)
//            2: C (device float*),       M x N row-major, row stride ldc (>= N); read
//               for beta != 0, then overwritten
//            3: GemmParams (constant), 32 bytes, no padding:
//                 offset  0  uint  M       offset 16  uint  ldb
//                 offset  4  uint  N       offset 20  uint  ldc
//                 offset  8  uint  K       offset 24  float alpha
//                 offset 12  uint  lda     offset 28  float beta
//               numpy: dtype([("M","<u4"),("N","<u4"),("K","<u4"),("lda","<u4"),
//                             ("ldb","<u4"),("ldc","<u4"),("alpha","<f4"),("beta","<f4")])
//            A and B must start 16-byte aligned (keep any buffer bind offset a multiple of 16).
// Dispatch:  threadgroup size exactly WM*WN*32 x 1 x 1 (defaults: 128 x 1 x 1);
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
#define TN 4
#endif
#ifndef BK
#define BK 16
#endif

constant constexpr uint SM = TM * 8;             // rows of C per simdgroup
constant constexpr uint SN = TN * 8;             // columns of C per simdgroup
constant constexpr uint BM = WM * SM;            // rows of C per threadgroup
constant constexpr uint BN = WN * SN;            // columns of C per threadgroup
constant constexpr uint THREADS = WM * WN * 32;  // one simdgroup per block

static_assert(BK % 8 == 0, "BK must be a whole number of 8-deep fragments");
static_assert((2 * (BM * BK + BK * BN) + BM * BN) * sizeof(float) <= 32768,
              "two copies of the tiles and the C tile exceed 32 KB of threadgroup memory");

struct GemmParams {
    uint  M, N, K;        // C is M x N, the reduction runs over K
    uint  lda, ldb, ldc;  // row strides in elements
    float alpha, beta;
};

// Four consecutive elements X[row][col .. col+3] of a rows x cols matrix with row
// stride ld; zero wherever they fall outside it (as in tiled_gemm.metal).
inline float4 load4(device const float* X, uint ld, uint rows, uint cols,
                    uint row, uint col)
{
    if (row >= rows) {
        return float4(0.0f);
    }
    const uint offset = row * ld + col;
    if (offset % 4 == 0 && col + 4 <= cols) {
        return *reinterpret_cast<device const float4*>(X + offset);
    }
    return float4(col + 0 < cols ? X[offset + 0] : 0.0f,
                  col + 1 < cols ? X[offset + 1] : 0.0f,
                  col + 2 < cols ? X[offset + 2] : 0.0f,
                  col + 3 < cols ? X[offset + 3] : 0.0f);
}

// Stage the K step starting at k0 into one copy of the tiles: the whole threadgroup
// copies both slices in float4 quads, consecutive threads taking consecutive quads.
inline void stage(device const float* A, device const float* B, constant GemmParams& p,
                  uint row0, uint col0, uint k0, uint tid,
                  threadgroup float* dstA, threadgroup float* dstB)
{
    for (uint q = tid; q < BM * BK / 4; q += THREADS) {
        const uint r = q / (BK / 4), k = (q % (BK / 4)) * 4;
        const float4 v = load4(A, p.lda, p.M, p.K, row0 + r, k0 + k);
        threadgroup float* dst = dstA + r * BK + k;
        dst[0] = v.x; dst[1] = v.y; dst[2] = v.z; dst[3] = v.w;
    }
    for (uint q = tid; q < BK * BN / 4; q += THREADS) {
        const uint k = q / (BN / 4), c = (q % (BN / 4)) * 4;
        const float4 v = load4(B, p.ldb, p.K, p.N, k0 + k, col0 + c);
        threadgroup float* dst = dstB + k * BN + c;
        dst[0] = v.x; dst[1] = v.y; dst[2] = v.z; dst[3] = v.w;
    }
}

[[kernel, max_total_threads_per_threadgroup(WM * WN * 32)]]
void tiled_gemm_db(
    device const float*  A    [[buffer(0)]],
    device const float*  B    [[buffer(1)]],
    device float*        C    [[buffer(2)]],
    constant GemmParams& p    [[buffer(3)]],
    uint2                tgid [[threadgroup_position_in_grid]],
    uint                 tid  [[thread_index_in_threadgroup]],
    uint                 sgid [[simdgroup_index_in_threadgroup]])
{
    threadgroup float tileA[2][BM * BK];  // two copies of the BM x BK slice of A
    threadgroup float tileB[2][BK * BN];  // two copies of the BK x BN slice of B
    threadgroup float tileC[BM * BN];     // A*B for this tile, staged for the epilogue

    const uint row0 = tgid.y * BM;       // this threadgroup's tile of C
    const uint col0 = tgid.x * BN;
    const uint srow = (sgid / WN) * SM;  // this simdgroup's block inside the tile
    const uint scol = (sgid % WN) * SN;

    simdgroup_float8x8 acc[TM][TN];
    for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
            acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        }
    }

    const uint steps = (p.K + BK - 1) / BK;
    stage(A, B, p, row0, col0, 0, tid, tileA[0], tileB[0]);  // prologue: step 0 into copy 0

    for (uint s = 0; s < steps; ++s) {
        // TODO(exercise): step s multiplies copy `cur` (below). Choose it, and the copy
        // step s + 1 is staged into; order both with this step's one threadgroup_barrier;
        // then, when there is a step s + 1, stage it with
        // stage(A, B, p, row0, col0, (s + 1) * BK, tid, tileA[...], tileB[...]).
        const uint cur = 0;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        // END TODO

        // Multiply step s from copy `cur` while copy `nxt` fills.
        for (uint kk = 0; kk < BK; kk += 8) {
            simdgroup_float8x8 a[TM];
            simdgroup_float8x8 b[TN];
            for (uint i = 0; i < TM; ++i) {
                simdgroup_load(a[i], tileA[cur], BK, ulong2(kk, srow + 8 * i));
            }
            for (uint j = 0; j < TN; ++j) {
                simdgroup_load(b[j], tileB[cur], BN, ulong2(scol + 8 * j, kk));
            }
            for (uint i = 0; i < TM; ++i) {
                for (uint j = 0; j < TN; ++j) {
                    simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
                }
            }
        }
    }

    // Epilogue, as in tiled_gemm.metal. tileC is memory of its own, so no barrier is
    // needed between the last multiply and these stores.
    for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
            simdgroup_store(acc[i][j], tileC, BN, ulong2(scol + 8 * j, srow + 8 * i));
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // whole tile staged

    for (uint e = tid; e < BM * BN; e += THREADS) {
        const uint r = e / BN, c = e % BN;
        const uint gr = row0 + r, gc = col0 + c;
        if (gr < p.M && gc < p.N) {
            device float& out = C[gr * p.ldc + gc];
            out = (p.beta == 0.0f) ? p.alpha * tileC[e]
                                   : p.alpha * tileC[e] + p.beta * out;
        }
    }
}
