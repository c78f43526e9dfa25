"""MLX's host code, restated: what MLX computes on the CPU before it dispatches a kernel.

One module per kernel family, each following the named function of MLX's C++ host code
at the pinned version (``kernels/vendor.toml``): :mod:`.steel` (``matmul.cpp``, the steel
GEMM) and :mod:`.custom_kernel` (``mx.fast.metal_kernel``'s source generation). The kernels
themselves are MLX's, compiled from the headers materialized out of the pinned wheel.
"""
