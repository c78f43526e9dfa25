"""Host side of MLX's split-K GEMM: ``gemm_splitk`` and its accumulation kernels.

For small outputs with a long K (see :func:`.matmul.takes_splitk`), MLX splits K into
partitions, lets every (tile, partition) threadgroup write a partial product into a
``partitions × M × N`` buffer (float32, or complex64 for a complex64 product), and sums the partitions in a second kernel that also casts to
the output type and, for ``addmm``, applies α·x + β·c. This module dispatches the two
kernels as ``steel_gemm_splitk_axpby`` does in ``mlx/backend/metal/matmul.cpp`` at the pinned
tag (:data:`.matmul.MLX_TAG`, whose ``steel_gemm_splitk.h`` and ``params.h`` the kernels
compile): the ``GEMMSpiltKParams`` struct,
buffers, grids and kernel names. Whether MLX splits, the tile, the number and size of the
partitions and both grids are :func:`.matmul.route` and :func:`.matmul.splitk_plan`'s. The
last partition also covers the K that does not divide evenly (whole 16-wide steps plus a
partial one). Kernels: MLX's, instantiated in ``kernels/mlx_steel_splitk.metal``.
"""

from __future__ import annotations

import numpy as np

from . import matmul
from .launch import DEFAULT_DEVICE, Launch, Plan, type_to_name
from .layout import broadcast_to, buffer_view, check_transpose, element_strides
from .steel import GEMM_SPLITK_PARAMS

SOURCE = "mlx_steel_splitk.metal"



def partial_dtype(dtype) -> np.dtype:
    """The partial products' type: complex64 for a complex product, float32 for any other."""
    return np.dtype(np.complex64) if np.dtype(dtype) == np.complex64 else np.dtype(np.float32)


def accum_name(out_dtype, axpby: bool) -> str:
    return (f"steel_gemm_splitk_accum_{type_to_name(out_dtype)}_{type_to_name(partial_dtype(out_dtype))}"
            + ("_axbpy" if axpby else ""))


def plan(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: float = 1.0, beta: float = 0.0,
         device: matmul.Device = DEFAULT_DEVICE) -> Plan:
    """Plan ``a @ b`` (``c`` None) or ``alpha·(a @ b) + beta·c`` (``addmm``) for 2-D ``a`` (M × K)
    and ``b`` (K × N), when MLX takes split-K for it; a transposed view picks the t kernels."""
    if a.dtype != b.dtype or (c is not None and c.dtype != a.dtype):
        raise TypeError("a, b (and c) must share one dtype, as after MLX's type promotion")
    dtype_name = type_to_name(a.dtype)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"split-K multiplies two matrices; got shapes {a.shape} and {b.shape}")
    M, K, N = a.shape[0], a.shape[1], b.shape[1]
    transpose_a, lda, a = check_transpose(a)
    transpose_b, ldb, b = check_transpose(b)
    route = matmul.route(matmul.Problem(M, N, K, dtype_name, transpose_a, transpose_b), device)
    if route.kernel != "splitk":
        raise ValueError(f"MLX routes this {M}×{K} by {K}×{N} product to {route.kernel}, not split-K")
    s = route.splitk

    partials = np.zeros((s.partitions, M, N), dtype=partial_dtype(a.dtype))
    params = np.zeros((), dtype=GEMM_SPLITK_PARAMS)  # read from the pinned params.h
    for field, value in (("M", M), ("N", N), ("K", K), ("lda", lda), ("ldb", ldb), ("ldc", N),
                         ("tiles_n", s.threadgroups[0]), ("tiles_m", s.threadgroups[1]),
                         ("split_k_partitions", s.partitions), ("split_k_partition_stride", M * N),
                         ("split_k_partition_size", s.partition_size), ("swizzle_log", s.swizzle_log),
                         ("gemm_k_iterations_aligned", s.k_iterations)):
        params[field] = value
    gemm = Launch(SOURCE, route.kernel_name,
                  {0: buffer_view(a), 1: buffer_view(b), 2: partials.reshape(-1), 3: params},
                  s.threads_per_threadgroup, threadgroups=s.threadgroups)

    out = np.zeros((M, N), dtype=a.dtype)
    axpby = c is not None and (alpha != 1.0 or beta != 0.0)
    buffers: dict[int, object] = {0: partials.reshape(-1), 1: out.reshape(-1), 2: np.array(s.partitions, np.int32),
                                  3: np.array(M * N, np.int32), 4: np.array(N, np.int32)}
    if axpby:
        c = broadcast_to(c, (M, N))
        ldc, fdc = element_strides(c)
        buffers.update({5: buffer_view(c), 6: np.array(ldc, np.int32), 7: np.array(fdc, np.int32),
                        8: np.array(alpha, np.float32), 9: np.array(beta, np.float32)})
    accumulate = Launch(SOURCE, accum_name(a.dtype, axpby), buffers, s.accum_threads_per_threadgroup,
                        threads=s.accum_grid_threads)
    return Plan([gemm, accumulate], out)
