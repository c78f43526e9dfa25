"""Host side of MLX's decode attention: ``sdpa_vector`` and its two-pass variant.

Restates, for queries of at most 8 tokens, ``ScaledDotProductAttention::eval_gpu`` (its
vector branch: which operands are copied, when the two-pass kernel is chosen),
``sdpa_vector``, ``sdpa_vector_2pass`` and the checks of ``use_fallback`` in
``mlx/backend/metal/scaled_dot_product_attention.cpp``, and how
``mx.fast.scaled_dot_product_attention`` prepares the mask in ``mlx/fast.cpp``: an array
mask is broadcast to (B, n_q_heads, L, N), a non-boolean one cast to the query dtype. Read at
the pinned tag (:data:`.matmul.MLX_TAG`), whose ``sdpa_vector.h`` the kernels compile; the
``MLX_SDPA_BLOCKS`` override of the two-pass block count is not modelled.

The kernels are MLX's ``sdpa_vector.h``, instantiated in ``kernels/mlx_sdpa_vector.metal``.
"""

from __future__ import annotations

import numpy as np

from .launch import DEFAULT_DEVICE, Launch, Plan, type_string
from .matmul import Device
from .layout import broadcast_to, buffer_view, element_strides, is_row_contiguous

SOURCE = "mlx_sdpa_vector.metal"
#: (query head dim, value head dim) pairs of the vector kernels (``use_fallback``; MLX
#: instantiates these).
HEAD_DIMS = ((64, 64), (96, 96), (128, 128), (192, 128), (256, 256))
#: The longest query (in tokens) that takes the vector kernels.
MAX_QUERY_LENGTH = 8
#: Function constant indices of sdpa_vector.h.
HAS_MASK, QUERY_TRANSPOSED, DO_CAUSAL, BOOL_MASK, FLOAT_MASK, HAS_SINKS, BLOCKS = 20, 21, 22, 23, 24, 25, 26


def _i32(x):
    return np.array(x, dtype=np.int32)


def _u64(x):
    return np.array(x, dtype=np.uint64)


def check_vector_kernel(q_shape, k_shape, v_shape) -> None:
    """Raise ValueError, with MLX's reason, when MLX would not run a vector kernel."""
    B, n_q_heads, L, D = q_shape
    n_kv_heads, N, V = k_shape[1], k_shape[2], v_shape[3]
    if L > MAX_QUERY_LENGTH:
        raise ValueError(f"query length {L} > {MAX_QUERY_LENGTH}: MLX uses the full attention kernel")
    if (D, V) not in HEAD_DIMS:
        raise ValueError(f"head dims ({D}, {V}): the vector kernels support {HEAD_DIMS}")
    if L > N:
        raise ValueError(f"query length {L} is longer than the key sequence {N}")
    if n_q_heads % n_kv_heads:
        raise ValueError(f"{n_q_heads} query heads are not a multiple of {n_kv_heads} key/value heads")
    if L * (n_q_heads // n_kv_heads) > 32:
        raise ValueError("query length times the GQA factor is more than 32")


def _query_needs_copy(q: np.ndarray) -> bool:
    """Row-contiguous queries are used as they are; with a batch or head dim of 1 the other
    one may be swapped with the sequence dim (the kernel's ``query_transposed`` layout)."""
    if is_row_contiguous(q):
        return False
    st, sh = element_strides(q), q.shape
    if sh[0] == 1 or sh[1] == 1:
        b = 1 if sh[0] == 1 else 0
        return not (st[3] == 1 and st[2] == sh[3] * sh[b] and st[b] == sh[3])
    return True


def _kv_needs_copy(x: np.ndarray) -> bool:
    """Keys and values need a unit stride along the head dim and batch and heads that fold
    into one stride (any sequence stride is fine: a slice of a longer cache is not copied)."""
    st, sh = element_strides(x), x.shape
    if st[-1] != 1:
        return True
    if sh[0] == 1 or sh[1] == 1:
        return False
    return st[0] != st[1] * sh[1]


def _mask_needs_copy(m: np.ndarray, q_shape) -> bool:
    st, sh = element_strides(m), m.shape
    return not (is_row_contiguous(m) or q_shape[0] == 1 or q_shape[1] == 1 or st[0] == st[1] * sh[1])


def blocks_for(device: Device, N: int, n_simds: int) -> int:
    """How many key blocks the two-pass kernel splits the sequence into."""
    size = device.letter
    if size == "s":
        if N > 1024 and n_simds > 4:
            return 128 if N <= 8192 else 256 if N <= 32768 else 512 if N <= 65536 else 1024
        return 64
    if size == "d":
        if n_simds <= 2 and N > 8192:
            return 256
        if n_simds >= 6 and N >= 16384:
            return 512 if N < 65536 else 1024
        return 128
    return 64 if n_simds >= 4 else 32


def uses_two_pass(device: Device, n_q_heads: int, n_kv_heads: int, N: int) -> bool:
    """Large devices split sequences of 1024 keys or more; any device splits GQA at 4096."""
    return (device.letter in "ds" and N >= 1024) or (n_kv_heads < n_q_heads and N >= 4096)


def _strides(x: np.ndarray) -> tuple[int, int]:
    """(head stride, sequence stride) as the kernel reads them."""
    st = element_strides(x)
    return (st[0] if x.shape[1] == 1 else st[1]), st[2]


def plan(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: float, mask=None, sinks=None,
         device: Device = DEFAULT_DEVICE) -> Plan:
    """Plan ``mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=mask, sinks=sinks)``
    for q (B, n_q_heads, L ≤ 8, D), k (B, n_kv_heads, N, D), v (B, n_kv_heads, N, V).

    ``mask`` is None, ``"causal"``, a boolean array (True keeps a key) or an additive array,
    broadcastable to (B, n_q_heads, L, N). ``sinks`` is one logit per query head.
    """
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    tname = type_string(q.dtype)
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k and v must be rank 4 (batch, heads, sequence, head dim)")
    check_vector_kernel(q.shape, k.shape, v.shape)
    B, n_q_heads, L, D = q.shape
    n_kv_heads, N, V = k.shape[1], k.shape[2], v.shape[3]

    do_causal = isinstance(mask, str) and mask == "causal" and L > 1
    array_mask = mask if (mask is not None and not isinstance(mask, str)) else None
    if isinstance(mask, str) and mask != "causal":
        raise ValueError(f"mask {mask!r}: use None, 'causal' or an array")

    q = np.ascontiguousarray(q) if _query_needs_copy(q) else q
    k = np.ascontiguousarray(k) if _kv_needs_copy(k) else k
    v = np.ascontiguousarray(v) if _kv_needs_copy(v) else v
    if array_mask is not None:
        array_mask = np.asarray(array_mask)
        if array_mask.dtype != np.bool_:
            array_mask = array_mask.astype(q.dtype)
        array_mask = broadcast_to(array_mask, (B, n_q_heads, L, N))
        if _mask_needs_copy(array_mask, q.shape):
            array_mask = np.ascontiguousarray(array_mask)
    if sinks is not None:
        sinks = np.ascontiguousarray(np.asarray(sinks).astype(q.dtype))
        if sinks.shape != (n_q_heads,):
            raise ValueError(f"sinks must hold one value per query head ({n_q_heads}), got shape {sinks.shape}")

    out = np.zeros((B, n_q_heads, L, V), dtype=q.dtype)
    gqa_factor = n_q_heads // n_kv_heads
    k_head, k_seq = _strides(k)
    v_head, v_seq = _strides(v)
    has_mask = array_mask is not None
    bool_mask = has_mask and array_mask.dtype == np.bool_
    constants = {HAS_MASK: has_mask, QUERY_TRANSPOSED: not is_row_contiguous(q), DO_CAUSAL: do_causal,
                 BOOL_MASK: bool_mask, FLOAT_MASK: has_mask and not bool_mask, HAS_SINKS: sinks is not None}

    def mask_buffers(first: int) -> dict[int, object]:
        if not has_mask:
            return {}
        st, sh = element_strides(array_mask), array_mask.shape
        head = st[1] if sh[1] > 1 else (st[0] if sh[0] > 1 else 0)
        return {first + (0 if bool_mask else 1): buffer_view(array_mask),
                first + 2: _i32(st[3] if sh[3] > 1 else 0), first + 3: _i32(st[2] if sh[2] > 1 else 0),
                first + 4: _i32(head)}

    common = {0: buffer_view(q), 1: buffer_view(k), 2: buffer_view(v)}
    if not uses_two_pass(device, n_q_heads, n_kv_heads, N):
        buffers = {**common, 3: out.reshape(-1), 4: _i32(gqa_factor), 5: _i32(N), 6: _u64(k_head),
                   7: _u64(k_seq), 8: _u64(v_head), 9: _u64(v_seq), 10: np.array(scale, np.float32),
                   **mask_buffers(11)}
        if sinks is not None:
            buffers[16], buffers[17] = sinks, _i32(n_q_heads)
        return Plan([Launch(SOURCE, f"sdpa_vector_{tname}_{D}_{V}", buffers, (1024, 1, 1),
                            threadgroups=(B * n_q_heads, L, 1), function_constants=constants)], out)

    blocks = blocks_for(device, N, gqa_factor * L)
    partials = np.zeros((B, n_q_heads, L, blocks, V), dtype=q.dtype)
    sums = np.zeros((B, n_q_heads, L, blocks), dtype=np.float32)
    maxs = np.zeros((B, n_q_heads, L, blocks), dtype=np.float32)
    buffers = {**common, 3: partials.reshape(-1), 4: sums.reshape(-1), 5: maxs.reshape(-1), 7: _i32(N),
               8: _u64(k_head), 9: _u64(k_seq), 10: _u64(v_head), 11: _u64(v_seq), 12: np.array(scale, np.float32),
               **mask_buffers(13)}
    if sinks is not None:
        buffers[18] = sinks
    first = Launch(SOURCE, f"sdpa_vector_2pass_1_{tname}_{D}_{V}", buffers,
                   (32, gqa_factor, L), threadgroups=(n_kv_heads, B, blocks),
                   function_constants={**constants, BLOCKS: blocks})
    second = Launch(SOURCE, f"sdpa_vector_2pass_2_{tname}_{V}",
                    {0: partials.reshape(-1), 1: sums.reshape(-1), 2: maxs.reshape(-1), 3: out.reshape(-1),
                     4: _i32(blocks)}, (1024, 1, 1), threadgroups=(B * n_q_heads, L, 1))
    return Plan([first, second], out)
