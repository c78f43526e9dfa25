"""Host side of MLX's block-masked matmul: ``gemv_masked.h`` and ``steel_gemm_masked.h``.

``mx.block_masked_mm(a, b, block_size, mask_out, mask_lhs, mask_rhs)`` multiplies a and b
with a mask per block_size × block_size block (32 or 64): an output mask (boolean: the block
is zero; else a factor) and operand masks over the blocks of a and b (a K block contributes
only if both are true; as numbers they scale it). This restates ``mx.block_masked_mm`` in
``mlx/ops.cpp`` (masks cast to bool or to the output type and broadcast to the batch; a
missing operand mask is all true) and ``BlockMaskedMM::eval_gpu`` in
``mlx/backend/metal/matmul.cpp``: one row or column goes to ``gemv_masked`` /
``gemv_t_masked`` (block shape from the block size, its own rule, not GEMV's), everything
else to ``block_masked_gemm`` with BM = BN = block_size, BK = 16, 2 × 2 simdgroups. Read at
the pinned tag (:data:`.matmul.MLX_TAG`; links: :func:`.matmul.source_url`). In its
``gemv_masked.h``, ``gemv_t_masked`` reads the output mask one element per block of N
whatever the mask's stride along N (the stride is commented out there): right for a mask
whose blocks along N are adjacent in memory, as in a row-contiguous mask; a mask broadcast
along N reads past its buffer, which the emulator reports
(``tests/mlx/test_block_masked.py``). The batch is not collapsed (MLX's host code
keeps every batch dim here). Kernels: MLX's, instantiated in ``kernels/mlx_gemv_masked.metal``
and ``kernels/mlx_steel_masked.metal`` (the two headers cannot share a file: both define
``_NoMask`` and ``ScaleOp``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .launch import Launch, Plan, type_to_name
from .layout import broadcast_to, buffer_view, check_transpose, element_strides
from .steel import GEMM_PARAMS

GEMV_SOURCE = "mlx_gemv_masked.metal"
STEEL_SOURCE = "mlx_steel_masked.metal"
BLOCK_SIZES = (32, 64)


@dataclass(frozen=True)
class MaskedGemvConfig:
    transposed: bool
    bm: int
    bn: int
    sm: int
    sn: int
    tm: int
    tn: int

    @property
    def outputs_per_threadgroup(self) -> int:
        return self.bn * self.sn * self.tn if self.transposed else self.bm * self.sm * self.tm


def gemv_config(transposed: bool, out_len: int, block_size: int) -> MaskedGemvConfig:
    """The masked GEMV's block shape: gemv_t 8 × 4 threads, 2 simdgroups (4 for 2048+ outputs with
    64-wide blocks), 4 or 8 rows per thread; gemv 2 simdgroups of 4 × 8 threads for 32-wide
    blocks, 2 (4 from 512 outputs) of 2 × 16 for 64-wide; fewer than 4 outputs: one per thread."""
    if transposed:
        bn = 4 if block_size == 64 and out_len >= 2048 else 2
        return MaskedGemvConfig(True, 1, bn, 8, 4, 4 if block_size == 32 else 8, 1 if out_len < 4 else 4)
    if block_size == 32:
        bm, sm, sn = 2, 4, 8
    else:
        bm, sm, sn = (4 if out_len >= 512 else 2), 2, 16
    return MaskedGemvConfig(False, bm, 1, sm, sn, 1 if out_len < 4 else 4, 4)


def _mask_name(mask) -> str:
    return "nomask" if mask is None else type_to_name(mask.dtype)


def _i32(v):
    return np.array(v, dtype=np.int32)


def plan(a: np.ndarray, b: np.ndarray, block_size: int, mask_out=None, mask_lhs=None, mask_rhs=None) -> Plan:
    """Plan ``mx.block_masked_mm`` for a (..., M, K) and b (..., K, N) of one dtype; masks are
    (..., ceil(M/bs), ceil(N/bs)), (..., ceil(M/bs), ceil(K/bs)), (..., ceil(K/bs), ceil(N/bs)),
    boolean or numbers, broadcasting over the batch."""
    if block_size not in BLOCK_SIZES:
        raise ValueError(f"block_size {block_size}: MLX supports {BLOCK_SIZES}")
    if mask_out is None and mask_lhs is None and mask_rhs is None:
        raise ValueError("no mask: MLX's block_masked_mm is a plain matmul then")
    if a.dtype != b.dtype:
        raise TypeError("a and b must share one dtype, as after MLX's type promotion")
    type_to_name(a.dtype)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"cannot multiply shapes {a.shape} and {b.shape}")
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    tiles = {"m": -(-M // block_size), "n": -(-N // block_size), "k": -(-K // block_size)}

    def prepare(mask, rows: str, cols: str, dtype):
        return broadcast_to(np.asarray(mask).astype(dtype), (*batch, tiles[rows], tiles[cols]))

    a, b = broadcast_to(a, (*batch, M, K)), broadcast_to(b, (*batch, K, N))
    out_mask = None
    if mask_out is not None:
        out_mask = prepare(mask_out, "m", "n", np.bool_ if np.asarray(mask_out).dtype == np.bool_ else a.dtype)
    lhs_mask = rhs_mask = None
    if mask_lhs is not None or mask_rhs is not None:
        lhs = np.asarray(True) if mask_lhs is None else np.asarray(mask_lhs)
        rhs = np.asarray(True) if mask_rhs is None else np.asarray(mask_rhs)
        dtype = np.bool_ if lhs.dtype == np.bool_ and rhs.dtype == np.bool_ else a.dtype
        lhs_mask, rhs_mask = prepare(lhs, "m", "k", dtype), prepare(rhs, "k", "n", dtype)

    transpose_a, lda, a = check_transpose(a, M == 1)
    transpose_b, ldb, b = check_transpose(b, N == 1)
    inputs = [a, b] + ([out_mask] if out_mask is not None else []) + \
             ([lhs_mask, rhs_mask] if lhs_mask is not None else [])
    if len(batch):
        batch_shape = list(batch)
        bstrides = [element_strides(x)[:-2] for x in inputs]
    else:
        batch_shape = [1]
        bstrides = [[0] for _ in inputs]
    out = np.zeros((*batch, M, N), dtype=a.dtype)
    batch_size = int(np.prod(batch, dtype=np.int64))
    names = f"outmask_{_mask_name(out_mask)}_opmask_{_mask_name(lhs_mask)}"
    has_out = out_mask is not None

    if min(M, N) == 1:
        b_is_matrix = N != 1
        mat, vec = (b, a) if b_is_matrix else (a, b)
        transposed = (not transpose_b) if b_is_matrix else transpose_a
        out_len = N if b_is_matrix else M
        cfg = gemv_config(transposed, out_len, block_size)
        mat_mask = (rhs_mask if b_is_matrix else lhs_mask) if lhs_mask is not None else None
        vec_mask = (lhs_mask if b_is_matrix else rhs_mask) if lhs_mask is not None else None
        mask_strides: list[int] = []
        mask_bstrides: list[int] = []
        buffers: dict[int, object] = {}
        if has_out:
            st = element_strides(out_mask)
            flat = out.shape[-2] == 1 if transposed else out.shape[-1] == 1
            mask_strides += [st[-1], st[-2]] if flat else [st[-2], st[-1]]
            mask_bstrides += bstrides[2]
            buffers[20] = buffer_view(out_mask)
        if mat_mask is not None:
            st = element_strides(mat_mask)
            first = (-2 if not b_is_matrix else -1) if transposed else (-2 if b_is_matrix else -1)
            mask_strides += [st[first], st[-3 - first]]
            mask_bstrides += bstrides[2 + has_out + (1 if b_is_matrix else 0)]
            buffers[21] = buffer_view(mat_mask)
            st = element_strides(vec_mask)
            flat = vec.shape[-2] == 1 if transposed else vec.shape[-1] == 1
            mask_strides += [st[-1], st[-2]] if flat else [st[-2], st[-1]]
            mask_bstrides += bstrides[2 + has_out + (0 if b_is_matrix else 1)]
            buffers[22] = buffer_view(vec_mask)
        a_stride, b_stride = bstrides[0], bstrides[1]
        buffers.update({0: buffer_view(mat), 1: buffer_view(vec), 3: out.reshape(-1), 4: _i32(K), 5: _i32(out_len),
                        6: _i32(ldb if b_is_matrix else lda), 9: _i32(len(batch_shape)),
                        10: np.array(batch_shape, np.int32),
                        11: np.array(a_stride if b_is_matrix else b_stride, np.int64),
                        12: np.array(b_stride if b_is_matrix else a_stride, np.int64),
                        23: np.array(mask_strides or [0], np.int32), 24: np.array(mask_bstrides or [0], np.int64)})
        name = (f"{'gemv_t' if transposed else 'gemv'}_{names}_{type_to_name(a.dtype)}_bm{cfg.bm}_bn{cfg.bn}"
                f"_sm{cfg.sm}_sn{cfg.sn}_tm{cfg.tm}_tn{cfg.tn}_nc{int(len(batch_shape) != 1)}")
        grid = (-(-out_len // cfg.outputs_per_threadgroup), 1, batch_size)
        return Plan([Launch(GEMV_SOURCE, name, buffers, (32, cfg.bn, cfg.bm), threadgroups=grid)], out)

    bm = bn = block_size
    bk, wm, wn = 16, 2, 2
    tn, tm = -(-N // bn), -(-M // bm)
    params = np.zeros((), dtype=GEMM_PARAMS)
    for field, value in (("M", M), ("N", N), ("K", K), ("lda", lda), ("ldb", ldb), ("ldd", N), ("tiles_n", tn),
                         ("tiles_m", tm), ("batch_stride_a", bstrides[0][-1]), ("batch_stride_b", bstrides[1][-1]),
                         ("batch_stride_d", M * N), ("swizzle_log", 0), ("gemm_k_iterations_aligned", K // bk),
                         ("batch_ndim", len(batch_shape))):
        params[field] = value
    buffers = {0: buffer_view(a), 1: buffer_view(b), 3: out.reshape(-1), 4: params,
               6: np.array(batch_shape, np.int32), 7: np.array([s for st in bstrides for s in st], np.int64)}
    mask_strides = []
    for index, mask in ((10, out_mask), (11, lhs_mask), (12, rhs_mask)):
        if mask is not None:
            mask_strides += element_strides(mask)[-1:-3:-1]
            buffers[index] = buffer_view(mask)
    buffers[13] = np.array(mask_strides, np.int32)
    code = ("t" if transpose_a else "n") + ("t" if transpose_b else "n")
    tname = type_to_name(a.dtype)
    name = (f"steel_gemm_block_{names}_{code}_{tname}_{tname}_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}"
            f"_MN_{'t' if M % bm == 0 and N % bn == 0 else 'n'}aligned_K_{'t' if K % bk == 0 else 'n'}aligned")
    return Plan([Launch(STEEL_SOURCE, name, buffers, (32, wn, wm), threadgroups=(tn, tm, batch_size))], out)
