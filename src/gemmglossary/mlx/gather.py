"""Host side of MLX's gather matmul: ``gather_mm_rhs`` and ``gather_mm`` of ``steel_gemm_gather.h``.

``mx.gather_mm(a, b, lhs_indices, rhs_indices)`` multiplies, for every position of the
(broadcast) index arrays, the matrix ``a[lhs_indices[i]]`` by ``b[rhs_indices[i]]`` (a and b
indexed over their batch dims; a missing index array means "every batch matrix in order").
Restated from MLX's host code at the pinned tag (:data:`.matmul.MLX_TAG`; links below,
:func:`.matmul.source_url`), whose ``steel_gemm_gather.h`` is the pinned one:

* ``gather_mm`` and ``indices_or_default`` in ``mlx/ops.cpp`` (:data:`OPS_LINES`): indices cast
  to uint32 and broadcast together; the output is ``indices.shape + (M, N)``; the primitive
  knows the rhs indices are sorted only when ``sorted_indices`` is set and no lhs indices
  were given.
* ``GatherMM::eval_gpu`` (:data:`LINES` ``route``): one row of a (M = 1) with sorted rhs indices
  takes ``gather_mm_rhs``; else M = 1 or N = 1 a gather GEMV, a transposed-view b may take
  ``gemv_wide_gather`` (generation 15 and later), and everything else the general
  ``gather_mm``. Only the two steel kernels are planned here; the other routes raise.
* ``gather_mm_rhs``: a broadcast to the indices and copied row-contiguous (one row per
  index), b's layout from ``ensure_batch_contiguous``, the tile 16×64×16 with 1×2
  simdgroups, the rhs indices (uint32, row-contiguous) at buffer 2, and one threadgroup per
  output tile. The kernel walks the indices of its 16 rows and multiplies each run of equal
  indices by that matrix of b, so it is right for any order; sorted indices make the runs
  long. MLX does not check the order, nor that an index names a matrix of b (the emulator
  reports such a read out of bounds).
* ``gather_mm``: the tile from MLX's GEMM tile rule (:func:`.matmul.regular_config`, with the
  output's batch size), function constants 10 (``has_batch``: more than one index dim) and
  200-202, one threadgroup layer per output matrix, the index shape and strides and each
  operand's batch shape and strides as buffers 6-14.

The NAX variants (M5) are not planned. Kernels: MLX's, instantiated in
``kernels/mlx_steel_gather.metal``.
"""

from __future__ import annotations

import numpy as np

from . import matmul
from .launch import DEFAULT_DEVICE, Launch, Plan, type_to_name
from .layout import broadcast_to, buffer_view, check_transpose, element_strides, is_row_contiguous
from .steel import GEMM_PARAMS

SOURCE = "mlx_steel_gather.metal"
#: Function constant indices of steel_gemm_gather.h.
HAS_BATCH, ALIGN_M, ALIGN_N, ALIGN_K = 10, 200, 201, 202
#: gather_mm_rhs's fixed tile (bm, bn, bk, wm, wn).
RHS_TILE = matmul.TileConfig(16, 64, 16, 1, 2)

#: Lines of ``mlx/backend/metal/matmul.cpp`` at :data:`.matmul.MLX_TAG` each rule follows.
LINES = {
    "ensure_batch_contiguous": (56, 82),
    "rhs": (2145, 2276),             # gather_mm_rhs
    "rhs_tile": (2180, 2181),
    "rhs_params": (2247, 2262),
    "rhs_buffers": (2265, 2275),
    "general": (2672, 2809),         # gather_mm
    "general_tile": (2692, 2700),    # defaults, then GEMM_TPARAM_MACRO
    "general_params": (2770, 2785),
    "general_buffers": (2787, 2808),
    "route": (2811, 2864),           # GatherMM::eval_gpu
}
#: Lines of ``mlx/ops.cpp`` at that tag.
OPS_LINES = {"indices_or_default": (79, 108), "gather_mm": (6131, 6219)}


def host_url(rule: str) -> str:
    if rule in OPS_LINES:
        return matmul.source_url(*OPS_LINES[rule], path="mlx/ops.cpp")
    return matmul.source_url(*LINES[rule])


def _indices(indices, x: np.ndarray) -> np.ndarray:
    """``indices_or_default``: the given indices as uint32, or every batch matrix of x in order."""
    if x.ndim < 2:
        raise ValueError(f"gather_mm operands need at least two dims, got shape {x.shape}")
    if indices is None:
        return np.arange(int(np.prod(x.shape[:-2])), dtype=np.uint32).reshape(x.shape[:-2])
    indices = np.asarray(indices)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"indices must be integers, got {indices.dtype}")
    return indices.astype(np.uint32)


def _batch_contiguous(x: np.ndarray) -> tuple[bool, int, np.ndarray]:
    """``ensure_batch_contiguous``: (transposed, leading dimension, array) for b of gather_mm_rhs,
    copying to row-contiguous when the batch dims or the matrix layout do not fit."""
    if is_row_contiguous(x):
        return False, element_strides(x)[-2], x
    st = element_strides(x)
    # MLX's check compares each batch stride with the next one times this dim's length.
    if all(st[i + 1] * x.shape[i] == st[i] for i in range(x.ndim - 3)):
        stx, sty = st[-2:]
        K, N = x.shape[-2:]
        if sty == 1 and (N != 1 or stx == N):
            return False, stx, x
        if stx == 1 and (N != 1 or sty == K):
            return True, sty, x
    x = np.ascontiguousarray(x)
    return False, element_strides(x)[-2], x


def _offset(x: np.ndarray) -> int:
    """MLX's ``offset()`` of a view: elements from the start of the buffer it lives in."""
    owner = x
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    return (x.__array_interface__["data"][0] - owner.__array_interface__["data"][0]) // x.itemsize


def _params(**fields) -> np.ndarray:
    params = np.zeros((), dtype=GEMM_PARAMS)  # swizzle_log and the unnamed fields stay 0, as in MLX
    for field, value in fields.items():
        params[field] = value
    return params


def _alignment(M: int, N: int, K: int, cfg: matmul.TileConfig) -> dict[int, bool]:
    return {ALIGN_M: M % cfg.bm == 0, ALIGN_N: N % cfg.bn == 0, ALIGN_K: K % cfg.bk == 0}


def kernel_name(rhs: bool, transpose_a: bool, transpose_b: bool, dtype: str, cfg: matmul.TileConfig) -> str:
    code = ("t" if transpose_a else "n") + ("t" if transpose_b else "n")
    prefix = "steel_gather_mm_rhs_" if rhs else "steel_gather_mm_"
    return f"{prefix}{code}_{dtype}_{dtype}_bm{cfg.bm}_bn{cfg.bn}_bk{cfg.bk}_wm{cfg.wm}_wn{cfg.wn}"


def plan(a: np.ndarray, b: np.ndarray, lhs_indices=None, rhs_indices=None, *, sorted_indices: bool = False,
         device: matmul.Device = DEFAULT_DEVICE) -> Plan:
    """Plan ``mx.gather_mm(a, b, lhs_indices, rhs_indices, sorted_indices)`` when MLX runs one
    of the two steel gather kernels for it; numpy views stand for MLX's strided arrays."""
    if lhs_indices is None and rhs_indices is None:
        raise ValueError("without indices gather_mm is a plain matmul (mlx.steel plans it)")
    if a.dtype != b.dtype:
        raise TypeError("a and b must share one dtype, as after MLX's type promotion")
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"gather_mm needs (..., M, K) and (..., K, N) operands; got {a.shape} and {b.shape}")
    dtype = type_to_name(a.dtype)
    lhs, rhs = _indices(lhs_indices, a), _indices(rhs_indices, b)
    shape = np.broadcast_shapes(lhs.shape, rhs.shape)
    lhs, rhs = broadcast_to(lhs, shape), broadcast_to(rhs, shape)
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    out = np.zeros((*shape, M, N), dtype=a.dtype)
    right_sorted = sorted_indices and lhs_indices is None
    if M == 1 and right_sorted:
        if device.nax_available:
            raise NotImplementedError("MLX runs gather_mm_rhs_nax on this device; it is not planned here")
        return _plan_rhs(a, b, rhs, out, dtype)
    if M == 1 or N == 1:
        raise NotImplementedError("MLX runs a gather GEMV (gather_mv) for one row or column; not planned here")
    sa, sb = element_strides(a), element_strides(b)
    if sb[-1] != 1 and sb[-2] == 1 and not (sa[-1] != 1 and sa[-2] == 1):
        lda = sa[-2] if sa[-1] == 1 else K
        offsets = (_offset(b), _offset(a) if sa[-1] == 1 else 0)  # a copied when neither layout fits
        if matmul.gemv_wide_plan(dtype, device, M, N, K, sb[-1], lda, tuple(sb[:-2]) + tuple(sa[:-2]), offsets=offsets):
            raise NotImplementedError("MLX runs gemv_wide_gather for this product; it is not planned here")
    return _plan_general(a, b, lhs, rhs, out, dtype, device)


def _plan_rhs(a, b, rhs, out, dtype) -> Plan:
    indices = np.ascontiguousarray(rhs)  # ensure_row_contiguous
    transpose_b, ldb, b = _batch_contiguous(b)
    if a.size // (a.shape[-2] * a.shape[-1]) != indices.size:  # broadcast a as if indexed by arange
        a = broadcast_to(a, (*indices.shape, *a.shape[-2:]))
    a = a if is_row_contiguous(a) else np.ascontiguousarray(a)
    K, N = a.shape[-1], b.shape[-1]
    M = a.size // K
    cfg = RHS_TILE
    batch_stride_b = element_strides(b)[-3] if b.ndim > 2 else b.size
    tn, tm = matmul.cdiv(N, cfg.bn), matmul.cdiv(M, cfg.bm)
    params = _params(M=M, N=N, K=K, lda=K, ldb=ldb, ldd=N, tiles_n=tn, tiles_m=tm,
                     batch_stride_b=batch_stride_b, gemm_k_iterations_aligned=K // cfg.bk)
    launch = Launch(SOURCE, kernel_name(True, False, transpose_b, dtype, cfg),
                    {0: buffer_view(a), 1: buffer_view(b), 2: indices.reshape(-1), 3: out.reshape(-1), 4: params},
                    (32, cfg.wn, cfg.wm), threadgroups=(tn, tm, 1),
                    function_constants=_alignment(M, N, K, cfg))
    return Plan([launch], out)


def _plan_general(a, b, lhs, rhs, out, dtype, device) -> Plan:
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    transpose_a, lda, a = check_transpose(a)
    transpose_b, ldb, b = check_transpose(b)
    batch = out.size // (M * N)
    batch_ndim = out.ndim - 2
    cfg = matmul.regular_config(dtype, device, transpose_a, transpose_b, M, N, K, batch)
    tn, tm = matmul.cdiv(N, cfg.bn), matmul.cdiv(M, cfg.bm)
    ls, rs = element_strides(lhs), element_strides(rhs)
    params = _params(M=M, N=N, K=K, lda=lda, ldb=ldb, ldd=N, tiles_n=tn, tiles_m=tm,
                     batch_stride_a=ls[0] if batch_ndim else 0, batch_stride_b=rs[0] if batch_ndim else 0,
                     batch_stride_d=M * N, gemm_k_iterations_aligned=K // cfg.bk, batch_ndim=batch_ndim)
    i32 = lambda v: np.array(v, np.int32)  # noqa: E731  set_bytes / set_vector_bytes of ints
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731  ... and of strides
    buffers = {0: buffer_view(a), 1: buffer_view(b), 2: buffer_view(lhs), 3: buffer_view(rhs), 4: out.reshape(-1),
               5: params, 6: i32(lhs.shape), 7: i64(ls), 8: i64(rs),
               9: i32(a.ndim - 2), 10: i32(a.shape), 11: i64(element_strides(a)),
               12: i32(b.ndim - 2), 13: i32(b.shape), 14: i64(element_strides(b))}
    launch = Launch(SOURCE, kernel_name(False, transpose_a, transpose_b, dtype, cfg), buffers,
                    (32, cfg.wn, cfg.wm), threadgroups=(tn, tm, batch),
                    function_constants={HAS_BATCH: batch_ndim > 1, **_alignment(M, N, K, cfg)})
    return Plan([launch], out)
