"""Host side of MLX's matrix-vector products: ``gemv`` and ``gemv_t`` of ``gemv.h``.

Restates the dispatch of ``gemv_axbpy`` (and ``gemv``, which calls it without the bias) in
``mlx/backend/metal/matmul.cpp`` at the pinned tag (:data:`.matmul.MLX_TAG`, whose ``gemv.h``
the kernels compile): the buffers MLX binds and those it
leaves unbound without a bias, with the preparation ``Matmul::eval_gpu`` and
``AddMM::eval_gpu`` do before they route a product with one row or one column there:
``check_transpose`` with the vector rule, ``collapse_batches``, and folding a batch into M
when the matrix operand is shared. The block shape and grid are :func:`.matmul.gemv_plan`'s,
and which product MLX sends to GEMV at all (instead of ``dot_product``, the wide GEMV or
steel) is :func:`.matmul.route`'s; :func:`plan` raises when the shapes are not a GEMV's
after MLX's preparation.

The kernel family in the names: ``gemv`` reads the matrix along its rows (each simdgroup
row reduces a dot product with ``simd_shuffle_down``), ``gemv_t`` along its columns (the
matrix is the "transposed" one for this access). For ``x @ W`` with a row-major W (K × N),
MLX runs ``gemv_t``; for ``W @ x``, ``gemv``. Kernels: MLX's ``gemv.h``, instantiated in
``kernels/mlx_gemv.metal``.
"""

from __future__ import annotations

import numpy as np

from .launch import Launch, Plan, type_to_name
from .matmul import Gemv, gemv_plan
from .layout import broadcast_to, buffer_view, check_transpose, collapse_batches, element_strides

SOURCE = "mlx_gemv.metal"


def host_name(config: Gemv, dtype, batched: bool, axpby: bool) -> str:
    """``gemv[_t]_<type>_bm.._bn.._sm.._sn.._tm.._tn.._nc<batched>_axpby<bias>``."""
    kernel = "gemv_t" if config.transposed else "gemv"
    return (f"{kernel}_{type_to_name(dtype)}_bm{config.bm}_bn{config.bn}_sm{config.sm}_sn{config.sn}"
            f"_tm{config.tm}_tn{config.tn}_nc{int(batched)}_axpby{int(axpby)}")


def _i32(x):
    return np.array(x, dtype=np.int32)


def plan(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: float = 1.0,
         beta: float = 0.0) -> Plan:
    """Plan ``a @ b`` (``c`` None: ``Matmul``) or ``alpha·(a @ b) + beta·c`` (``AddMM``) as MLX's GEMV.

    ``a`` is (..., M, K), ``b`` (..., K, N) with M == 1 or N == 1 after MLX's preparation;
    batch dims broadcast; ``c`` broadcasts to the output (..., M, N). Strided views are read
    in place where MLX would (a transposed matrix picks the other kernel), copied otherwise.
    """
    if a.dtype != b.dtype or (c is not None and c.dtype != a.dtype):
        raise TypeError("a, b (and c) must share one dtype, as after MLX's type promotion")
    type_to_name(a.dtype)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"cannot multiply shapes {a.shape} and {b.shape}")
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    if K == 0:
        raise ValueError("K == 0: MLX fills the output without a kernel")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, (*batch, M, K))
    b = broadcast_to(b, (*batch, K, N))
    transpose_a, lda, a = check_transpose(a, M == 1)
    transpose_b, ldb, b = check_transpose(b, N == 1)
    if c is not None:
        c = broadcast_to(c, (*batch, M, N))
    operands = (a, b) if c is None else (a, b, c)
    batch_shape, strides = collapse_batches(*operands)
    batch_size = int(np.prod(batch, dtype=np.int64))
    a_stride, b_stride = strides[0], strides[1]
    c_stride = strides[2] if c is not None else None
    # A batch of rows times one shared matrix is one taller matrix: M absorbs the batch.
    if (batch_size > 1 and not transpose_a and len(batch_shape) == 1 and element_strides(a)[-2] == K
            and a_stride[-1] == M * K and b_stride[-1] == 0
            and (c is None or c_stride[-1] == M * element_strides(c)[-2])):
        M *= batch_shape[-1]
        batch_size, batch_shape, a_stride, b_stride = 1, [1], [0], [0]
        c_stride = [0] if c is not None else None
    if min(M, N) != 1:
        raise ValueError(f"M = {M}, N = {N} after MLX's batch folding: not a matrix-vector product")
    if c is None and M == N == 1 and batch_size == 1:
        raise ValueError("a 1 × K by K × 1 product: MLX's Matmul runs dot_product, not GEMV")

    b_is_matrix = N != 1
    mat, vec = (b, a) if b_is_matrix else (a, b)
    transposed = (not transpose_b) if b_is_matrix else transpose_a
    out_len = N if b_is_matrix else M
    config = gemv_plan(K, out_len, transposed, batch_size)
    axpby = c is not None and (alpha != 1.0 or beta != 0.0)
    batched = len(batch_shape) != 1
    out = np.zeros((*batch, a.shape[-2], N), dtype=a.dtype)  # MLX allocates it row-contiguous

    buffers: dict[int, object] = {
        0: buffer_view(mat), 1: buffer_view(vec), 3: out.reshape(-1),
        4: _i32(K), 5: _i32(out_len), 6: _i32(ldb if b_is_matrix else lda),
        9: _i32(len(batch_shape)), 10: np.array(batch_shape, np.int32),
        11: np.array(a_stride if b_is_matrix else b_stride, np.int64),
        12: np.array(b_stride if b_is_matrix else a_stride, np.int64),
    }
    if axpby:
        buffers.update({2: buffer_view(c), 7: np.array(alpha, np.float32), 8: np.array(beta, np.float32),
                        13: np.array(c_stride, np.int64), 14: _i32(element_strides(c)[-1])})
    launch = Launch(SOURCE, host_name(config, a.dtype, batched, axpby), buffers,
                    config.threads_per_threadgroup, threadgroups=config.threadgroups)
    return Plan([launch], out)
