"""MLX's host code, restated: what MLX computes on the CPU before it dispatches a kernel.

One module per job, each following the named functions of MLX's C++ host code (read at the
0.32.2-dev commit :mod:`.matmul` names, the only host source available; the kernels are the
pinned 0.32.4 wheel's, ``kernels/vendor.toml``, and each module says where the two differ):

* :mod:`.matmul`: how ``a @ b`` is routed and tiled (``matmul.cpp``); :mod:`.steel` dispatches
  the fused steel GEMM with it, :mod:`.gemv` the matrix-vector kernels.
* :mod:`.quantized` (``quantized.cpp``: kernel choice and dispatch) with :mod:`.affine`
  (MLX's affine quantization format, in numpy).
* :mod:`.softmax` (``softmax.cpp``), :mod:`.sdpa_vector` (decode attention).
* :mod:`.custom_kernel` (``mx.fast.metal_kernel``'s source generation).
* shared: :mod:`.launch` (a dispatch, a plan of dispatches, MLX's dtype names) and
  :mod:`.layout` (strides, copies and batch collapsing as MLX sees them).

The kernels themselves are MLX's, compiled from the headers materialized out of the wheel.
"""
