"""Host side of MLX's steel GEMM: what MLX computes before it dispatches ``gemm``.

This follows ``steel_matmul_regular_axpby`` and its callers (``steel_matmul_axpby``,
``check_transpose``, ``collapse_batches``) in ``mlx/backend/metal/matmul.cpp`` at the pinned
tag (:data:`.matmul.MLX_TAG`), and the parameter structs of that release's
``steel/gemm/params.h``. The kernel name, the
``swizzle_log`` and the launch grid come from :mod:`.matmul`, which says them once. It
is our own restatement of those rules for the emulator and the tests; the kernel itself
is MLX's, compiled from ``kernels/steel_gemm.metal``.

MLX picks BM/BN/BK/WM/WN per device and shape (:func:`.matmul.route`); :func:`plan` lets the
caller choose one of the configurations instantiated in ``kernels/steel_gemm.metal``, and
:func:`plan_fused` is the dispatch itself for any configuration, swizzle and the NAX variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..paths import kernels_dir, vendor_dir
from . import matmul
from .launch import type_to_name
from .layout import broadcast_to, buffer_view, check_transpose, collapse_batches


def _params_structs() -> dict[str, np.dtype]:
    """Every struct of the pinned steel/gemm/params.h, laid out as the Metal compiler does
    (read from the header, so the layout is said once: there)."""
    from ..msl.declarations import struct_dtypes
    from ..vendor import MLX_KERNELS_SUBPATH, ensure

    header = ensure() / MLX_KERNELS_SUBPATH / "steel" / "gemm" / "params.h"
    return struct_dtypes(header.read_text(), str(header))


_STRUCTS = _params_structs()
#: ``struct GEMMParams``, ``struct GEMMAddMMParams`` and ``struct GEMMSpiltKParams`` (MLX's spelling).
GEMM_PARAMS = _STRUCTS["GEMMParams"]
GEMM_ADDMM_PARAMS = _STRUCTS["GEMMAddMMParams"]
GEMM_SPLITK_PARAMS = _STRUCTS["GEMMSpiltKParams"]

#: (BM, BN, BK, WM, WN) configurations instantiated in kernels/steel_gemm.metal.
CONFIGS = ((32, 32, 16, 2, 2), (64, 64, 16, 2, 2))


def source_path():
    return kernels_dir() / "steel_gemm.metal"


def include_dirs():
    return [vendor_dir()]


@dataclass
class SteelLaunch:
    """Everything one ``gemm`` dispatch needs, in Metal's terms."""

    host_name: str
    function_constants: dict[int, bool]
    buffers: dict[int, object]  # [[buffer(n)]] -> numpy array or bytes
    threadgroups: tuple[int, int, int]
    threads_per_threadgroup: tuple[int, int, int]
    out: np.ndarray = field(repr=False)


def plan(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: float = 1.0,
         beta: float = 0.0, config: tuple[int, int, int, int, int] = CONFIGS[0]) -> SteelLaunch:
    """Plan D = alpha·(A @ B) + beta·C with MLX's steel ``gemm`` and one of the configurations
    kernels/steel_gemm.metal instantiates (its ``swizzle_log`` is MLX's regular one).

    ``a`` is (..., M, K) and ``b`` (..., K, N), either row- or column-contiguous in their
    last two dims (a transposed view selects the ``t`` kernels, as in MLX); batch dims
    broadcast. ``c`` (optional) broadcasts to (..., M, N).
    """
    if config not in CONFIGS:
        raise ValueError(f"config {config} is not instantiated in {source_path()}; choose one of {CONFIGS}")
    M = a.shape[-2]
    return plan_fused(a, b, c, alpha=alpha, beta=beta, config=matmul.TileConfig(*config),
                      swizzle_log=matmul.regular_swizzle_log(-(-M // config[0])))


def plan_fused(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: float = 1.0,
               beta: float = 0.0, config: matmul.TileConfig, swizzle_log: int, nax: bool = False) -> SteelLaunch:
    """The dispatch of a fused steel kernel (``steel_gemm_fused``, or with ``nax`` its NAX
    variant, which takes the same buffers, GEMMParams and function constants) for any tile
    ``config`` and ``swizzle_log``; the caller picks both (see :mod:`.matmul`)."""
    if a.dtype != b.dtype:
        raise TypeError(f"A and B must share one dtype, got {a.dtype} and {b.dtype}")
    tname = type_to_name(a.dtype)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"cannot multiply shapes {a.shape} and {b.shape}")
    bm, bn, bk, wm, wn = config.as_tuple
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], () if c is None else c.shape[:-2])
    a_b = broadcast_to(a, (*batch, M, K))
    b_b = broadcast_to(b, (*batch, K, N))
    transpose_a, lda, a_b = check_transpose(a_b)
    transpose_b, ldb, b_b = check_transpose(b_b)

    out = np.zeros((*batch, M, N), dtype=a.dtype)
    batch_size = int(np.prod(batch, dtype=np.int64)) if batch else 1
    use_out_source = c is not None and (alpha != 0.0 or beta != 1.0)
    c_b = None
    if use_out_source:
        c_b = broadcast_to(c.astype(a.dtype, copy=False), (*batch, M, N))
    batch_shape, collapsed = collapse_batches(a_b, b_b, *([c_b] if use_out_source else []))

    has_batch = len(batch_shape) > 1
    do_axpby = use_out_source and (alpha != 1.0 or beta != 1.0)
    tn, tm = -(-N // bn), -(-M // bm)

    params = np.zeros((), dtype=GEMM_PARAMS)
    params["M"], params["N"], params["K"] = M, N, K
    params["lda"], params["ldb"], params["ldd"] = lda, ldb, N
    params["tiles_n"], params["tiles_m"] = tn, tm
    params["batch_stride_a"] = collapsed[0][-1]
    params["batch_stride_b"] = collapsed[1][-1]
    params["batch_stride_d"] = M * N
    params["swizzle_log"] = swizzle_log
    params["gemm_k_iterations_aligned"] = K // bk
    params["batch_ndim"] = len(batch_shape)

    buffers: dict[int, object] = {0: buffer_view(a_b), 1: buffer_view(b_b), 3: out.reshape(-1),
                                  4: params}
    if has_batch:
        buffers[6] = np.array(batch_shape, dtype=np.int32)
        buffers[7] = np.array([s for st in collapsed for s in st], dtype=np.int64)
    if use_out_source:
        addmm = np.zeros((), dtype=GEMM_ADDMM_PARAMS)
        item = a.itemsize
        addmm["ldc"], addmm["fdc"] = c_b.strides[-2] // item, c_b.strides[-1] // item
        addmm["batch_stride_c"] = collapsed[2][-1]
        addmm["alpha"], addmm["beta"] = alpha, beta
        buffers[2] = buffer_view(c_b)
        buffers[5] = addmm

    threadgroups, threads = matmul.fused_grid(M, N, batch_size, config, swizzle_log)
    return SteelLaunch(
        host_name=matmul.fused_kernel_name(transpose_a, transpose_b, tname, tname, config, nax),
        function_constants={10: has_batch, 100: use_out_source, 110: do_axpby,
                            200: M % bm == 0, 201: N % bn == 0, 202: K % bk == 0},
        buffers=buffers,
        threadgroups=threadgroups,
        threads_per_threadgroup=threads,
        out=out,
    )
