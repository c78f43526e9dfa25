// mlx_scan.metal — MLX's cumulative sums, products, maxima, minima and log-add-exps
// (scan.h), instantiated for the tests.
//
// Only MLX's headers (from the pinned wheel, kernels/vendor/) are compiled here. Names follow
// MLX's host code: <contig|strided>_scan_[reverse_]<inclusive|exclusive>_<op>_<in>_<out>;
// contiguous_scan walks an axis of unit stride, one threadgroup per row, strided_scan an axis
// of larger stride, 32 columns per threadgroup. The last template argument is the values a
// thread reads: 4 for types of up to 4 bytes, 2 for wider ones. MLX instantiates every op,
// type and direction; this file has a few of each, among them the scans of bool, whose
// simdgroups each write one byte of threadgroup memory. Host side: src/gemmglossary/mlx/scan.py.

#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/scan.h"

template [[host_name("contig_scan_inclusive_sum_float32_float32")]] [[kernel]]
decltype(contiguous_scan<float, float, CumSum<float>, 4, true, false>)
contiguous_scan<float, float, CumSum<float>, 4, true, false>;
template [[host_name("contig_scan_reverse_exclusive_sum_int64_int64")]] [[kernel]]
decltype(contiguous_scan<int64_t, int64_t, CumSum<int64_t>, 2, false, true>)
contiguous_scan<int64_t, int64_t, CumSum<int64_t>, 2, false, true>;
template [[host_name("contig_scan_inclusive_sum_bool__int32")]] [[kernel]]
decltype(contiguous_scan<bool, int32_t, CumSum<int32_t>, 4, true, false>)
contiguous_scan<bool, int32_t, CumSum<int32_t>, 4, true, false>;
template [[host_name("contig_scan_inclusive_prod_bool__bool_")]] [[kernel]]
decltype(contiguous_scan<bool, bool, CumProd<bool>, 4, true, false>)
contiguous_scan<bool, bool, CumProd<bool>, 4, true, false>;
template [[host_name("contig_scan_exclusive_max_bfloat16_bfloat16")]] [[kernel]]
decltype(contiguous_scan<bfloat16_t, bfloat16_t, CumMax<bfloat16_t>, 4, false, false>)
contiguous_scan<bfloat16_t, bfloat16_t, CumMax<bfloat16_t>, 4, false, false>;
template [[host_name("contig_scan_reverse_inclusive_logaddexp_float16_float16")]] [[kernel]]
decltype(contiguous_scan<half, half, CumLogaddexp<half>, 4, true, true>)
contiguous_scan<half, half, CumLogaddexp<half>, 4, true, true>;

template [[host_name("strided_scan_inclusive_sum_float32_float32")]] [[kernel]]
decltype(strided_scan<float, float, CumSum<float>, 4, true, false>)
strided_scan<float, float, CumSum<float>, 4, true, false>;
template [[host_name("strided_scan_reverse_exclusive_min_int32_int32")]] [[kernel]]
decltype(strided_scan<int32_t, int32_t, CumMin<int32_t>, 4, false, true>)
strided_scan<int32_t, int32_t, CumMin<int32_t>, 4, false, true>;
template [[host_name("strided_scan_exclusive_prod_float16_float16")]] [[kernel]]
decltype(strided_scan<half, half, CumProd<half>, 4, false, false>)
strided_scan<half, half, CumProd<half>, 4, false, false>;
