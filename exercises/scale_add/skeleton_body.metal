// scale_add as an mx.fast.metal_kernel body: input_names ["A", "B", "alpha", "beta"],
// output_names ["C"]. MLX writes the signature; A_shape[0] is M, A_shape[1] is N.
// grid (ceil(N/16) * 16, ceil(M/16) * 16, 1) threads, threadgroup (16, 16, 1).
const uint row = thread_position_in_grid.y;
const uint col = thread_position_in_grid.x;
const uint M = A_shape[0];
const uint N = A_shape[1];
// TODO(exercise): compute C[row][col] = alpha * A[row][col] + beta * B[row][col],
// at offset row * N + col; the grid overhangs C, so threads outside it do nothing.
// END TODO
