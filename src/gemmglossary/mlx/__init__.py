"""MLX's host code, restated: what MLX computes on the CPU before it dispatches a kernel.

One module per job, each following the named functions of MLX's C++ host code, read at the
release tag pinned in ``kernels/vendor.toml`` (:data:`.matmul.MLX_TAG`), the release whose Metal
headers the kernels compile: host rules and headers come from one tag.

* :mod:`.matmul`: how ``a @ b`` is routed and tiled (``matmul.cpp``); :mod:`.steel` dispatches
  the fused steel GEMM with it, :mod:`.gemv` the matrix-vector kernels.
* :mod:`.quantized` (``quantized.cpp``: kernel choice and dispatch) with :mod:`.affine`
  (MLX's affine quantization format, in numpy).
* :mod:`.softmax` (``softmax.cpp``), :mod:`.sdpa_vector` (decode attention).
* :mod:`.custom_kernel` (``mx.fast.metal_kernel``'s source generation).
* shared: :mod:`.launch` (a dispatch, a plan of dispatches, MLX's dtype names) and
  :mod:`.layout` (strides, copies and batch collapsing as MLX sees them).

The kernels themselves are MLX's, compiled from the headers vendored out of that release's
wheel (:mod:`gemmglossary.vendor`).
"""

#: What each module restates, and from which of MLX's host files: (module, MLX's functions,
#: files). Every one is read at the pinned tag; docs/sources.md shows this table, tag and
#: links computed when the site is built (the ``mlx.host_sources`` fact).
HOST_SOURCES = (
    ("matmul", ("Matmul::eval_gpu", "steel_matmul_axpby", "steel_matmul_regular_axpby", "steel_gemm_splitk_axpby",
                "steel_matmul_regular_axpby_nax", "steel_gemm_splitk_axpby_nax", "gemv_axbpy", "gemv_wide",
                "dot_product", "GEMM_TPARAM_MACRO", "Device::Device", "is_nax_available", "env::enable_tf32"),
     ("mlx/backend/metal/matmul.cpp", "mlx/backend/metal/device.cpp", "mlx/utils.h",
      "mlx/backend/common/utils.cpp", "mlx/backend/metal/kernels/CMakeLists.txt")),
    ("steel", ("steel_matmul_regular_axpby",), ("mlx/backend/metal/matmul.cpp",)),
    ("steel_splitk", ("steel_gemm_splitk_axpby",), ("mlx/backend/metal/matmul.cpp",)),
    ("nax", ("steel_matmul_regular_axpby_nax",), ("mlx/backend/metal/matmul.cpp",)),
    ("gemv", ("gemv_axbpy", "Matmul::eval_gpu", "AddMM::eval_gpu"), ("mlx/backend/metal/matmul.cpp",)),
    ("gather", ("GatherMM::eval_gpu", "gather_mm_rhs", "gather_mm", "indices_or_default"),
     ("mlx/backend/metal/matmul.cpp", "mlx/ops.cpp")),
    ("segmented", ("segmented_mm", "mx.segmented_mm"), ("mlx/backend/metal/matmul.cpp", "mlx/ops.cpp")),
    ("block_masked", ("BlockMaskedMM::eval_gpu", "mx.block_masked_mm"),
     ("mlx/backend/metal/matmul.cpp", "mlx/ops.cpp")),
    ("layout", ("check_transpose", "collapse_batches", "collapse_contiguous_dims", "get_2d_grid_dims",
                "check_contiguity"),
     ("mlx/backend/metal/matmul.cpp", "mlx/backend/common/matmul.h", "mlx/backend/common/utils.cpp",
      "mlx/backend/common/utils.h")),
    ("quantized", ("QuantizedMatmul::eval_gpu", "qmm_splitk", "qmm", "dispatch_qmv", "qmv", "qvm", "use_qmv_wide",
                   "get_qmv_batch_limit", "qmv_fast_k_alignment"), ("mlx/backend/metal/quantized.cpp",)),
    ("affine", ("affine_quantize", "affine_dequantize"), ("mlx/ops.cpp",)),
    ("reduce", ("Reduce::eval_gpu", "all_reduce_dispatch", "row_reduce_general_dispatch",
                "strided_reduce_general_dispatch", "init_reduce", "get_reduction_plan"),
     ("mlx/backend/metal/reduce.cpp", "mlx/backend/common/reduce.cpp")),
    ("scan", ("Scan::eval_gpu", "scan_gpu_inplace"), ("mlx/backend/metal/scan.cpp", "mlx/ops.cpp")),
    ("softmax", ("Softmax::eval_gpu", "mx.softmax"), ("mlx/backend/metal/softmax.cpp", "mlx/ops.cpp")),
    ("sdpa_vector", ("ScaledDotProductAttention::eval_gpu", "sdpa_vector", "sdpa_vector_2pass", "use_fallback",
                     "mx.fast.scaled_dot_product_attention"),
     ("mlx/backend/metal/scaled_dot_product_attention.cpp", "mlx/fast.cpp")),
    ("launch", ("type_to_name", "get_type_string"), ("mlx/backend/metal/utils.h", "mlx/backend/common/compiled.cpp")),
    ("custom_kernel", ("mx.fast.metal_kernel", "write_signature", "write_template", "make_template_hash",
                       "get_type_string"),
     ("mlx/backend/common/metal_kernel.cpp", "mlx/backend/common/compiled.cpp",
      "mlx/backend/metal/custom_kernel.cpp", "python/src/fast.cpp")),
)
