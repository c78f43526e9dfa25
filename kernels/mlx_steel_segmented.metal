// mlx_steel_segmented.metal — MLX's segmented matmul (steel_gemm_segmented.h), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here, included as
// MLX's steel_gemm_segmented.metal includes them. Names follow MLX's host code:
//   steel_segmented_mm_<nn|nt|tn|tt>_<type>_<type>_bm<BM>_bn<BN>_bk<BK>_wm<WM>_wn<WN>
// with the tile of MLX's GEMM tile rule; alignment and the segments' layout are function
// constants (199-201). MLX instantiates every tile its rule can pick for every transposition
// and dtype; this file keeps the three a base M1 picks for the tests' products.
// Host side: src/gemmglossary/mlx/segmented.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"
#include "mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_segmented.h"

template [[host_name("steel_segmented_mm_nn_float32_float32_bm64_bn64_bk16_wm2_wn2")]] [[kernel]]
decltype(segmented_mm<float, 64, 64, 16, 2, 2, false, false>) segmented_mm<float, 64, 64, 16, 2, 2, false, false>;
template [[host_name("steel_segmented_mm_nt_float16_float16_bm64_bn32_bk32_wm2_wn2")]] [[kernel]]
decltype(segmented_mm<half, 64, 32, 32, 2, 2, false, true>) segmented_mm<half, 64, 32, 32, 2, 2, false, true>;
template [[host_name("steel_segmented_mm_tn_bfloat16_bfloat16_bm64_bn64_bk16_wm1_wn2")]] [[kernel]]
decltype(segmented_mm<bfloat16_t, 64, 64, 16, 1, 2, true, false>) segmented_mm<bfloat16_t, 64, 64, 16, 1, 2, true, false>;
