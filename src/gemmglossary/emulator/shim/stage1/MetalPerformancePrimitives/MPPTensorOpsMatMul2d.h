// Stage-1 stub of Apple's MetalPerformancePrimitives framework header (the part MLX's NAX
// kernels use: mpp::tensor_ops::matmul2d); implemented with <metal_tensor> in
// ../../mslemu_tensor_ops.h.
#include <metal_tensor>
