// mlx_steel_gather.metal — MLX's gather matmul (steel_gemm_gather.h), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here, included as
// MLX's steel_gemm_gather.metal includes them. Names follow MLX's host code:
//   steel_gather_mm_rhs_n<n|t>_<type>_<type>_bm16_bn64_bk16_wm1_wn2  (one row per index, sorted)
//   steel_gather_mm_<nn|nt|tn|tt>_<type>_<type>_bm<BM>_bn<BN>_bk<BK>_wm<WM>_wn<WN>
// with the general kernel's tile from MLX's GEMM tile rule; has_batch and the alignments are
// function constants (10, 200-202). MLX instantiates both kernels for every transposition
// (rhs: nn, nt), every tile its rule can pick and float32, float16 and bfloat16; this file
// keeps the seven the tests' products take on a base M1: gather_mm_rhs nn (float32, float16)
// and nt (bfloat16); gather_mm nn (float32), nt (float16), tn (bfloat16) and tt (float32).
// Host side: src/gemmglossary/mlx/gather.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"
#include "mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_gather.h"

template [[host_name("steel_gather_mm_rhs_nn_float32_float32_bm16_bn64_bk16_wm1_wn2")]] [[kernel]]
decltype(gather_mm_rhs<float, 16, 64, 16, 1, 2, false, false>) gather_mm_rhs<float, 16, 64, 16, 1, 2, false, false>;
template [[host_name("steel_gather_mm_rhs_nt_bfloat16_bfloat16_bm16_bn64_bk16_wm1_wn2")]] [[kernel]]
decltype(gather_mm_rhs<bfloat16_t, 16, 64, 16, 1, 2, false, true>) gather_mm_rhs<bfloat16_t, 16, 64, 16, 1, 2, false, true>;
template [[host_name("steel_gather_mm_rhs_nn_float16_float16_bm16_bn64_bk16_wm1_wn2")]] [[kernel]]
decltype(gather_mm_rhs<half, 16, 64, 16, 1, 2, false, false>) gather_mm_rhs<half, 16, 64, 16, 1, 2, false, false>;

template [[host_name("steel_gather_mm_nn_float32_float32_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gather_mm<float, 64, 64, 16, 2, 2, false, false>) gather_mm<float, 64, 64, 16, 2, 2, false, false>;
template [[host_name("steel_gather_mm_nt_float16_float16_bm64_bn32_bk32_wm2_wn2")]] [[kernel]]
decltype(gather_mm<half, 64, 32, 32, 2, 2, false, true>) gather_mm<half, 64, 32, 32, 2, 2, false, true>;
template [[host_name("steel_gather_mm_tn_bfloat16_bfloat16_bm64_bn64_bk16_wm1_wn2")]] [[kernel]]
decltype(gather_mm<bfloat16_t, 64, 64, 16, 1, 2, true, false>) gather_mm<bfloat16_t, 64, 64, 16, 1, 2, true, false>;
template [[host_name("steel_gather_mm_tt_float32_float32_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gather_mm<float, 64, 64, 16, 2, 2, true, true>) gather_mm<float, 64, 64, 16, 2, 2, true, true>;
