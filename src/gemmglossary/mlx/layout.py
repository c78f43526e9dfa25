"""How MLX's host code reads an array's memory layout before it binds the array.

Restated from ``check_transpose`` (``mlx/backend/metal/matmul.cpp``), ``collapse_batches``
(``mlx/backend/common/matmul.h``), ``collapse_contiguous_dims`` (``mlx/backend/common/utils.cpp``),
``check_contiguity`` and ``AsStrided::eval`` (``mlx/backend/common/utils.h``, ``common.cpp``: the
``row_contiguous`` and ``contiguous`` flags), read at the pinned tag (:data:`.matmul.MLX_TAG`).

numpy views play MLX's strided arrays: a transposed or sliced view is what MLX meets when
it gets a transposed or sliced array, and :func:`buffer_view` is the buffer MLX binds
(the data pointer at the view's first element; the strides go to the kernel separately).
"""

from __future__ import annotations

import numpy as np

INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1


def element_strides(x: np.ndarray) -> list[int]:
    return [s // x.itemsize for s in x.strides]


def is_row_contiguous(x: np.ndarray) -> bool:
    """MLX's ``row_contiguous`` flag: C order, where dims of size 1 may have any stride."""
    expected = 1
    for n, s in zip(reversed(x.shape), reversed(element_strides(x))):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def data_size(x: np.ndarray) -> int:
    """Elements between the first and the last one ``x`` addresses (MLX's ``data_size``)."""
    if x.size == 0:
        return 0
    return sum(s * (n - 1) for n, s in zip(x.shape, element_strides(x))) + 1


def is_contiguous(x: np.ndarray) -> bool:
    """MLX's ``contiguous`` flag: no negative stride, and the elements of the non-broadcast
    dims fill the span exactly (dense in some order; broadcast dims allowed)."""
    strides = element_strides(x)
    if any(s < 0 and n > 1 for n, s in zip(x.shape, strides)):
        return False
    dense = int(np.prod([n for n, s in zip(x.shape, strides) if s > 0], dtype=np.int64))
    return x.size == 0 or dense == data_size(x)


def buffer_view(x: np.ndarray) -> np.ndarray:
    """The 1-D buffer a strided view lives in, starting at its first element."""
    base, owner = x, x
    while getattr(owner, "base", None) is not None:  # through views and as_strided's wrapper
        owner = owner.base
        if isinstance(owner, np.ndarray):
            base = owner
    if base.flags.c_contiguous and np.shares_memory(base, x):
        offset = (x.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // x.itemsize
        return base.reshape(-1).view(x.dtype)[offset:]
    return np.ascontiguousarray(x).reshape(-1)


def broadcast_to(x: np.ndarray, shape) -> np.ndarray:
    """A read-only view of ``x`` broadcast to ``shape`` as MLX broadcasts: only a dim that
    grows (new, or from 1 to n > 1) gets stride 0; every other dim keeps its stride. (numpy's
    own broadcast_to also zeroes the stride of a dim of size 1 that stays 1, which would
    change what check_transpose sees.)"""
    shape = tuple(int(n) for n in shape)
    np.broadcast_shapes(x.shape, shape)  # raises for shapes that do not broadcast
    lead = len(shape) - x.ndim
    strides = [0] * lead + [0 if (n == 1 and t != 1) else s for n, t, s in zip(x.shape, shape[lead:], x.strides)]
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


def check_transpose(x: np.ndarray, is_vector: bool = False) -> tuple[bool, int, np.ndarray]:
    """(transposed, leading dimension, array) for the last two dims of ``x``.

    Unit stride along the last dim: not transposed, the leading dimension is the row
    stride; unit stride along the second to last: transposed, the column stride. A vector
    operand (a matrix with one row or column) qualifies only if it is also dense (its other
    stride equals the dim's length). Anything else is first copied to row-contiguous."""
    stx, sty = element_strides(x)[-2:]
    if sty == 1 and (not is_vector or stx == x.shape[-1]):
        return False, stx, x
    if stx == 1 and (not is_vector or sty == x.shape[-2]):
        return True, sty, x
    x = np.ascontiguousarray(x)
    return False, x.shape[-1], x


def collapse_contiguous_dims(shape, strides: list[list[int]], size_cap: int = INT32_MAX
                             ) -> tuple[list[int], list[list[int]]]:
    """Merge neighbouring dims that are contiguous in every stride list, dropping dims of
    size 1; a merged run stops growing past ``size_cap`` elements."""
    groups: list[list[int]] = []  # runs of dim indices that merge
    if len(shape):
        run = [0] if shape[0] != 1 else []
        size = shape[0]
        for i in range(1, len(shape)):
            size *= shape[i]
            contiguous = True
            for st in strides:
                if st[i] * shape[i] != st[i - 1] or size > size_cap:
                    contiguous, size = False, shape[i]
                    break
            if not contiguous:
                groups.append(run)
                run = []
            if shape[i] != 1:
                run.append(i)
        groups.append(run)
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for run in (g for g in groups if g):
        out_shape.append(int(np.prod([shape[i] for i in run])))
        for j, st in enumerate(strides):
            out_strides[j].append(st[run[-1]])
    if len(shape) and not out_shape:
        out_shape = [1]
        out_strides = [[0] for _ in strides]
    return out_shape, out_strides


def collapse_dims(shape, strides, size_cap: int = INT32_MAX) -> tuple[list[int], list[int]]:
    """MLX's one-stride-list ``collapse_contiguous_dims``: the first dim is always kept, later
    dims of size 1 are skipped, and a dim merges into the previous one when it is contiguous
    with it (no dims in, no dims out)."""
    out_shape: list[int] = []
    out_strides: list[int] = []
    for i, (n, st) in enumerate(zip(shape, strides)):
        if i == 0:
            out_shape, out_strides = [n], [st]
        elif n == 1:
            continue
        elif st * n != out_strides[-1] or out_shape[-1] * n > size_cap:
            out_shape.append(n)
            out_strides.append(st)
        else:
            out_shape[-1] *= n
            out_strides[-1] = st
    return out_shape, out_strides


def collapse_batches(*arrays: np.ndarray) -> tuple[list[int], list[list[int]]]:
    """Batch shape and one batch-stride list per operand, for operands already broadcast to
    one batch shape (the first operand's): contiguous batch dims merge; no batch is [1]/[0]."""
    if arrays[0].ndim == 2:
        return [1], [[0] for _ in arrays]
    shape = list(arrays[0].shape[:-2])
    strides = [element_strides(x)[:-2] for x in arrays]
    out_shape, out_strides = collapse_contiguous_dims(shape, strides)
    if not out_shape:
        return [1], [[0] for _ in arrays]
    return out_shape, out_strides


def grid_2d(shape, strides, divisor: int = 1) -> tuple[int, int, int]:
    """``get_2d_grid_dims_common`` of ``mlx/backend/common/utils.cpp`` (both overloads; read at
    the pinned tag, :data:`.matmul.MLX_TAG`): the product of the dims that are not broadcast
    (stride 0) in x, overflowing into y, divided by ``divisor`` (a dim that divides it is
    dropped), x the larger."""
    gx = gy = 1
    for n, s in zip(shape, strides):
        if s == 0:
            continue
        if divisor % n == 0:  # the dim is a factor of the divisor: drop both
            divisor //= n
            continue
        if gx * n < UINT32_MAX:
            gx *= n
        else:
            gy *= n
        if divisor > 1:
            if gx % divisor == 0:
                gx //= divisor
                divisor = 1
            elif gy % divisor == 0:
                gy //= divisor
                divisor = 1
    if gx > UINT32_MAX or gy > UINT32_MAX:
        raise ValueError(f"shape {tuple(shape)}: MLX cannot factor it into a grid (\"Unable to safely factor shape.\")")
    if gy > gx:
        gx, gy = gy, gx
    if divisor > 1:
        gx = -(-gx // divisor) * divisor
    return gx, gy, 1
