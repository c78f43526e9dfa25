"""Host side of MLX's softmax over the last axis: ``softmax_single_row`` and ``softmax_looped``.

Restates ``Softmax::eval_gpu`` of ``mlx/backend/metal/softmax.cpp`` and the
part of ``mx.softmax`` in ``mlx/ops.cpp`` that decides a softmax over the last axis is
this primitive (other axes are computed from max, exp and sum ops, not restated here).
Read at the pinned tag (:data:`.matmul.MLX_TAG`), whose ``softmax.h`` the kernels compile.

Rows of up to :data:`LOOPED_LIMIT` values are read once: one threadgroup per row with just
enough simdgroups for 4 values per thread (``block_softmax_*``). Longer rows take
``looped_softmax_*``: a full threadgroup walks the row twice (an online max and normalizer,
then the output). ``precise`` only matters for float16 and bfloat16: it accumulates in
float32 (``*_precise_*``) instead of the input type. The input is used in place when MLX
would (dense in memory with unit stride along the last axis; the output then takes its
strides), otherwise copied row-contiguous first. Kernels: MLX's ``softmax.h``, instantiated
in ``kernels/mlx_softmax.metal``.
"""

from __future__ import annotations

import numpy as np

from .launch import Launch, Plan, type_to_name
from .layout import buffer_view, data_size, element_strides, is_contiguous

SOURCE = "mlx_softmax.metal"
LOOPED_LIMIT = 4096
#: Values each thread reads (SOFTMAX_N_READS of defines.h).
N_READS = 4
#: ``maxTotalThreadsPerThreadgroup`` of the looped kernel's pipeline, which MLX uses as its
#: threadgroup size. Metal reports it per pipeline and device; 1024 is the most any Apple GPU
#: allows and what these kernels (no threadgroup-size attribute) report there.
LOOPED_THREADS = 1024


def kernel_name(axis_size: int, dtype, precise: bool) -> str:
    kind = "looped_" if axis_size > LOOPED_LIMIT else "block_"
    return kind + "softmax_" + ("precise_" if precise and np.dtype(dtype) != np.float32 else "") + type_to_name(dtype)


def threadgroup_size(axis_size: int) -> int:
    if axis_size > LOOPED_LIMIT:
        return LOOPED_THREADS
    simdgroups = -(-(-(-axis_size // N_READS)) // 32)
    return 32 * simdgroups


def plan(x: np.ndarray, *, precise: bool = False) -> Plan:
    """Plan ``mx.softmax(x, axis=-1, precise=precise)`` for float32, float16 or bfloat16 ``x``."""
    if np.dtype(x.dtype) not in (np.float32, np.float16) and x.dtype.name != "bfloat16":
        raise TypeError(f"softmax of {x.dtype}: MLX's kernels take float32, float16 or bfloat16")
    if x.ndim == 0 or x.size == 0:
        raise ValueError("softmax of an empty or 0-d array launches nothing in MLX")
    if not (is_contiguous(x) and element_strides(x)[-1] == 1):
        x = np.ascontiguousarray(x)
    axis_size = x.shape[-1]
    rows = data_size(x) // axis_size
    buffer = np.zeros(data_size(x), dtype=x.dtype)
    out = np.lib.stride_tricks.as_strided(buffer, x.shape, x.strides)  # the output takes x's layout
    tg = threadgroup_size(axis_size)
    launch = Launch(SOURCE, kernel_name(axis_size, x.dtype, precise),
                    {0: buffer_view(x), 1: buffer, 2: np.array(axis_size, np.int32)},
                    (tg, 1, 1), threads=(rows * tg, 1, 1))
    return Plan([launch], out)
