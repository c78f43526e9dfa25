// matmul_tiled as an mx.fast.metal_kernel body: input_names ["A", "B"], output_names ["C"].
// MLX writes the signature, declaring A_shape, B_shape and the thread positions used here.
// grid (ceil(N/16) * 16, ceil(M/16) * 16, 1) threads, threadgroup (16, 16, 1).
const uint M = A_shape[0], K = A_shape[1], N = B_shape[1];
const uint2 lid = thread_position_in_threadgroup.xy;
const uint row = threadgroup_position_in_grid.y * 16 + lid.y;
const uint col = threadgroup_position_in_grid.x * 16 + lid.x;

threadgroup float tileA[16][16];
threadgroup float tileB[16][16];
float acc = 0.0f;

for (uint k0 = 0; k0 < K; k0 += 16) {
    const uint a_col = k0 + lid.x;
    const uint b_row = k0 + lid.y;
    tileA[lid.y][lid.x] = (row < M && a_col < K) ? A[row * K + a_col] : 0.0f;
    tileB[lid.y][lid.x] = (b_row < K && col < N) ? B[b_row * N + col] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (uint k = 0; k < 16; ++k) {
        acc += tileA[lid.y][k] * tileB[k][lid.x];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

if (row < M && col < N) {
    C[row * N + col] = acc;
}
