"""Host side of MLX's reductions (``reduce.h``, ``reduction/``): which kernel sums (or takes
the product, max or min of) which elements, and how it is dispatched.

Restates ``Reduce::eval_gpu`` and the dispatchers it calls in
``mlx/backend/metal/reduce.cpp`` (``all_reduce_dispatch``, ``row_reduce_general_dispatch``
with ``row_reduce_small``/``_simple``/``_looped``, ``strided_reduce_general_dispatch`` with
``strided_reduce_small``/``_longcolumn``/``_looped``/``_2pass``, ``init_reduce``), with
``get_reduction_plan`` and ``shapes_without_reduction_axes`` of
``mlx/backend/common/reduce.cpp`` and ``get_2d_grid_dims`` of ``mlx/backend/common/utils.cpp``,
read at the pinned tag (:data:`.matmul.MLX_TAG`), whose reduction headers the kernels compile.

In words: reducing everything of a dense array is ``all_reduce`` (one threadgroup up to 4096
values, else two passes through 128 or 4096 partial results). When the reduced elements
of each output are contiguous (the last reduced axis has stride 1) the reduction is along
rows: ``row_reduce_small`` for rows of at most 64, ``row_reduce_simple`` for plain
contiguous rows (and at least 32 of them), else ``row_reduce_looped``. When they are spaced
by a stride (reducing over a leading axis) it is along columns: ``col_reduce_small`` for
fewer than 32 values per column, ``col_reduce_longcolumn`` (then a second pass) for long
columns of narrow rows, ``col_reduce_2pass`` (then a second pass) for columns of more than
256 values and fewer than 32768 outputs, else ``col_reduce_looped``. Inputs whose layout
fits none of these are copied row-contiguous first. Covered here: float32, float16 and
bfloat16 inputs and the sum, prod, max and min reductions (MLX's and/or and integer
reductions are not restated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .launch import Launch, Plan, type_to_name
from .layout import (buffer_view, collapse_dims, data_size, element_strides, grid_2d, is_contiguous,
                     is_row_contiguous)

SOURCE = "mlx_reduce.metal"
OPS = ("sum", "prod", "max", "min")
#: Values a thread reads per step and outputs it writes (REDUCE_N_READS, REDUCE_N_WRITES of defines.h).
N_READS, N_WRITES = 4, 4
INT32_MAX = 2**31 - 1
#: ``maxTotalThreadsPerThreadgroup`` of these pipelines (no threadgroup-size attribute): 1024.
MAX_THREADS = 1024


@dataclass(frozen=True)
class ReductionPlan:
    """``get_reduction_plan``: the kind of reduction and the reduced axes (merged where
    contiguous), the last one being the innermost."""

    kind: str  # ContiguousAllReduce, ContiguousReduce, ContiguousStridedReduce,
    #            GeneralContiguousReduce, GeneralStridedReduce, GeneralReduce
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()


def reduction_plan(x: np.ndarray, axes: list[int]) -> ReductionPlan:
    shape, strides = x.shape, element_strides(x)
    if x.size == data_size(x) and len(axes) == x.ndim and is_contiguous(x):
        return ReductionPlan("ContiguousAllReduce")
    if is_row_contiguous(x):
        sh, st = [shape[axes[0]]], [strides[axes[0]]]
        for prev, a in zip(axes, axes[1:]):
            if a - 1 == prev and shape[a] > 1:
                sh[-1] *= shape[a]
                st[-1] = strides[a]
            else:
                sh.append(shape[a])
                st.append(strides[a])
        kept = [(n, s) for n, s in zip(sh, st) if n != 1]
        sh, st = [n for n, _ in kept], [s for _, s in kept]
        if st and st[-1] == 1:
            return ReductionPlan("ContiguousReduce", tuple(sh), tuple(st))
        if st and st[-1] > 1:
            return ReductionPlan("ContiguousStridedReduce", tuple(sh), tuple(st))
    # Sort the reduced axes by stride (zero strides first, then largest to smallest) and
    # merge neighbours that are contiguous with each other.
    pairs = sorted(((shape[a], strides[a]) for a in axes if shape[a] > 1),
                   key=lambda p: (p[1] != 0, -p[1]))
    for i in range(len(pairs) - 1, 0, -1):
        (n_a, s_a), (n_b, s_b) = pairs[i], pairs[i - 1]
        if s_b == n_a * s_a:
            del pairs[i]
            pairs[i - 1] = (n_a * n_b, s_a)
    sh, st = tuple(n for n, _ in pairs), tuple(s for _, s in pairs)
    if st[-1] == 1:
        return ReductionPlan("GeneralContiguousReduce", sh, st)
    if st[-1] > 1:
        size, expanded = 1, False
        for i in range(x.ndim - 1, -1, -1):
            if axes[-1] == i:
                continue
            if strides[i] == 0:
                if shape[i] == 1:
                    continue
                expanded = True
                break
            if strides[i] != size and shape[i] != 1:
                break
            size *= shape[i]
        if size > st[-1] or (size == st[-1] and not expanded):
            return ReductionPlan("GeneralStridedReduce", sh, st)
    return ReductionPlan("GeneralReduce", sh, st)


def _without(seq, axes):
    return [v for i, v in enumerate(seq) if i not in set(axes)]


def reduce_ndim_variant(reduce_ndim: int) -> int:
    """The NDIMS template argument: 1, 2, or 5 for three or more reduced dims."""
    return 1 if reduce_ndim <= 1 else 2 if reduce_ndim == 2 else 5


def row_threadgroup(row_size: int) -> int:
    """One simdgroup for rows up to 512, four up to 1024, then a thread per 4 values (≤ 1024)."""
    if row_size <= 512:
        return 32
    if row_size <= 1024:
        return 128
    return min(1024, -(-(-(-row_size // N_READS)) // 32) * 32)


def _i32(v):
    return np.array(v, dtype=np.int32)


def _i64(v):
    return np.array(v, dtype=np.int64)


def _u64(v):
    return np.array(v, dtype=np.uint64)


def _vec32(v):
    return np.array(v or [0], dtype=np.int32)  # MLX pushes a 0 rather than encode an empty vector


def _vec64(v):
    return np.array(v or [0], dtype=np.int64)


def _name(func: str, op: str, dtype, n: int | None = None, tile: tuple[int, int] | None = None,
          large: bool = False) -> str:
    name = func + ("_large" if large else "")
    if n is not None:
        name += f"_{n}" + (f"_{tile[0]}_{tile[1]}" if tile else "") + "_reduce"
    return f"{name}_{op}{type_to_name(dtype)}"


def plan(x: np.ndarray, axes, op: str = "sum") -> Plan:
    """Plan ``mx.<op>(x, axis=axes)`` (sum, prod, max or min) for a float32, float16 or
    bfloat16 array; the result has the reduced axes (as MLX's primitive computes it, before
    the op drops them)."""
    if op not in OPS:
        raise ValueError(f"op {op!r}: the reductions restated here are {OPS}")
    type_to_name(x.dtype)
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        raise TypeError(f"{x.dtype}: only floating-point reductions are restated here")
    axes = sorted({a % x.ndim for a in ([axes] if np.isscalar(axes) else axes)})
    if not axes:
        raise ValueError("no axes to reduce")
    out_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    if x.size and np.prod(out_shape) == x.size:
        raise ValueError("every reduced axis has size 1: MLX copies the input, no reduction kernel runs")
    # MLX allocates at least 4 bytes (its reduce structs are 4 bytes wide)
    storage = np.zeros(max(int(np.prod(out_shape)) * x.itemsize, 4) // x.itemsize, dtype=x.dtype)
    out = storage[:int(np.prod(out_shape))].reshape(out_shape)
    if x.size == 0:
        return Plan([Launch(SOURCE, _name("init_reduce", op, x.dtype), {0: storage}, (min(MAX_THREADS, out.size), 1, 1),
                            threads=(out.size, 1, 1))], out)
    p = reduction_plan(x, axes)
    if p.kind == "GeneralReduce":
        x = np.ascontiguousarray(x)
        p = reduction_plan(x, axes)
    if p.kind == "ContiguousAllReduce":
        return Plan(_all_reduce(x, storage, op), out)
    if p.kind in ("ContiguousReduce", "GeneralContiguousReduce"):
        return Plan(_row_reduce(x, out, storage, op, p, axes), out)
    return Plan(_col_reduce(x, out, storage, op, p, axes), out)


def _all_reduce(x, storage, op):
    size = x.size
    name = _name("all_reduce", op, x.dtype)
    if size <= N_READS * 1024:
        tg = -(-(-(-size // N_READS)) // 32) * 32
        return [Launch(SOURCE, name, {0: buffer_view(x), 1: storage, 2: _u64(size), 3: _u64(size)}, (tg, 1, 1),
                       threads=(tg, 1, 1))]
    rows, second = (32 * N_READS, 32) if x.nbytes <= 1 << 26 else (1024 * N_READS, 1024)
    partial = np.zeros(rows, dtype=x.dtype)
    row_size = -(-size // rows)
    tg = -(-min(-(-row_size // N_READS), 1024) // 32) * 32
    return [Launch(SOURCE, name, {0: buffer_view(x), 1: partial, 2: _u64(size), 3: _u64(row_size)}, (tg, 1, 1),
                   threads=(tg, rows, 1)),
            Launch(SOURCE, name, {0: partial, 1: storage, 2: _u64(rows), 3: _u64(rows)}, (second, 1, 1),
                   threads=(second, 1, 1))]


def _row_reduce(x, out, storage, op, p, axes):
    row_size = p.shape[-1]
    reduce_shape, reduce_strides = list(p.shape[:-1]), list(p.strides[:-1])
    non_row = int(np.prod(reduce_shape, dtype=np.int64))
    shape, strides = collapse_dims(_without(x.shape, axes), _without(element_strides(x), axes))
    large = x.size > INT32_MAX
    common = {0: buffer_view(x), 1: storage}
    args = {2: _i64(row_size), 3: _i64(non_row), 4: _vec32(shape), 5: _vec64(strides), 6: _i32(len(shape)),
            7: _vec32(reduce_shape), 8: _vec64(reduce_strides), 9: _i32(len(reduce_shape))}
    gx, gy, _ = grid_2d(out.shape, element_strides(out))
    n = reduce_ndim_variant(len(reduce_shape))
    if row_size <= 64:
        if (non_row < 32 and row_size <= 8) or non_row <= 8:
            grid, group = (gx, gy, 1), (min(gx, 1024), 1, 1)
        else:
            grid, group = (32, gx, gy), (32, 1, 1)
        return [Launch(SOURCE, _name("row_reduce_small", op, x.dtype, n, large=large), {**common, **args}, group,
                       threads=grid)]
    if p.kind == "ContiguousReduce" and not reduce_shape and x.size // row_size >= 32:
        tg = row_threadgroup(row_size)
        if x.itemsize == 8:
            tg = min(tg, 512)
        return [Launch(SOURCE, _name("row_reduce_simple", op, x.dtype),
                       {**common, 2: _u64(row_size), 3: _i64(out.size)}, (tg, 1, 1),
                       threads=(tg, -(-gx // N_WRITES), gy))]
    tg = row_threadgroup(row_size)
    return [Launch(SOURCE, _name("row_reduce_looped", op, x.dtype, n, large=large), {**common, **args}, (tg, 1, 1),
                   threads=(tg, gx, gy))]


def _col_reduce(x, out, storage, op, p, axes):
    size, stride = p.shape[-1], p.strides[-1]
    reduce_shape, reduce_strides = list(p.shape[:-1]), list(p.strides[:-1])
    non_col = int(np.prod(reduce_shape, dtype=np.int64))
    shape, strides = _without(x.shape, axes), _without(element_strides(x), axes)
    covered = 1
    while shape and covered < stride:  # the dims inside one strided step are the columns themselves
        covered *= shape.pop()
        strides.pop()
    shape, strides = collapse_dims(shape, strides)
    # every column kernel walks the column itself as the last reduced dim
    reduce_shape.append(size)
    reduce_strides.append(stride)
    n = reduce_ndim_variant(len(reduce_shape))
    large = x.size > INT32_MAX
    args = {2: _u64(size), 3: _i64(stride), 4: _vec32(shape), 5: _vec64(strides), 6: _i32(len(shape)),
            7: _vec32(reduce_shape), 8: _vec64(reduce_strides), 9: _i32(len(reduce_shape)), 10: _u64(non_col)}
    o_shape, o_strides = list(out.shape), element_strides(out)
    while o_shape and o_strides[-1] < stride:
        o_shape.pop()
        o_strides.pop()
    gx, gy, _ = grid_2d(o_shape, o_strides)
    total = size * non_col
    if total < 32:
        blocks = -(-stride // N_READS)
        tx = min(blocks, 32)
        ty = min(8, MAX_THREADS // tx, total)
        return [Launch(SOURCE, _name("col_reduce_small", op, x.dtype, n, large=large),
                       {0: buffer_view(x), 1: storage, **args}, (tx, ty, 1), threadgroups=(-(-blocks // tx), gx, gy))]
    if stride < 32 and total >= 1024:
        outer = 128 if total >= 32768 else 32
        partial = np.zeros((outer, *out.shape), dtype=x.dtype)
        first = Launch(SOURCE, _name("col_reduce_longcolumn", op, x.dtype, n, large=large),
                       {0: buffer_view(x), 1: partial.reshape(-1), **args, 3: _u64(stride),  # size_t here, int64_t elsewhere
                        11: _u64(out.size)},
                       (stride, min(32, -(-total // outer)), 1), threadgroups=(gx, gy, outer))
        return [first, _second_pass(partial, storage, op, outer, out.size)]
    if total > 256 and out.size // 32 < 1024:
        partial = np.zeros((32, *out.shape), dtype=x.dtype)
        first = Launch(SOURCE, _name("col_reduce_2pass", op, x.dtype, n, (32, 32), large=large),
                       {0: buffer_view(x), 1: partial.reshape(-1), **args, 11: _u64(out.size // stride)},
                       (256, 1, 1), threads=(256 * -(-stride // 32), gx * 32, gy))
        return [first, _second_pass(partial, storage, op, 32, out.size)]
    return [Launch(SOURCE, _name("col_reduce_looped", op, x.dtype, n, (32, 32), large=large),
                   {0: buffer_view(x), 1: storage, **args}, (256, 1, 1),
                   threads=(256 * -(-stride // 32), gx, gy))]


def _second_pass(partial, storage, op, blocks, out_size):
    """Sum (or ...) the ``blocks`` partial results of every output: a looped column reduction
    of the row-contiguous intermediate along its first axis."""
    args = {2: _u64(blocks), 3: _i64(out_size), 4: _vec32([]), 5: _vec64([]), 6: _i32(0),
            7: _vec32([blocks]), 8: _vec64([out_size]), 9: _i32(1), 10: _u64(1)}
    return Launch(SOURCE, _name("col_reduce_looped", op, partial.dtype, 1, (32, 32), large=partial.size > INT32_MAX),
                  {0: partial.reshape(-1), 1: storage, **args}, (256, 1, 1), threads=(256 * -(-out_size // 32), 1, 1))
