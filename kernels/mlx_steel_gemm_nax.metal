// mlx_steel_gemm_nax.metal — MLX's GEMM for the neural accelerators of Apple's newest GPUs,
// instantiated the way MLX's steel_gemm_fused_nax.metal does.
//
// Nothing here is a GEMM of ours: this file includes MLX's NAX headers (copied out of the
// pinned mlx wheel into kernels/vendor/ by `gemmglossary vendor`) and instantiates the `gemm`
// kernel template of steel_gemm_fused_nax.h, which multiplies 16x16 fragments with
// MetalPerformancePrimitives' mpp::tensor_ops::matmul2d. Host names follow MLX's scheme,
// steel_gemm_fused_nax_<nn|nt|tn|tt>_<in>_<out>_bm_bn_bk_wm_wn. Only the tile shapes MLX's
// host code picks for this kernel are here (src/gemmglossary/mlx/nax.py says when), in
// float16 and bfloat16; MLX also builds float32 (used only when TF32 is enabled) and three
// more shapes that its matmul does not select.
//
// Host side (buffers, GEMMParams, function constants, grid): src/gemmglossary/mlx/nax.py,
// after mlx/backend/metal/matmul.cpp. Compile with the include directory kernels/vendor.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/gemm_nax.h"
#include "mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_fused_nax.h"

// float16, BM=128 BN=128 BK=512, WM=4 WN=4: all four transpose combinations
template [[host_name("steel_gemm_fused_nax_nn_float16_float16_bm128_bn128_bk512_wm4_wn4")]] [[kernel]]
decltype(gemm<half, 128, 128, 512, 4, 4, false, false, float>) gemm<half, 128, 128, 512, 4, 4, false, false, float>;
template [[host_name("steel_gemm_fused_nax_nt_float16_float16_bm128_bn128_bk512_wm4_wn4")]] [[kernel]]
decltype(gemm<half, 128, 128, 512, 4, 4, false, true, float>) gemm<half, 128, 128, 512, 4, 4, false, true, float>;
template [[host_name("steel_gemm_fused_nax_tn_float16_float16_bm128_bn128_bk512_wm4_wn4")]] [[kernel]]
decltype(gemm<half, 128, 128, 512, 4, 4, true, false, float>) gemm<half, 128, 128, 512, 4, 4, true, false, float>;
template [[host_name("steel_gemm_fused_nax_tt_float16_float16_bm128_bn128_bk512_wm4_wn4")]] [[kernel]]
decltype(gemm<half, 128, 128, 512, 4, 4, true, true, float>) gemm<half, 128, 128, 512, 4, 4, true, true, float>;

// float16, BM=64 BN=128 BK=256, WM=2 WN=4: all four transpose combinations
template [[host_name("steel_gemm_fused_nax_nn_float16_float16_bm64_bn128_bk256_wm2_wn4")]] [[kernel]]
decltype(gemm<half, 64, 128, 256, 2, 4, false, false, float>) gemm<half, 64, 128, 256, 2, 4, false, false, float>;
template [[host_name("steel_gemm_fused_nax_nt_float16_float16_bm64_bn128_bk256_wm2_wn4")]] [[kernel]]
decltype(gemm<half, 64, 128, 256, 2, 4, false, true, float>) gemm<half, 64, 128, 256, 2, 4, false, true, float>;
template [[host_name("steel_gemm_fused_nax_tn_float16_float16_bm64_bn128_bk256_wm2_wn4")]] [[kernel]]
decltype(gemm<half, 64, 128, 256, 2, 4, true, false, float>) gemm<half, 64, 128, 256, 2, 4, true, false, float>;
template [[host_name("steel_gemm_fused_nax_tt_float16_float16_bm64_bn128_bk256_wm2_wn4")]] [[kernel]]
decltype(gemm<half, 64, 128, 256, 2, 4, true, true, float>) gemm<half, 64, 128, 256, 2, 4, true, true, float>;

// float16, BM=64 BN=128 BK=64, WM=2 WN=4: all four transpose combinations
template [[host_name("steel_gemm_fused_nax_nn_float16_float16_bm64_bn128_bk64_wm2_wn4")]] [[kernel]]
decltype(gemm<half, 64, 128, 64, 2, 4, false, false, float>) gemm<half, 64, 128, 64, 2, 4, false, false, float>;
template [[host_name("steel_gemm_fused_nax_nt_float16_float16_bm64_bn128_bk64_wm2_wn4")]] [[kernel]]
decltype(gemm<half, 64, 128, 64, 2, 4, false, true, float>) gemm<half, 64, 128, 64, 2, 4, false, true, float>;
template [[host_name("steel_gemm_fused_nax_tn_float16_float16_bm64_bn128_bk64_wm2_wn4")]] [[kernel]]
decltype(gemm<half, 64, 128, 64, 2, 4, true, false, float>) gemm<half, 64, 128, 64, 2, 4, true, false, float>;
template [[host_name("steel_gemm_fused_nax_tt_float16_float16_bm64_bn128_bk64_wm2_wn4")]] [[kernel]]
decltype(gemm<half, 64, 128, 64, 2, 4, true, true, float>) gemm<half, 64, 128, 64, 2, 4, true, true, float>;

// bfloat16, BM=128 BN=128 BK=512, WM=4 WN=4: all four transpose combinations
template [[host_name("steel_gemm_fused_nax_nn_bfloat16_bfloat16_bm128_bn128_bk512_wm4_wn4")]] [[kernel]]
decltype(gemm<bfloat, 128, 128, 512, 4, 4, false, false, float>) gemm<bfloat, 128, 128, 512, 4, 4, false, false, float>;
template [[host_name("steel_gemm_fused_nax_nt_bfloat16_bfloat16_bm128_bn128_bk512_wm4_wn4")]] [[kernel]]
decltype(gemm<bfloat, 128, 128, 512, 4, 4, false, true, float>) gemm<bfloat, 128, 128, 512, 4, 4, false, true, float>;
template [[host_name("steel_gemm_fused_nax_tn_bfloat16_bfloat16_bm128_bn128_bk512_wm4_wn4")]] [[kernel]]
decltype(gemm<bfloat, 128, 128, 512, 4, 4, true, false, float>) gemm<bfloat, 128, 128, 512, 4, 4, true, false, float>;
template [[host_name("steel_gemm_fused_nax_tt_bfloat16_bfloat16_bm128_bn128_bk512_wm4_wn4")]] [[kernel]]
decltype(gemm<bfloat, 128, 128, 512, 4, 4, true, true, float>) gemm<bfloat, 128, 128, 512, 4, 4, true, true, float>;

// bfloat16, BM=64 BN=128 BK=256, WM=2 WN=4: all four transpose combinations
template [[host_name("steel_gemm_fused_nax_nn_bfloat16_bfloat16_bm64_bn128_bk256_wm2_wn4")]] [[kernel]]
decltype(gemm<bfloat, 64, 128, 256, 2, 4, false, false, float>) gemm<bfloat, 64, 128, 256, 2, 4, false, false, float>;
template [[host_name("steel_gemm_fused_nax_nt_bfloat16_bfloat16_bm64_bn128_bk256_wm2_wn4")]] [[kernel]]
decltype(gemm<bfloat, 64, 128, 256, 2, 4, false, true, float>) gemm<bfloat, 64, 128, 256, 2, 4, false, true, float>;
template [[host_name("steel_gemm_fused_nax_tn_bfloat16_bfloat16_bm64_bn128_bk256_wm2_wn4")]] [[kernel]]
decltype(gemm<bfloat, 64, 128, 256, 2, 4, true, false, float>) gemm<bfloat, 64, 128, 256, 2, 4, true, false, float>;
template [[host_name("steel_gemm_fused_nax_tt_bfloat16_bfloat16_bm64_bn128_bk256_wm2_wn4")]] [[kernel]]
decltype(gemm<bfloat, 64, 128, 256, 2, 4, true, true, float>) gemm<bfloat, 64, 128, 256, 2, 4, true, true, float>;

// bfloat16, BM=64 BN=128 BK=64, WM=2 WN=4: all four transpose combinations
template [[host_name("steel_gemm_fused_nax_nn_bfloat16_bfloat16_bm64_bn128_bk64_wm2_wn4")]] [[kernel]]
decltype(gemm<bfloat, 64, 128, 64, 2, 4, false, false, float>) gemm<bfloat, 64, 128, 64, 2, 4, false, false, float>;
template [[host_name("steel_gemm_fused_nax_nt_bfloat16_bfloat16_bm64_bn128_bk64_wm2_wn4")]] [[kernel]]
decltype(gemm<bfloat, 64, 128, 64, 2, 4, false, true, float>) gemm<bfloat, 64, 128, 64, 2, 4, false, true, float>;
template [[host_name("steel_gemm_fused_nax_tn_bfloat16_bfloat16_bm64_bn128_bk64_wm2_wn4")]] [[kernel]]
decltype(gemm<bfloat, 64, 128, 64, 2, 4, true, false, float>) gemm<bfloat, 64, 128, 64, 2, 4, true, false, float>;
template [[host_name("steel_gemm_fused_nax_tt_bfloat16_bfloat16_bm64_bn128_bk64_wm2_wn4")]] [[kernel]]
decltype(gemm<bfloat, 64, 128, 64, 2, 4, true, true, float>) gemm<bfloat, 64, 128, 64, 2, 4, true, true, float>;
