"""Host side of MLX's scans (``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``logcumsumexp``).

Restates ``scan_gpu_inplace`` and ``Scan::eval_gpu`` of ``mlx/backend/metal/scan.cpp``, the
output types of the ops in ``mlx/ops.cpp`` (a sum of bool is int32) and
``get_2d_grid_dims`` with a divisor (:func:`.layout.grid_2d`), read at the pinned tag
(:data:`.matmul.MLX_TAG`), whose ``scan.h`` the kernels compile.

An input MLX can scan in place (contiguous in memory, the axis not broadcast) is bound as
it is; any other is copied row-contiguous first, as MLX copies it. An axis of unit stride
takes ``contiguous_scan``: one threadgroup per row, 32-lane simdgroups enough for
:func:`n_reads` values per thread (capped at :data:`MAX_THREADS`). Any other axis takes
``strided_scan``: 32 columns per threadgroup, ``32 / n_reads`` simdgroups. Kernels: MLX's
``scan.h``, instantiated in ``kernels/mlx_scan.metal``.
"""

from __future__ import annotations

import numpy as np

from .launch import Launch, Plan, type_to_name
from .layout import UINT32_MAX, buffer_view, data_size, element_strides, grid_2d, is_contiguous

SOURCE = "mlx_scan.metal"
OPS = ("sum", "prod", "max", "min", "logaddexp")
#: ``maxTotalThreadsPerThreadgroup`` of the scan pipelines (no threadgroup-size attribute):
#: 1024, the most any Apple GPU allows.
MAX_THREADS = 1024
SIMD = 32
STRIDED_COLUMNS = 32  # bn of scan_gpu_inplace


def n_reads(dtype) -> int:
    return 4 if np.dtype(dtype).itemsize <= 4 else 2


def out_dtype(op: str, dtype) -> np.dtype:
    """The result type of MLX's op: a cumulative sum of bool is int32, everything else keeps its type."""
    if op not in OPS:
        raise ValueError(f"scan op {op!r}: MLX's scans are {', '.join(OPS)}")
    return np.dtype(np.int32) if op == "sum" and np.dtype(dtype) == np.bool_ else np.dtype(dtype)


def kernel_name(contiguous: bool, reverse: bool, inclusive: bool, op: str, in_dtype, result_dtype) -> str:
    return ("contig_" if contiguous else "strided_") + "scan_" + ("reverse_" if reverse else "") + \
        ("inclusive_" if inclusive else "exclusive_") + f"{op}_{type_to_name(in_dtype)}_{type_to_name(result_dtype)}"


def plan(x: np.ndarray, op: str, *, axis: int = -1, reverse: bool = False, inclusive: bool = True) -> Plan:
    """Plan MLX's scan of ``x`` along ``axis`` (``mx.cumsum(x, axis, reverse=..., inclusive=...)``
    for ``op="sum"``)."""
    result = out_dtype(op, x.dtype)
    if x.ndim == 0 or x.size == 0:
        raise ValueError("scan of an empty or 0-d array: not a launch this module plans")
    axis = axis % x.ndim
    if not (is_contiguous(x) and element_strides(x)[axis] != 0):
        x = np.ascontiguousarray(x)  # MLX: contiguous_copy_gpu
    strides = element_strides(x)
    size = x.shape[axis]
    contiguous = strides[axis] == 1
    reads = n_reads(x.dtype)
    # the output takes the input's layout (in place, or a buffer of its data size)
    buffer = np.zeros(data_size(x), dtype=result)
    out = np.lib.stride_tricks.as_strided(buffer, x.shape, [s * result.itemsize for s in strides])
    buffers = {0: buffer_view(x), 1: buffer, 2: np.array(size, np.uint64)}
    name = kernel_name(contiguous, reverse, inclusive, op, x.dtype, result)
    if contiguous:
        per_simd = reads * SIMD
        tg = MAX_THREADS
        if size <= reads * 1024:
            tg = -(-size // per_simd) * SIMD
        elif size <= reads * 2048:
            tg = -(-(size // 2) // per_simd) * SIMD
        tg = min(tg, MAX_THREADS)
        gx, gy, _ = grid_2d(x.shape, strides, size)
        launch = Launch(SOURCE, name, buffers, (tg, 1, 1), threads=(tg, gx, gy))
    else:
        stride = strides[axis]
        stride_blocks = -(-stride // STRIDED_COLUMNS)
        buffers[3] = np.array(stride, np.uint64)
        buffers[4] = np.array(stride_blocks, np.uint64)
        tg = (STRIDED_COLUMNS // reads) * SIMD
        gx, gy, _ = grid_2d(x.shape, strides, size * stride)
        if gx * stride_blocks <= UINT32_MAX:
            gx *= stride_blocks
        else:
            gy *= stride_blocks
        launch = Launch(SOURCE, name, buffers, (tg, 1, 1), threads=(tg, gx, gy))
    return Plan([launch], out)
