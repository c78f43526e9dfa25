// mlx_sdpa_vector.metal — MLX's decode attention kernels, instantiated for the tests.
//
// Only MLX's sdpa_vector.h (from the pinned wheel, kernels/vendor/) is compiled here; this
// file names a few of its template instances with `template [[host_name(...)]] [[kernel]]`,
// under the names MLX's host code asks for:
//   sdpa_vector_<type>_<qk dim>_<v dim>           one pass, a threadgroup per query token
//   sdpa_vector_2pass_1_<type>_<qk>_<v>            first pass over `blocks` slices of the keys
//   sdpa_vector_2pass_2_<type>_<v dim>             second pass combining the slices
// with <type> the Metal type (float, float16_t, bfloat16_t). The selection covers every
// kernel with every dtype at least once, not all of MLX's head dims.
//
// Host side (buffers, function constants 20-26, grids): src/gemmglossary/mlx/sdpa_vector.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/sdpa_vector.h"

// One pass: every dtype, and the one head-dim pair whose query and value dims differ.
template [[host_name("sdpa_vector_float_64_64")]] [[kernel]]
decltype(sdpa_vector<float, 64, 64>) sdpa_vector<float, 64, 64>;
template [[host_name("sdpa_vector_float16_t_128_128")]] [[kernel]]
decltype(sdpa_vector<float16_t, 128, 128>) sdpa_vector<float16_t, 128, 128>;
template [[host_name("sdpa_vector_bfloat16_t_64_64")]] [[kernel]]
decltype(sdpa_vector<bfloat16_t, 64, 64>) sdpa_vector<bfloat16_t, 64, 64>;
template [[host_name("sdpa_vector_float_192_128")]] [[kernel]]
decltype(sdpa_vector<float, 192, 128>) sdpa_vector<float, 192, 128>;

// Two passes: every dtype.
template [[host_name("sdpa_vector_2pass_1_float_64_64")]] [[kernel]]
decltype(sdpa_vector_2pass_1<float, 64, 64>) sdpa_vector_2pass_1<float, 64, 64>;
template [[host_name("sdpa_vector_2pass_1_float16_t_128_128")]] [[kernel]]
decltype(sdpa_vector_2pass_1<float16_t, 128, 128>) sdpa_vector_2pass_1<float16_t, 128, 128>;
template [[host_name("sdpa_vector_2pass_1_bfloat16_t_64_64")]] [[kernel]]
decltype(sdpa_vector_2pass_1<bfloat16_t, 64, 64>) sdpa_vector_2pass_1<bfloat16_t, 64, 64>;
template [[host_name("sdpa_vector_2pass_2_float_64")]] [[kernel]]
decltype(sdpa_vector_2pass_2<float, 64>) sdpa_vector_2pass_2<float, 64>;
template [[host_name("sdpa_vector_2pass_2_float16_t_128")]] [[kernel]]
decltype(sdpa_vector_2pass_2<float16_t, 128>) sdpa_vector_2pass_2<float16_t, 128>;
template [[host_name("sdpa_vector_2pass_2_bfloat16_t_64")]] [[kernel]]
decltype(sdpa_vector_2pass_2<bfloat16_t, 64>) sdpa_vector_2pass_2<bfloat16_t, 64>;
