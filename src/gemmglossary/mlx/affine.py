"""MLX's affine quantization, in numpy: how ``mx.quantize`` stores a weight matrix.

Along the last axis, every ``group_size`` consecutive weights (32, 64 or 128) share one
scale and one bias, and each weight becomes an unsigned ``bits``-bit integer q with

    w ≈ scale · q + bias,    q ∈ [0, 2**bits − 1].

The integers are packed into uint32 words least significant bits first: for 4 bits, word
j holds q[8j] in bits 0–3, q[8j+1] in bits 4–7, …; in general weight i occupies bits
[i·bits, (i+1)·bits) of the little-endian bit string of the row (which, for 3, 5 and 6 bits,
is MLX's 8 weights per 3, 5 or 6 bytes).

The scale and bias are chosen so that the group's extreme of larger magnitude is exact: the
range (max − min) is split into 2**bits − 1 steps (at least 1e-7); when |min| > |max| the step
is positive and the bias is the minimum, otherwise the step is negative and the bias is the
maximum; the step is then adjusted so that the extreme lands on an integer, and a group whose
extreme rounds to integer 0 keeps a bias of 0. Scales and biases are stored in the weights'
dtype. This restates ``affine_quantize`` and ``affine_dequantize`` of ``mlx/ops.cpp`` at the
pinned tag (:data:`.matmul.MLX_TAG`); the tests check it bit for bit against the installed
wheel of that release (``mx.quantize`` on MLX's CPU backend).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GROUP_SIZES = (32, 64, 128)
BITS = (2, 3, 4, 5, 6, 8)


@dataclass
class Quantized:
    """A quantized matrix as MLX stores it: ``wq`` (…, rows, cols · bits / 32) uint32 and one
    scale and bias per group, (…, rows, cols / group_size)."""

    wq: np.ndarray
    scales: np.ndarray
    biases: np.ndarray
    group_size: int
    bits: int

    @property
    def cols(self) -> int:
        return self.wq.shape[-1] * 32 // self.bits


def _check(group_size: int, bits: int) -> None:
    if group_size not in GROUP_SIZES:
        raise ValueError(f"group_size {group_size}: MLX's affine mode supports {GROUP_SIZES}")
    if bits not in BITS:
        raise ValueError(f"bits {bits}: MLX's affine mode supports {BITS}")


def pack(q: np.ndarray, bits: int) -> np.ndarray:
    """Integers in [0, 2**bits) along the last axis -> uint32 words, least significant bits first."""
    q = np.asarray(q)
    if q.shape[-1] * bits % 32:
        raise ValueError(f"{q.shape[-1]} values of {bits} bits do not fill whole 32-bit words")
    if 32 % bits == 0:  # whole values per word: value j of a word sits at bit j·bits
        per_word = 32 // bits
        fields = q.astype(np.uint32).reshape(*q.shape[:-1], -1, per_word)
        shifts = np.arange(0, 32, bits, dtype=np.uint32)
        return np.bitwise_or.reduce(fields << shifts, axis=-1).astype(np.uint32)
    # 3, 5, 6 bits: values straddle words; build the row's bit string, bit 0 of value 0 first
    bit_string = ((q.astype(np.uint64)[..., None] >> np.arange(bits, dtype=np.uint64)) & 1).reshape(*q.shape[:-1], -1, 32)
    return (bit_string << np.arange(32, dtype=np.uint64)).sum(-1).astype(np.uint32)


def unpack(wq: np.ndarray, bits: int) -> np.ndarray:
    """uint32 words -> the integers they hold (uint32), in order."""
    wq = np.asarray(wq, dtype=np.uint32)
    if 32 % bits == 0:
        shifts = np.arange(0, 32, bits, dtype=np.uint32)
        fields = (wq[..., None] >> shifts) & np.uint32(2**bits - 1)
        return fields.reshape(*wq.shape[:-1], -1)
    bit_string = ((wq.astype(np.uint64)[..., None] >> np.arange(32, dtype=np.uint64)) & 1).reshape(*wq.shape[:-1], -1, bits)
    return (bit_string << np.arange(bits, dtype=np.uint64)).sum(-1).astype(np.uint32)


def quantize(w: np.ndarray, group_size: int = 64, bits: int = 4) -> Quantized:
    """Quantize ``w`` (…, rows, cols) along its last axis, as ``mx.quantize(w, group_size, bits)``."""
    _check(group_size, bits)
    w = np.asarray(w)
    if w.shape[-1] % group_size:
        raise ValueError(f"the last axis ({w.shape[-1]}) is not a multiple of group_size {group_size}")
    groups = w.reshape(*w.shape[:-1], -1, group_size)
    top = groups.max(-1, keepdims=True).astype(np.float32)
    bottom = groups.min(-1, keepdims=True).astype(np.float32)
    steps = np.float32(2**bits - 1)
    scale = np.maximum((top - bottom) / steps, np.float32(1e-7))
    low_is_larger = np.abs(bottom) > np.abs(top)
    scale = np.where(low_is_larger, scale, -scale)
    edge = np.where(low_is_larger, bottom, top)
    q_edge = np.round(edge / scale)
    scale = np.where(q_edge != 0, edge / np.where(q_edge != 0, q_edge, 1), scale).astype(np.float32)
    bias = np.where(q_edge == 0, np.float32(0), edge).astype(np.float32)
    q = np.clip(np.round((groups.astype(np.float32) - bias) / scale), 0, steps).astype(np.uint32)
    return Quantized(pack(q.reshape(w.shape), bits), scale[..., 0].astype(w.dtype), bias[..., 0].astype(w.dtype),
                     group_size, bits)


def dequantize(qw: Quantized, dtype=np.float64) -> np.ndarray:
    """scale · q + bias for every weight, in ``dtype`` (float64 for references)."""
    q = unpack(qw.wq, qw.bits).astype(dtype)
    groups = q.reshape(*q.shape[:-1], -1, qw.group_size)
    w = groups * qw.scales.astype(dtype)[..., None] + qw.biases.astype(dtype)[..., None]
    return w.reshape(q.shape)
