// mlx_gemv_masked.metal — MLX's block-masked matrix-vector kernels (gemv_masked.h), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here, included as
// MLX's gemv_masked.metal includes them. Names follow MLX's host code:
//   gemv[_t]_outmask_<mask type|nomask>_opmask_<mask type|nomask>_<type>_bm.._bn.._sm.._sn.._tm.._tn.._nc<0|1>
// MLX instantiates five gemv and six gemv_t block shapes for every mask combination and dtype;
// this file keeps three: gemv and gemv_t, both block sizes, every mask kind, a batch.
// Host side: src/gemmglossary/mlx/block_masked.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/gemv_masked.h"

template [[host_name("gemv_outmask_bool__opmask_nomask_float32_bm2_bn1_sm4_sn8_tm4_tn4_nc0")]] [[kernel]]
decltype(gemv_masked<float, bool, nomask_t, 2, 1, 4, 8, 4, 4, false>) gemv_masked<float, bool, nomask_t, 2, 1, 4, 8, 4, 4, false>;
template [[host_name("gemv_t_outmask_nomask_opmask_float16_float16_bm1_bn2_sm8_sn4_tm8_tn4_nc0")]] [[kernel]]
decltype(gemv_t_masked<half, nomask_t, half, 1, 2, 8, 4, 8, 4, false>) gemv_t_masked<half, nomask_t, half, 1, 2, 8, 4, 8, 4, false>;
template [[host_name("gemv_t_outmask_bfloat16_opmask_bool__bfloat16_bm1_bn2_sm8_sn4_tm4_tn4_nc1")]] [[kernel]]
decltype(gemv_t_masked<bfloat16_t, bfloat16_t, bool, 1, 2, 8, 4, 4, 4, true>) gemv_t_masked<bfloat16_t, bfloat16_t, bool, 1, 2, 8, 4, 4, 4, true>;
