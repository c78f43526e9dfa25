// mlx_softmax.metal — MLX's softmax kernels (softmax.h), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here. Names follow
// MLX's host code: <block|looped>_softmax_[precise_]<type>, block for rows of up to 4096 values
// (one read), looped for longer rows; precise accumulates float16/bfloat16 inputs in float32.
// MLX instantiates block and looped for float32, float16, bfloat16 and the precise pair for
// float16 and bfloat16; this file has every kernel with every dtype and one precise variant of
// each kernel. Host side: src/gemmglossary/mlx/softmax.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/softmax.h"

template [[host_name("block_softmax_float32")]] [[kernel]]
decltype(softmax_single_row<float>) softmax_single_row<float>;
template [[host_name("block_softmax_float16")]] [[kernel]]
decltype(softmax_single_row<half>) softmax_single_row<half>;
template [[host_name("block_softmax_bfloat16")]] [[kernel]]
decltype(softmax_single_row<bfloat16_t>) softmax_single_row<bfloat16_t>;
template [[host_name("block_softmax_precise_bfloat16")]] [[kernel]]
decltype(softmax_single_row<bfloat16_t, float>) softmax_single_row<bfloat16_t, float>;

template [[host_name("looped_softmax_float32")]] [[kernel]]
decltype(softmax_looped<float>) softmax_looped<float>;
template [[host_name("looped_softmax_float16")]] [[kernel]]
decltype(softmax_looped<half>) softmax_looped<half>;
template [[host_name("looped_softmax_bfloat16")]] [[kernel]]
decltype(softmax_looped<bfloat16_t>) softmax_looped<bfloat16_t>;
template [[host_name("looped_softmax_precise_float16")]] [[kernel]]
decltype(softmax_looped<half, float>) softmax_looped<half, float>;
