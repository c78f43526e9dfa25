// matmul_simd_half.metal: matmul_simd.metal for 16-bit inputs, with the accumulator type
// chosen separately from the input type.
//
// Teaches: a kernel template over two types, instantiated once per pair and named by
// [[host_name]] (the way MLX names its kernels by dtype); inputs and output in T (half
// or bfloat), converted once, when they are staged, to AccT, the type of the
// threadgroup tiles and of every simdgroup_matrix fragment: simdgroup_float8x8 when
// AccT is float, simdgroup_half8x8 / simdgroup_bfloat8x8 when it is the 16-bit type
// itself; and the one rounding to T, when C is stored.
//
// Computes C = A * B, all row-major: A is M x K, B is K x N, C is M x N, elements of T.
// Correct for every M, N, K >= 1.
//
// Kernels (host name: T, AccT):
//   matmul_simd_half_float16_float32     half,   float
//   matmul_simd_half_bfloat16_float32    bfloat, float
//   matmul_simd_half_float16_float16     half,   half
//   matmul_simd_half_bfloat16_bfloat16   bfloat, bfloat
// With T = AccT = float this is matmul_simd.metal, the float32 baseline.
// bfloat needs Metal Shading Language 3.1 or later.
//
// Buffers:   0: A (device const T*)    3: M (constant uint&)
//            1: B (device const T*)    4: N (constant uint&)
//            2: C (device T*)          5: K (constant uint&)
// Dispatch:  threadgroup size 128 x 1 x 1 (4 simdgroups of 32);
//            dispatchThreadgroups(ceil(N/32), ceil(M/32), 1).
// Threadgroup (gx, gy) owns C[gy*32 .. gy*32+31][gx*32 .. gx*32+31].

#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

constant constexpr uint BM = 32;        // rows of C per threadgroup
constant constexpr uint BN = 32;        // columns of C per threadgroup
constant constexpr uint BK = 16;        // depth of one K step (two 8-wide fragments)
constant constexpr uint THREADS = 128;  // 4 simdgroups x 32 lanes

template <typename T, typename AccT>
[[kernel, max_total_threads_per_threadgroup(THREADS)]] void matmul_simd_half(
    device const T*     A    [[buffer(0)]],
    device const T*     B    [[buffer(1)]],
    device T*           C    [[buffer(2)]],
    constant uint&      M    [[buffer(3)]],
    constant uint&      N    [[buffer(4)]],
    constant uint&      K    [[buffer(5)]],
    uint2               tgid [[threadgroup_position_in_grid]],
    uint                tid  [[thread_index_in_threadgroup]],
    uint                sgid [[simdgroup_index_in_threadgroup]])
{
    using frag = simdgroup_matrix<AccT, 8, 8>;  // simdgroup_float8x8 when AccT is float

    threadgroup AccT tileA[BM * BK];  // staged in the accumulator's type
    threadgroup AccT tileB[BK * BN];
    threadgroup AccT tileC[BM * BN];  // the accumulators, before the rounding to T

    const uint row0 = tgid.y * BM;
    const uint col0 = tgid.x * BN;
    const uint qrow = (sgid / 2) * 16;  // this simdgroup's 16x16 quadrant of the tile
    const uint qcol = (sgid % 2) * 16;

    frag acc[2][2];
    for (uint i = 0; i < 2; ++i) {
        for (uint j = 0; j < 2; ++j) {
            acc[i][j] = make_filled_simdgroup_matrix<AccT, 8, 8>(AccT(0));
        }
    }

    for (uint k0 = 0; k0 < K; k0 += BK) {
        // The only conversion on the way in: T to AccT, exact from half or bfloat to float.
        for (uint e = tid; e < BM * BK; e += THREADS) {
            const uint r = e / BK, k = e % BK;
            const uint gr = row0 + r, gk = k0 + k;
            tileA[e] = (gr < M && gk < K) ? AccT(A[gr * K + gk]) : AccT(0);
        }
        for (uint e = tid; e < BK * BN; e += THREADS) {
            const uint k = e / BN, c = e % BN;
            const uint gk = k0 + k, gc = col0 + c;
            tileB[e] = (gk < K && gc < N) ? AccT(B[gk * N + gc]) : AccT(0);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);  // tiles complete

        for (uint kk = 0; kk < BK; kk += 8) {
            frag a[2], b[2];
            simdgroup_load(a[0], tileA, BK, ulong2(kk, qrow + 0));
            simdgroup_load(a[1], tileA, BK, ulong2(kk, qrow + 8));
            simdgroup_load(b[0], tileB, BN, ulong2(qcol + 0, kk));
            simdgroup_load(b[1], tileB, BN, ulong2(qcol + 8, kk));
            // Each product is summed into acc in AccT: with a 16-bit AccT every one
            // of these K / 8 steps rounds the running sum to 16 bits.
            simdgroup_multiply_accumulate(acc[0][0], a[0], b[0], acc[0][0]);
            simdgroup_multiply_accumulate(acc[0][1], a[0], b[1], acc[0][1]);
            simdgroup_multiply_accumulate(acc[1][0], a[1], b[0], acc[1][0]);
            simdgroup_multiply_accumulate(acc[1][1], a[1], b[1], acc[1][1]);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);  // tiles free to overwrite
    }

    for (uint i = 0; i < 2; ++i) {
        for (uint j = 0; j < 2; ++j) {
            simdgroup_store(acc[i][j], tileC, BN, ulong2(qcol + 8 * j, qrow + 8 * i));
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // all quadrants in tileC

    for (uint e = tid; e < BM * BN; e += THREADS) {
        const uint r = e / BN, c = e % BN;
        if (row0 + r < M && col0 + c < N) {
            C[(row0 + r) * N + col0 + c] = T(tileC[e]);  // to T: with a float AccT, the one rounding
        }
    }
}

#define INSTANTIATE(name, T, AccT)                                                   \
    template [[host_name("matmul_simd_half_" #name)]] [[kernel]]                     \
    decltype(matmul_simd_half<T, AccT>) matmul_simd_half<T, AccT>;

INSTANTIATE(float16_float32, half, float)
INSTANTIATE(bfloat16_float32, bfloat, float)
INSTANTIATE(float16_float16, half, half)
INSTANTIATE(bfloat16_bfloat16, bfloat, bfloat)
