// mlx_quantized.metal — MLX's affine quantized matmul kernels (quantized.h), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here, included the
// way MLX's quantized.metal includes them. Names follow MLX's host code:
//   affine_<kernel>_<type>_gs_<group size>_b_<bits>[_alN_<true|false>]_batch_<0|1>
// with <type> the Metal type name (float, float16_t, bfloat16_t), alN (qmm_t only) whether N is
// a multiple of the 32-wide output tile, batch whether the kernel walks batch shapes and strides.
// The template argument after `batched` keeps its default (no global scale): what MLX's host
// code asks for in affine mode.
//
// MLX instantiates every kernel for every dtype, group size (32, 64, 128) and bit width; this
// file holds a covering selection: each kernel with each dtype, each bits × group size pair,
// batched and not, aligned and unaligned N. Host side: src/gemmglossary/mlx/quantized.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"
#include "mlx/backend/metal/kernels/quantized_utils.h"
#include "mlx/backend/metal/kernels/quantized.h"

// qmv_fast: matrix-vector, N a multiple of 8 and K of the block (no guards)
template [[host_name("affine_qmv_fast_float_gs_64_b_4_batch_0")]] [[kernel]]
decltype(affine_qmv_fast<float, 64, 4, false>) affine_qmv_fast<float, 64, 4, false>;
template [[host_name("affine_qmv_fast_float16_t_gs_32_b_8_batch_1")]] [[kernel]]
decltype(affine_qmv_fast<float16_t, 32, 8, true>) affine_qmv_fast<float16_t, 32, 8, true>;
template [[host_name("affine_qmv_fast_bfloat16_t_gs_128_b_4_batch_0")]] [[kernel]]
decltype(affine_qmv_fast<bfloat16_t, 128, 4, false>) affine_qmv_fast<bfloat16_t, 128, 4, false>;

// qmv: matrix-vector with guarded rows and K tail
template [[host_name("affine_qmv_float_gs_128_b_8_batch_0")]] [[kernel]]
decltype(affine_qmv<float, 128, 8, false>) affine_qmv<float, 128, 8, false>;
template [[host_name("affine_qmv_float16_t_gs_32_b_4_batch_0")]] [[kernel]]
decltype(affine_qmv<float16_t, 32, 4, false>) affine_qmv<float16_t, 32, 4, false>;
template [[host_name("affine_qmv_bfloat16_t_gs_64_b_8_batch_1")]] [[kernel]]
decltype(affine_qmv<bfloat16_t, 64, 8, true>) affine_qmv<bfloat16_t, 64, 8, true>;

// qvm: vector-matrix (W stored K x N)
template [[host_name("affine_qvm_float_gs_32_b_4_batch_1")]] [[kernel]]
decltype(affine_qvm<float, 32, 4, true>) affine_qvm<float, 32, 4, true>;
template [[host_name("affine_qvm_float16_t_gs_64_b_8_batch_0")]] [[kernel]]
decltype(affine_qvm<float16_t, 64, 8, false>) affine_qvm<float16_t, 64, 8, false>;
template [[host_name("affine_qvm_bfloat16_t_gs_32_b_4_batch_0")]] [[kernel]]
decltype(affine_qvm<bfloat16_t, 32, 4, false>) affine_qvm<bfloat16_t, 32, 4, false>;

// qmm_t: matrix-matrix, W stored N x K (the linear-layer layout)
template [[host_name("affine_qmm_t_float_gs_32_b_8_alN_false_batch_1")]] [[kernel]]
decltype(affine_qmm_t<float, 32, 8, false, true>) affine_qmm_t<float, 32, 8, false, true>;
template [[host_name("affine_qmm_t_float16_t_gs_128_b_4_alN_true_batch_0")]] [[kernel]]
decltype(affine_qmm_t<float16_t, 128, 4, true, false>) affine_qmm_t<float16_t, 128, 4, true, false>;
template [[host_name("affine_qmm_t_bfloat16_t_gs_64_b_4_alN_false_batch_1")]] [[kernel]]
decltype(affine_qmm_t<bfloat16_t, 64, 4, false, true>) affine_qmm_t<bfloat16_t, 64, 4, false, true>;

// qmm_n: matrix-matrix, W stored K x N
template [[host_name("affine_qmm_n_float_gs_128_b_4_batch_0")]] [[kernel]]
decltype(affine_qmm_n<float, 128, 4, false>) affine_qmm_n<float, 128, 4, false>;
template [[host_name("affine_qmm_n_float16_t_gs_128_b_8_batch_1")]] [[kernel]]
decltype(affine_qmm_n<float16_t, 128, 8, true>) affine_qmm_n<float16_t, 128, 8, true>;
template [[host_name("affine_qmm_n_bfloat16_t_gs_32_b_8_batch_0")]] [[kernel]]
decltype(affine_qmm_n<bfloat16_t, 32, 8, false>) affine_qmm_n<bfloat16_t, 32, 8, false>;
