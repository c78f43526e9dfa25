// mlx_gemv.metal — MLX's matrix-vector kernels (gemv.h), instantiated for the tests.
//
// Only MLX's gemv.h (from the pinned wheel, kernels/vendor/) is compiled here. The names are
// the ones MLX's host code asks for:
//   gemv[_t]_<type>_bm<BM>_bn<BN>_sm<SM>_sn<SN>_tm<TM>_tn<TN>_nc<batched>_axpby<bias>
// gemv reads the matrix along rows, gemv_t along columns; BM × BN simdgroups of SM × SN
// threads, each thread TM × TN elements; nc1 walks a batch that does not fold into one stride;
// axpby1 adds beta · bias. MLX instantiates every block shape below with every dtype and all
// four nc/axpby combinations; this file keeps the combinations the tests need to reach each
// block shape, each edge path and each dtype at least once.
//
// Host side (block shape choice, buffers, grid): src/gemmglossary/mlx/gemv.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/gemv.h"

// gemv: 4 simdgroups along the outputs; 8 × 4 threads for short inputs (one output per thread
// for fewer than 4 outputs); 8 simdgroups splitting a long input; 8 simdgroups along 4096+ outputs.
template [[host_name("gemv_float32_bm4_bn1_sm1_sn32_tm4_tn4_nc0_axpby0")]] [[kernel]]
decltype(gemv<float, 4, 1, 1, 32, 4, 4, false, false>) gemv<float, 4, 1, 1, 32, 4, 4, false, false>;
template [[host_name("gemv_float16_bm1_bn1_sm8_sn4_tm1_tn4_nc0_axpby0")]] [[kernel]]
decltype(gemv<half, 1, 1, 8, 4, 1, 4, false, false>) gemv<half, 1, 1, 8, 4, 1, 4, false, false>;
template [[host_name("gemv_bfloat16_bm1_bn8_sm1_sn32_tm4_tn4_nc1_axpby1")]] [[kernel]]
decltype(gemv<bfloat16_t, 1, 8, 1, 32, 4, 4, true, true>) gemv<bfloat16_t, 1, 8, 1, 32, 4, 4, true, true>;
template [[host_name("gemv_float32_bm8_bn1_sm1_sn32_tm4_tn4_nc0_axpby0")]] [[kernel]]
decltype(gemv<float, 8, 1, 1, 32, 4, 4, false, false>) gemv<float, 8, 1, 1, 32, 4, 4, false, false>;

// gemv_t: 2, 4 or 16 simdgroups across the outputs, 8 × 4 threads each (4 × 8 for a long input
// with 2048+ outputs); one output per thread for fewer than 4 outputs.
template [[host_name("gemv_t_float32_bm1_bn2_sm8_sn4_tm4_tn4_nc0_axpby0")]] [[kernel]]
decltype(gemv_t<float, 1, 2, 8, 4, 4, 4, false, false>) gemv_t<float, 1, 2, 8, 4, 4, 4, false, false>;
template [[host_name("gemv_t_float16_bm1_bn2_sm8_sn4_tm4_tn1_nc0_axpby1")]] [[kernel]]
decltype(gemv_t<half, 1, 2, 8, 4, 4, 1, false, true>) gemv_t<half, 1, 2, 8, 4, 4, 1, false, true>;
template [[host_name("gemv_t_bfloat16_bm1_bn4_sm8_sn4_tm4_tn4_nc1_axpby1")]] [[kernel]]
decltype(gemv_t<bfloat16_t, 1, 4, 8, 4, 4, 4, true, true>) gemv_t<bfloat16_t, 1, 4, 8, 4, 4, 4, true, true>;
template [[host_name("gemv_t_float32_bm1_bn16_sm4_sn8_tm4_tn4_nc0_axpby0")]] [[kernel]]
decltype(gemv_t<float, 1, 16, 4, 8, 4, 4, false, false>) gemv_t<float, 1, 16, 4, 8, 4, 4, false, false>;
template [[host_name("gemv_t_float16_bm1_bn16_sm8_sn4_tm4_tn4_nc0_axpby0")]] [[kernel]]
decltype(gemv_t<half, 1, 16, 8, 4, 4, 4, false, false>) gemv_t<half, 1, 16, 8, 4, 4, 4, false, false>;
