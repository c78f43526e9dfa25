// mlx_reduce.metal — MLX's reduction kernels (reduce.h, reduction/), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here, included as
// MLX's reduce.metal includes them. Names follow MLX's host code:
//   init_reduce_<op><type>, all_reduce_<op><type>, row_reduce_simple_<op><type>,
//   row_reduce_<small|looped>_<n>_reduce_<op><type>, col_reduce_<small|longcolumn>_<n>_reduce_<op><type>,
//   col_reduce_<looped|2pass>_<n>_<BM>_<BN>_reduce_<op><type>
// with <n> the NDIMS variant (1, 2 or 5 reduced dims walked with an index loop). MLX
// instantiates every kernel for every op and dtype; this file holds one instance per kernel the
// tests dispatch (each kernel once, each op and each floating dtype several times).
// Host side: src/gemmglossary/mlx/reduce.py.

#include "mlx/backend/metal/kernels/defines.h"
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/atomic.h"
#include "mlx/backend/metal/kernels/reduction/ops.h"
#include "mlx/backend/metal/kernels/reduce.h"

template [[host_name("init_reduce_prodfloat16")]] [[kernel]]
decltype(init_reduce<half, Prod<half> >) init_reduce<half, Prod<half> >;
template [[host_name("all_reduce_maxbfloat16")]] [[kernel]]
decltype(all_reduce<bfloat16_t, bfloat16_t, Max<bfloat16_t> >) all_reduce<bfloat16_t, bfloat16_t, Max<bfloat16_t> >;
template [[host_name("all_reduce_sumfloat32")]] [[kernel]]
decltype(all_reduce<float, float, Sum<float> >) all_reduce<float, float, Sum<float> >;
template [[host_name("row_reduce_looped_1_reduce_sumbfloat16")]] [[kernel]]
decltype(row_reduce_looped<bfloat16_t, bfloat16_t, Sum<bfloat16_t>, int, 1>) row_reduce_looped<bfloat16_t, bfloat16_t, Sum<bfloat16_t>, int, 1>;
template [[host_name("row_reduce_simple_prodfloat32")]] [[kernel]]
decltype(row_reduce_simple<float, float, Prod<float> >) row_reduce_simple<float, float, Prod<float> >;
template [[host_name("row_reduce_small_1_reduce_minfloat16")]] [[kernel]]
decltype(row_reduce_small<half, half, Min<half>, int, 1>) row_reduce_small<half, half, Min<half>, int, 1>;
template [[host_name("col_reduce_2pass_1_32_32_reduce_sumbfloat16")]] [[kernel]]
decltype(col_reduce_2pass<bfloat16_t, bfloat16_t, Sum<bfloat16_t>, int, 1, 32, 32>) col_reduce_2pass<bfloat16_t, bfloat16_t, Sum<bfloat16_t>, int, 1, 32, 32>;
template [[host_name("col_reduce_longcolumn_1_reduce_minfloat32")]] [[kernel]]
decltype(col_reduce_longcolumn<float, float, Min<float>, int, 1>) col_reduce_longcolumn<float, float, Min<float>, int, 1>;
template [[host_name("col_reduce_looped_1_32_32_reduce_minfloat32")]] [[kernel]]
decltype(col_reduce_looped<float, float, Min<float>, int, 1, 32, 32>) col_reduce_looped<float, float, Min<float>, int, 1, 32, 32>;
template [[host_name("col_reduce_looped_1_32_32_reduce_prodfloat16")]] [[kernel]]
decltype(col_reduce_looped<half, half, Prod<half>, int, 1, 32, 32>) col_reduce_looped<half, half, Prod<half>, int, 1, 32, 32>;
template [[host_name("col_reduce_looped_1_32_32_reduce_sumbfloat16")]] [[kernel]]
decltype(col_reduce_looped<bfloat16_t, bfloat16_t, Sum<bfloat16_t>, int, 1, 32, 32>) col_reduce_looped<bfloat16_t, bfloat16_t, Sum<bfloat16_t>, int, 1, 32, 32>;
template [[host_name("col_reduce_small_1_reduce_maxfloat16")]] [[kernel]]
decltype(col_reduce_small<half, half, Max<half>, int, 1>) col_reduce_small<half, half, Max<half>, int, 1>;
