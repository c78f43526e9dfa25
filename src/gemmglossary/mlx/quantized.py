"""Host side of MLX's affine quantized matmul: which kernel of ``quantized.h`` runs, and how.

``choose_kernel`` restates the routing of ``QuantizedMatmul::eval_gpu`` and the functions it
calls (``qmm_splitk``, ``qmm``, ``dispatch_qmv``, ``qmv``, ``use_qmv_wide``,
``get_qmv_batch_limit``, ``qmv_fast_k_alignment``) in ``mlx/backend/metal/quantized.cpp``
(:func:`rule_url` links each rule at the pinned tag). In words,
for ``x @ Wᵀ`` (``transpose=True``, W stored N × K, the layout of a linear layer) with M rows
of x:

* M at or above a device- and size-dependent batch limit (``vector_limit``): a matrix-matrix
  kernel, ``qmm_t``; without a batch MLX first tries to split K (``qmm_t_splitk`` and a sum),
  falling back to ``qmm_t`` when K does not split into whole 32-wide steps and whole groups;
  on NAX GPUs (M5 and later) ``qmm_t_nax`` when K is a multiple of 64.
* otherwise a matrix-vector kernel per row of x: ``qmv_quad`` for K of 64 or 128, ``qmv_wide``
  for 2 or more rows on M3 and later, else ``qmv_fast`` when N is a multiple of 8 and K of
  the kernel's block (512 values for 4 bits, 256 for 8), or the guarded ``qmv``.

For ``x @ W`` (``transpose=False``, W stored K × N): ``qmm_n`` from 4 rows, else ``qvm``, or
``qvm_split_k`` when K ≥ 1024.

``plan`` dispatches ``qmv_fast``, ``qmv``, ``qvm``, ``qmm_t`` and ``qmm_n`` as the functions
``qmv``, ``qvm`` and ``qmm`` do (buffers 0–2 the packed weights, scales and biases, 3 x, 4 the
output, then the sizes, then the batch shapes and strides only for a batch: MLX leaves
those buffers unbound otherwise). The other kernels are named by ``choose_kernel`` but not
planned here (see :data:`NOT_PLANNED`).

Read at the pinned tag (:data:`.matmul.MLX_TAG`), whose ``quantized.h`` the kernels compile.
Its ``qmm_t_splitk`` writes the partial sums in the input dtype (the second pass adds them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .affine import Quantized
from .launch import DEFAULT_DEVICE, Launch, Plan, type_string
from .matmul import Device, source_url
from .layout import broadcast_to, buffer_view, element_strides, is_row_contiguous

SOURCE = "mlx_quantized.metal"

#: The host file the rules restate, at the tag :mod:`.matmul` names (MLX_TAG).
HOST_PATH = "mlx/backend/metal/quantized.cpp"
#: Lines of :data:`HOST_PATH` at that tag that each rule follows.
LINES = {
    "batch_limit": (85, 145),       # get_qmv_batch_limit: vector_limit
    "fast_alignment": (147, 149),   # qmv_fast_k_alignment: qmv_fast_block
    "qmv_quad": (403, 459),
    "qmv": (461, 535),              # qmv_fast or qmv, the grid and buffers
    "qmv_fast_gate": (484, 484),
    "qmv_wide_gate": (537, 540),    # use_qmv_wide: affine from generation 15
    "qvm": (748, 812),
    "qmm_nax_gate": (1038, 1041),
    "qmm_splitk": (1119, 1154),     # the split and its fallback to qmm
    "dispatch_qmv": (1738, 1779),   # qmv_quad, qmv_wide, qmv
    "route": (1781, 1874),          # QuantizedMatmul::eval_gpu
    "fold_rows": (1798, 1800),      # a 2-D W and a row-contiguous x: every row of x is one of M
    "vector_limit": (1803, 1803),   # the rows from which a matrix kernel runs (4 for x @ W)
    "qvm_split": (1852, 1872),      # x @ W: qvm below K = 1024, else qvm_split_k
}


# Thresholds of the routing, each used by choose_kernel (and the grid of plan).
QMV_ROWS = 8             # qmv()'s bn: outputs per threadgroup; qmv_fast needs N a multiple of it
QMV_QUAD_K = (64, 128)   # dispatch_qmv: qmv_quad for these K (and a power-of-two bit width)
QMV_WIDE_MIN_GENERATION = 15  # use_qmv_wide: affine qmv_wide from this generation
QVM_MATRIX_ROWS = 4      # x @ W: qmm_n from this many rows of x (eval_gpu's vector_limit)
QVM_SPLIT_K = 1024       # x @ W: qvm_split_k from this K
QMM_NAX_K = 64           # qmm: qmm_nax when K is a multiple of this


def rule_url(rule: str) -> str:
    """Permalink to the lines of quantized.cpp a named rule follows."""
    if rule not in LINES:
        raise ValueError(f"rule must be one of {', '.join(LINES)}, got {rule!r}")
    return source_url(*LINES[rule], path=HOST_PATH)
#: Kernels ``choose_kernel`` can name that ``plan`` does not dispatch, and why.
NOT_PLANNED = {
    "qmv_quad": "one quadgroup per output row; not among the kernels planned here",
    "qmv_wide": "several vectors per weight stream (M3 and later); not among the kernels planned here",
    "qvm_split_k": "needs MLX's strided sum reduction as its second pass (reduce.h)",
    "qmm_t_splitk": "needs MLX's strided sum reduction as its second pass (reduce.h)",
    "qmm_t_nax": "NAX (M5) kernels are outside the emulator's scope",
}


def pack_factor(bits: int, word_bits: int = 32) -> int:
    """Weights per pack: 8 for 3 and 5 bits (3 or 5 bytes), 4 for 6 bits (3 bytes), else word / bits."""
    return 8 if bits in (3, 5) else 4 if bits == 6 else word_bits // bits


def qmv_fast_block(bits: int) -> int:
    """K values one simdgroup step of ``qmv_fast`` covers (32 lanes × its values per lane)."""
    return pack_factor(bits) * (1 if bits == 2 else 2) * 32


def vector_limit(device: Device, K: int, N: int) -> int:
    """From how many rows of x a transposed-weight product uses a matrix-matrix kernel
    (``get_qmv_batch_limit``): per generation and size class, by whether K and N fit in
    2048 or 4096."""
    gen, size = device.generation, device.letter
    small, medium = K <= 2048 and N <= 2048, K <= 4096 and N <= 4096
    pick = lambda s, m, rest: s if small else m if medium else rest  # noqa: E731
    if gen >= 17 and size != "d":
        return pick(33, 25, 13)
    if gen >= 15 and size != "d":
        return pick(13, 15, 13)
    if size == "d":
        return pick(32, 18, 12)
    return pick(14, 10, 6) if gen >= 13 else pick(18, 12, 10)


def _qmm_split(M: int, N: int, K: int, group_size: int) -> int:
    """How many K partitions ``qmm_splitk`` uses (1: it falls back to ``qmm``). It aims at about
    512 threadgroups, each partition whole 32-wide steps and whole groups, K divided evenly."""
    tiles = -(-N // 32) * -(-M // 32)
    k_align = max(group_size, 32)
    split = min(max(1, 512 // tiles), K // k_align)
    while split > 1 and K % (split * k_align):
        split -= 1
    return max(split, 1)


@dataclass(frozen=True)
class Problem:
    """The sizes MLX's routing looks at."""

    M: int  # rows of x (all of x's rows when W has no batch and x is row-contiguous)
    N: int
    K: int
    batch: int  # number of (x, W) pairs


def choose_kernel(problem: Problem, *, transpose: bool, bits: int, group_size: int,
                  device: Device = DEFAULT_DEVICE) -> str:
    """The affine kernel MLX runs: qmv_quad, qmv_wide, qmv_fast, qmv, qvm, qvm_split_k,
    qmm_t, qmm_t_splitk, qmm_t_nax or qmm_n. (With MLX_ENABLE_TF32=0, not modelled, float32
    would skip the NAX kernel.)"""
    M, N, K = problem.M, problem.N, problem.K
    limit = vector_limit(device, K, N) if transpose else QVM_MATRIX_ROWS
    if M >= limit:
        if transpose and problem.batch == 1 and _qmm_split(M, N, K, group_size) > 1:
            return "qmm_t_splitk"
        # MLX_ENABLE_TF32 defaults to on, so float32 takes the NAX kernel too
        if transpose:
            return "qmm_t_nax" if device.nax_available and K % QMM_NAX_K == 0 else "qmm_t"
        return "qmm_n"
    if transpose:
        if K in QMV_QUAD_K and bits & (bits - 1) == 0:
            return "qmv_quad"
        if M >= 2 and device.generation >= QMV_WIDE_MIN_GENERATION:
            return "qmv_wide"
        return "qmv_fast" if N % QMV_ROWS == 0 and K % qmv_fast_block(bits) == 0 else "qmv"
    return "qvm" if K < QVM_SPLIT_K else "qvm_split_k"


def _row_contiguous_matrix(x: np.ndarray) -> np.ndarray:
    """MLX's ensure_row_contiguous_matrix: the last two dims must be C-ordered; else a copy."""
    st = element_strides(x)
    ok = st[-1] == 1 if x.ndim < 2 else (st[-2] == x.shape[-1] and st[-1] == 1)
    return x if ok else np.ascontiguousarray(x)


def _i32(x):
    return np.array(x, dtype=np.int32)


def plan(x: np.ndarray, w: Quantized, *, transpose: bool = True, device: Device = DEFAULT_DEVICE) -> Plan:
    """Plan ``mx.quantized_matmul(x, wq, scales, biases, transpose, group_size, bits)``.

    ``x`` is (…, M, K); ``w`` holds W as N × K (transpose) or K × N, quantized along its last
    axis, with the same batch dims as x when it has any (they broadcast, as MLX's op does).
    """
    dtype = x.dtype
    tname = type_string(dtype)
    if w.scales.dtype != dtype or w.biases.dtype != dtype:
        raise TypeError(f"scales and biases must be {dtype} like x (MLX casts them to x's dtype)")
    rows, cols = w.wq.shape[-2], w.cols
    K, N = (cols, rows) if transpose else (rows, cols)
    if x.shape[-1] != K:
        raise ValueError(f"x has {x.shape[-1]} columns but W has K = {K}")
    wq, scales, biases = w.wq, w.scales, w.biases
    if x.ndim > 2 and wq.ndim > 2:
        batch = np.broadcast_shapes(x.shape[:-2], wq.shape[:-2])
        x = broadcast_to(x, (*batch, *x.shape[-2:]))
        wq, scales, biases = (broadcast_to(a, (*batch, *a.shape[-2:])) for a in (wq, scales, biases))
    elif wq.ndim > 2:
        raise ValueError("W has batch dims but x does not")
    x, wq, scales, biases = (_row_contiguous_matrix(a) for a in (x, wq, scales, biases))
    non_batched = wq.ndim == 2 and is_row_contiguous(x)
    M = x.size // K if non_batched else x.shape[-2]
    out = np.zeros((*x.shape[:-1], N), dtype=dtype)
    B = out.size // (M * N)
    kernel = choose_kernel(Problem(M, N, K, B), transpose=transpose, bits=w.bits, group_size=w.group_size,
                           device=device)
    if kernel in NOT_PLANNED:
        raise NotImplementedError(f"MLX runs {kernel} for this product: {NOT_PLANNED[kernel]}")

    batched = B > 1
    sizes = [_i32(K), _i32(N)] + ([_i32(M)] if kernel.startswith("qmm") else [])
    buffers: dict[int, object] = {0: buffer_view(wq), 1: buffer_view(scales), 2: buffer_view(biases),
                                  3: buffer_view(x), 4: out.reshape(-1)}
    for i, size in enumerate(sizes, start=5):
        buffers[i] = size
    if batched:
        first = 5 + len(sizes)
        for i, value in enumerate([
                _i32(x.ndim - 2), np.array(x.shape, np.int32), np.array(element_strides(x), np.int64),
                _i32(wq.ndim - 2), np.array(wq.shape, np.int32), np.array(element_strides(wq), np.int64),
                np.array(element_strides(scales), np.int64), np.array(element_strides(biases), np.int64)],
                start=first):
            buffers[i] = value
    name = f"affine_{kernel}_{tname}_gs_{w.group_size}_b_{w.bits}"
    if kernel == "qmm_t":
        name += f"_alN_{'true' if N % 32 == 0 else 'false'}"
    name += f"_batch_{int(batched)}"
    if kernel in ("qmv_fast", "qmv"):
        threads, grid = (32, 2, 1), (M, -(-N // QMV_ROWS), B)
    elif kernel == "qvm":
        threads, grid = (32, 2, 1), (M, -(-N // (min(w.group_size, 32) * 2)), B)
    else:  # qmm_t, qmm_n: 32 × 32 output tiles, 2 × 2 simdgroups
        threads, grid = (32, 2, 2), (-(-N // 32), -(-M // 32), B)
    return Plan([Launch(SOURCE, name, buffers, threads, threadgroups=grid)], out)
