// A threadgroup swizzle on its own: copy A to C one 16 x 16 tile per threadgroup, each
// threadgroup finding its tile the way MLX's steel GEMM does for a given swizzle_log.
//
// Threadgroup (x, y) of the grid takes the tile in row (y << swizzle_log) plus the low
// swizzle_log bits of x, column x >> swizzle_log: consecutive threadgroups walk down a
// column of 2^swizzle_log tiles before moving one tile to the right.
//
// Buffers:   0: A (device const float*), 1: C (device float*), both M x N row-major
//            2: M, 3: N, 4: swizzle_log (constant uint&)
// Dispatch:  threadgroups of 16 x 16 threads; the tile grid with its x extent multiplied
//            and its y extent divided (rounding up) by 2^swizzle_log:
//            (ceil(N/16) << swizzle_log, ceil(ceil(M/16) / 2^swizzle_log), 1).

#include <metal_stdlib>
using namespace metal;

constant constexpr uint TILE = 16;

kernel void swizzled_copy(
    device const float* A           [[buffer(0)]],
    device float*       C           [[buffer(1)]],
    constant uint&      M           [[buffer(2)]],
    constant uint&      N           [[buffer(3)]],
    constant uint&      swizzle_log [[buffer(4)]],
    uint2               tgid        [[threadgroup_position_in_grid]],
    uint2               lid         [[thread_position_in_threadgroup]])
{
    const uint tiles_m = (M + TILE - 1) / TILE;
    const uint tiles_n = (N + TILE - 1) / TILE;
    const uint tile_row = (tgid.y << swizzle_log) + (tgid.x & ((1u << swizzle_log) - 1));
    const uint tile_col = tgid.x >> swizzle_log;
    if (tile_row >= tiles_m || tile_col >= tiles_n) {
        return;  // past the last band of tiles: the whole threadgroup leaves
    }
    const uint row = tile_row * TILE + lid.y, col = tile_col * TILE + lid.x;
    if (row < M && col < N) {
        C[row * N + col] = A[row * N + col];
    }
}
