// steel_gemm.metal — MLX's production GEMM, instantiated the way MLX's own build does.
//
// Nothing here is a GEMM of ours: this file only includes MLX's steel headers (copied
// out of the pinned mlx wheel into kernels/vendor/ by `gemmglossary vendor`) and
// instantiates the `gemm` kernel template of steel_gemm_fused.h with explicit
// `template [[host_name(...)]] [[kernel]]` lines, the form MLX's
// steel_gemm_fused.metal produces through its instantiate_kernel macro. The host
// names follow MLX's scheme: steel_gemm_fused_<nn|nt|tn|tt>_<in>_<out>_bm_bn_bk_wm_wn.
//
// Host side (buffers, GEMMParams, function constants, grid): see
// src/gemmglossary/mlx/steel.py, which follows mlx/backend/metal/matmul.cpp.
// Compile with the include directory kernels/vendor.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"
#include "mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_fused.h"

// float32, BM=32 BN=32 BK=16, WM=2 WN=2: all four transpose combinations
template [[host_name("steel_gemm_fused_nn_float32_float32_bm32_bn32_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<float, 32, 32, 16, 2, 2, false, false, float>) gemm<float, 32, 32, 16, 2, 2, false, false, float>;
template [[host_name("steel_gemm_fused_nt_float32_float32_bm32_bn32_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<float, 32, 32, 16, 2, 2, false, true, float>) gemm<float, 32, 32, 16, 2, 2, false, true, float>;
template [[host_name("steel_gemm_fused_tn_float32_float32_bm32_bn32_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<float, 32, 32, 16, 2, 2, true, false, float>) gemm<float, 32, 32, 16, 2, 2, true, false, float>;
template [[host_name("steel_gemm_fused_tt_float32_float32_bm32_bn32_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<float, 32, 32, 16, 2, 2, true, true, float>) gemm<float, 32, 32, 16, 2, 2, true, true, float>;

// float32, BM=64 BN=64 BK=16, WM=2 WN=2: all four transpose combinations
template [[host_name("steel_gemm_fused_nn_float32_float32_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<float, 64, 64, 16, 2, 2, false, false, float>) gemm<float, 64, 64, 16, 2, 2, false, false, float>;
template [[host_name("steel_gemm_fused_nt_float32_float32_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<float, 64, 64, 16, 2, 2, false, true, float>) gemm<float, 64, 64, 16, 2, 2, false, true, float>;
template [[host_name("steel_gemm_fused_tn_float32_float32_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<float, 64, 64, 16, 2, 2, true, false, float>) gemm<float, 64, 64, 16, 2, 2, true, false, float>;
template [[host_name("steel_gemm_fused_tt_float32_float32_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<float, 64, 64, 16, 2, 2, true, true, float>) gemm<float, 64, 64, 16, 2, 2, true, true, float>;

// float16, BM=32 BN=32 BK=16, WM=2 WN=2: all four transpose combinations
template [[host_name("steel_gemm_fused_nn_float16_float16_bm32_bn32_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<half, 32, 32, 16, 2, 2, false, false, float>) gemm<half, 32, 32, 16, 2, 2, false, false, float>;
template [[host_name("steel_gemm_fused_nt_float16_float16_bm32_bn32_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<half, 32, 32, 16, 2, 2, false, true, float>) gemm<half, 32, 32, 16, 2, 2, false, true, float>;
template [[host_name("steel_gemm_fused_tn_float16_float16_bm32_bn32_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<half, 32, 32, 16, 2, 2, true, false, float>) gemm<half, 32, 32, 16, 2, 2, true, false, float>;
template [[host_name("steel_gemm_fused_tt_float16_float16_bm32_bn32_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<half, 32, 32, 16, 2, 2, true, true, float>) gemm<half, 32, 32, 16, 2, 2, true, true, float>;

// float16, BM=64 BN=64 BK=16, WM=2 WN=2: all four transpose combinations
template [[host_name("steel_gemm_fused_nn_float16_float16_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<half, 64, 64, 16, 2, 2, false, false, float>) gemm<half, 64, 64, 16, 2, 2, false, false, float>;
template [[host_name("steel_gemm_fused_nt_float16_float16_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<half, 64, 64, 16, 2, 2, false, true, float>) gemm<half, 64, 64, 16, 2, 2, false, true, float>;
template [[host_name("steel_gemm_fused_tn_float16_float16_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<half, 64, 64, 16, 2, 2, true, false, float>) gemm<half, 64, 64, 16, 2, 2, true, false, float>;
template [[host_name("steel_gemm_fused_tt_float16_float16_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(gemm<half, 64, 64, 16, 2, 2, true, true, float>) gemm<half, 64, 64, 16, 2, 2, true, true, float>;
