// mlx_steel_splitk.metal — MLX's split-K GEMM (steel_gemm_splitk.h), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here, included as
// MLX's steel_gemm_splitk.metal includes them. Names follow MLX's host code:
//   steel_gemm_splitk_<nn|nt|tn|tt>_<in type>_float32_bm<BM>_bn<BN>_bk16_wm2_wn2_MN_<t|n>aligned_K_<t|n>aligned
//   steel_gemm_splitk_accum_<out type>_float32[_axbpy]
// The first writes one float32 partial product per K partition; the second sums them, casts
// to the output type and (axbpy) applies alpha * sum + beta * c. MLX instantiates BM, BN in
// {16, 32} for every transposition, alignment and dtype; this file keeps a covering selection:
// each transposition, each dtype, both alignments of M/N and of K, both accumulation kernels.
// Host side: src/gemmglossary/mlx/steel_splitk.py (tiles and partitions from mlx/matmul.py).

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"
#include "mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_splitk.h"

template [[host_name("steel_gemm_splitk_nn_float32_float32_bm16_bn32_bk16_wm2_wn2_MN_naligned_K_naligned")]] [[kernel]]
decltype(gemm_splitk<float, float, 16, 32, 16, 2, 2, false, false, false, false>)
gemm_splitk<float, float, 16, 32, 16, 2, 2, false, false, false, false>;
template [[host_name("steel_gemm_splitk_nt_float16_float32_bm32_bn32_bk16_wm2_wn2_MN_taligned_K_taligned")]] [[kernel]]
decltype(gemm_splitk<half, float, 32, 32, 16, 2, 2, false, true, true, true>)
gemm_splitk<half, float, 32, 32, 16, 2, 2, false, true, true, true>;
template [[host_name("steel_gemm_splitk_tn_bfloat16_float32_bm32_bn16_bk16_wm2_wn2_MN_naligned_K_taligned")]] [[kernel]]
decltype(gemm_splitk<bfloat16_t, float, 32, 16, 16, 2, 2, true, false, false, true>)
gemm_splitk<bfloat16_t, float, 32, 16, 16, 2, 2, true, false, false, true>;
template [[host_name("steel_gemm_splitk_tt_float32_float32_bm32_bn32_bk16_wm2_wn2_MN_naligned_K_naligned")]] [[kernel]]
decltype(gemm_splitk<float, float, 32, 32, 16, 2, 2, true, true, false, false>)
gemm_splitk<float, float, 32, 32, 16, 2, 2, true, true, false, false>;

template [[host_name("steel_gemm_splitk_accum_float32_float32")]] [[kernel]]
decltype(gemm_splitk_accum<float, float>) gemm_splitk_accum<float, float>;
template [[host_name("steel_gemm_splitk_accum_bfloat16_float32")]] [[kernel]]
decltype(gemm_splitk_accum<float, bfloat16_t>) gemm_splitk_accum<float, bfloat16_t>;
template [[host_name("steel_gemm_splitk_accum_float16_float32_axbpy")]] [[kernel]]
decltype(gemm_splitk_accum_axpby<float, half>) gemm_splitk_accum_axpby<float, half>;
template [[host_name("steel_gemm_splitk_accum_float32_float32_axbpy")]] [[kernel]]
decltype(gemm_splitk_accum_axpby<float, float>) gemm_splitk_accum_axpby<float, float>;
