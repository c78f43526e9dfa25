"""Host side of MLX's segmented matmul: ``segmented_mm`` of ``steel_gemm_segmented.h``.

``mx.segmented_mm(a, b, segments)`` computes, for every (start, end) pair of ``segments``
(shape (..., 2)), ``a[:, start:end] @ b[start:end, :]``: one output matrix per segment of K.
Restates ``mx.segmented_mm`` in ``mlx/ops.cpp`` (a and b 2-D, the output shape
``segments.shape[:-1] + (M, N)``, segments cast to uint32) and ``segmented_mm`` in
``mlx/backend/metal/matmul.cpp`` (the tile from MLX's GEMM tile rule, function constants
199-201, the params, one threadgroup layer per segment), read at the pinned tag
(:data:`.matmul.MLX_TAG`). Its ``steel_gemm_segmented.h`` moves A and B to a segment's start
in 32-bit ``int`` arithmetic (``k_start * lda``), so a segment starting past 2**31 elements
into an operand would wrap.
Segments are read in place when row-contiguous, or when both last strides are 1 (each
segment starting where the previous one ends: a view of one array of boundaries); else
copied. The NAX variant (M5) is not planned. Kernels: MLX's, instantiated in
``kernels/mlx_steel_segmented.metal``.
"""

from __future__ import annotations

import numpy as np

from . import matmul
from .launch import DEFAULT_DEVICE, Launch, Plan, type_to_name
from .layout import buffer_view, check_transpose, element_strides, is_row_contiguous
from .steel import GEMM_PARAMS

SOURCE = "mlx_steel_segmented.metal"
#: Function constant indices of steel_gemm_segmented.h.
SEGMENTS_CONTIGUOUS, ALIGN_M, ALIGN_N = 199, 200, 201


def _segments_layout(segments: np.ndarray) -> tuple[bool, np.ndarray]:
    """(contiguous pairs, the array the kernel reads)."""
    if is_row_contiguous(segments):
        return True, segments
    st, sh = element_strides(segments), segments.shape
    ok = all(st[i + 1] * sh[i] == st[i] or sh[i] == 1 for i in range(segments.ndim - 2))
    ok = ok and st[-1] == 1 and (segments.ndim < 2 or st[-2] == 1)
    return (False, segments) if ok else (True, np.ascontiguousarray(segments))


def plan(a: np.ndarray, b: np.ndarray, segments, *, device: matmul.Device = DEFAULT_DEVICE) -> Plan:
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"segmented_mm multiplies two matrices; got shapes {a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise TypeError("a and b must share one dtype, as after MLX's type promotion")
    dtype = type_to_name(a.dtype)
    segments = np.asarray(segments)
    if segments.ndim < 1 or segments.shape[-1] != 2 or segments.dtype.kind not in "iu":
        raise ValueError(f"segments must be integers of shape (..., 2), got {segments.dtype} {segments.shape}")
    if segments.dtype != np.uint32:
        segments = segments.astype(np.uint32)
    M, K, N = a.shape[0], a.shape[1], b.shape[1]
    transpose_a, lda, a = check_transpose(a)
    transpose_b, ldb, b = check_transpose(b)
    contiguous, segments = _segments_layout(segments)
    out = np.zeros((*segments.shape[:-1], M, N), dtype=a.dtype)
    batch = out.size // (M * N)
    cfg = matmul.regular_config(dtype, device, transpose_a, transpose_b, M, N, K, batch)
    if device.nax_available:
        raise NotImplementedError("MLX runs the NAX segmented kernel on this device; it is not planned here")
    tn, tm = -(-N // cfg.bn), -(-M // cfg.bm)
    params = np.zeros((), dtype=GEMM_PARAMS)
    for field, value in (("M", M), ("N", N), ("K", K), ("lda", lda), ("ldb", ldb), ("ldd", N), ("tiles_n", tn),
                         ("tiles_m", tm), ("batch_stride_d", M * N)):
        params[field] = value  # batch strides, swizzle, K iterations and batch_ndim stay 0, as in MLX
    code = ("t" if transpose_a else "n") + ("t" if transpose_b else "n")
    name = f"steel_segmented_mm_{code}_{dtype}_{dtype}_bm{cfg.bm}_bn{cfg.bn}_bk{cfg.bk}_wm{cfg.wm}_wn{cfg.wn}"
    launch = Launch(SOURCE, name, {0: buffer_view(a), 1: buffer_view(b), 2: buffer_view(segments),
                                   3: out.reshape(-1), 4: params},
                    (32, cfg.wn, cfg.wm), threadgroups=(tn, tm, batch),
                    function_constants={SEGMENTS_CONTIGUOUS: contiguous, ALIGN_M: M % cfg.bm == 0,
                                        ALIGN_N: N % cfg.bn == 0})
    return Plan([launch], out)
