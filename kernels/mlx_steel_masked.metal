// mlx_steel_masked.metal — MLX's block-masked GEMM (steel_gemm_masked.h), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here, included as
// MLX's steel_gemm_masked.metal includes them. Names follow MLX's host code:
//   steel_gemm_block_outmask_<mask type|nomask>_opmask_<mask type|nomask>_<nn|nt|tn|tt>_<type>_<type>
//   _bm<bs>_bn<bs>_bk16_wm2_wn2_MN_<t|n>aligned_K_<t|n>aligned
// with bs the mask's block size (32 or 64) and a mask type bool_ (skip or zero the block) or the
// data type (scale it). MLX instantiates every combination; this file keeps one per dtype,
// together covering both block sizes, every mask kind, a batch and both alignments.
// Host side: src/gemmglossary/mlx/block_masked.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"
#include "mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_masked.h"

template [[host_name("steel_gemm_block_outmask_bool__opmask_nomask_nn_float32_float32_bm32_bn32_bk16_wm2_wn2_MN_naligned_K_naligned")]] [[kernel]]
decltype(block_masked_gemm<float, bool, nomask_t, 32, 32, 16, 2, 2, false, false, false, false>)
block_masked_gemm<float, bool, nomask_t, 32, 32, 16, 2, 2, false, false, false, false>;
template [[host_name("steel_gemm_block_outmask_nomask_opmask_float16_nt_float16_float16_bm64_bn64_bk16_wm2_wn2_MN_taligned_K_taligned")]] [[kernel]]
decltype(block_masked_gemm<half, nomask_t, half, 64, 64, 16, 2, 2, false, true, true, true>)
block_masked_gemm<half, nomask_t, half, 64, 64, 16, 2, 2, false, true, true, true>;
template [[host_name("steel_gemm_block_outmask_bfloat16_opmask_bool__tn_bfloat16_bfloat16_bm32_bn32_bk16_wm2_wn2_MN_naligned_K_naligned")]] [[kernel]]
decltype(block_masked_gemm<bfloat16_t, bfloat16_t, bool, 32, 32, 16, 2, 2, true, false, false, false>)
block_masked_gemm<bfloat16_t, bfloat16_t, bool, 32, 32, 16, 2, 2, true, false, false, false>;
