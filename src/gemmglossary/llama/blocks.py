"""llama.cpp's block formats q4_0, q8_0 and q4_K in numpy, from their definitions in ggml-common.h.

A weight row of K values is K / QK blocks laid end to end; a block holds its own scale, so
the scale lives *inside* the weight stream (MLX's affine format keeps scales and biases in
arrays of their own). Each format below is a numpy structured dtype whose fields are the C
struct's fields in order (``ggml_half`` is IEEE half, stored little-endian):

- ``block_q4_0``: ``d`` (half), ``qs[QK4_0/2]``: 32 weights in 18 bytes. Weight ``j < 16`` is
  the low nibble of ``qs[j]``, weight ``j + 16`` its high nibble; the value is ``(q - 8) * d``.
- ``block_q8_0``: ``d`` (half), ``qs[QK8_0]`` (int8): 32 weights in 34 bytes, ``q * d``.
- ``block_q4_K``: a super-block of ``QK_K`` = 256 weights in 144 bytes: ``d`` and ``dmin``
  (half), ``scales[K_SCALE_SIZE]`` (eight 6-bit scales and eight 6-bit mins, packed as
  ``get_scale_min_k4`` unpacks them), ``qs[QK_K/2]``. Sub-block ``s`` of 32 weights takes the
  low nibbles (``s`` even) or high nibbles (``s`` odd) of ``qs[32*(s//2) : 32*(s//2)+32]``;
  its value is ``d * sc[s] * q - dmin * m[s]``.

The block sizes and struct sizes are read from ggml-common.h (:func:`.source.common_constant`
and tests/llama/test_blocks.py against its ``static_assert``s). The quantizers are ours:
they make valid blocks for the tests (the round trip), not llama.cpp's optimized choice of
scales; what the kernels must agree with is the dequantization.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from .source import common_constant


@dataclass(frozen=True)
class BlockFormat:
    name: str            # ggml_type_name: "q4_0", ...
    weights: int         # weights per block (QK)
    dtype: np.dtype      # one block, as the C struct

    @property
    def bytes_per_block(self) -> int:
        return self.dtype.itemsize

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.bytes_per_block / self.weights


@cache
def formats() -> dict[str, BlockFormat]:
    qk4, qk8, qkk, ks = (common_constant(n) for n in ("QK4_0", "QK8_0", "QK_K", "K_SCALE_SIZE"))
    return {
        "q4_0": BlockFormat("q4_0", qk4, np.dtype([("d", "<f2"), ("qs", "u1", (qk4 // 2,))])),
        "q8_0": BlockFormat("q8_0", qk8, np.dtype([("d", "<f2"), ("qs", "i1", (qk8,))])),
        "q4_K": BlockFormat("q4_K", qkk, np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (ks,)),
                                                   ("qs", "u1", (qkk // 2,))])),
    }


def fmt(name: str) -> BlockFormat:
    try:
        return formats()[name]
    except KeyError:
        raise ValueError(f"block format {name!r}: have {', '.join(formats())}") from None


def as_blocks(data: np.ndarray, name: str) -> np.ndarray:
    """Bytes (uint8, last axis the row's bytes) viewed as blocks of format ``name``."""
    return np.ascontiguousarray(data).view(fmt(name).dtype)


# ------------------------------------------------------------------------------- dequantize

def _q4_0(b: np.ndarray) -> np.ndarray:
    q = np.concatenate([b["qs"] & 0x0F, b["qs"] >> 4], axis=-1).astype(np.float32)
    return (q - 8) * b["d"].astype(np.float32)[..., None]


def _q8_0(b: np.ndarray) -> np.ndarray:
    return b["qs"].astype(np.float32) * b["d"].astype(np.float32)[..., None]


def scale_min_k4(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eight 6-bit scales and mins of q4_K's 12 scale bytes (``get_scale_min_k4``'s packing:
    sub-blocks 0-3 in the low 6 bits of bytes 0-3 and 4-7; sub-blocks 4-7 take their low 4
    bits from bytes 8-11 and their top 2 bits from the spare top bits of bytes 0-7)."""
    s = scales.astype(np.uint8)
    sc = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 0xF) | ((s[..., 0:4] >> 6) << 4)], axis=-1)
    mn = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], axis=-1)
    return sc, mn


def pack_scale_min_k4(sc: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """The inverse of :func:`scale_min_k4`: eight 6-bit scales and mins into 12 bytes."""
    sc, mn = sc.astype(np.uint8), mn.astype(np.uint8)
    if (sc > 63).any() or (mn > 63).any():
        raise ValueError("q4_K scales and mins are 6-bit")
    out = np.empty(sc.shape[:-1] + (12,), np.uint8)
    out[..., 0:4] = sc[..., 0:4] | ((sc[..., 4:8] >> 4) << 6)
    out[..., 4:8] = mn[..., 0:4] | ((mn[..., 4:8] >> 4) << 6)
    out[..., 8:12] = (sc[..., 4:8] & 0xF) | ((mn[..., 4:8] & 0xF) << 4)
    return out


def _q4_K(b: np.ndarray) -> np.ndarray:
    sc, mn = scale_min_k4(b["scales"])
    qs = b["qs"].reshape(b.shape + (4, 32))
    q = np.stack([qs & 0x0F, qs >> 4], axis=-2).reshape(b.shape + (8, 32)).astype(np.float32)
    d = b["d"].astype(np.float32)[..., None, None]
    dmin = b["dmin"].astype(np.float32)[..., None, None]
    w = d * sc[..., None].astype(np.float32) * q - dmin * mn[..., None].astype(np.float32)
    return w.reshape(b.shape + (256,))


_DEQUANT = {"q4_0": _q4_0, "q8_0": _q8_0, "q4_K": _q4_K}


def dequantize(data: np.ndarray, name: str) -> np.ndarray:
    """float32 weights of rows stored as blocks of ``name`` (uint8 bytes, or blocks)."""
    b = data if data.dtype == fmt(name).dtype else as_blocks(data, name)
    w = _DEQUANT[name](b)
    return w.reshape(b.shape[:-1] + (b.shape[-1] * fmt(name).weights,))


# --------------------------------------------------------------------------------- quantize

def _blocks_of(x: np.ndarray, name: str) -> np.ndarray:
    qk = fmt(name).weights
    if x.shape[-1] % qk:
        raise ValueError(f"{name}: a row of {x.shape[-1]} values is not a whole number of {qk}-weight blocks")
    return x.astype(np.float32).reshape(x.shape[:-1] + (x.shape[-1] // qk, qk))


def _half(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float16)


def quantize(x: np.ndarray, name: str) -> np.ndarray:
    """Rows of ``x`` (last axis K) as uint8 bytes of ``name`` blocks (K / QK blocks a row)."""
    xb = _blocks_of(x, name)
    out = np.zeros(xb.shape[:-1], fmt(name).dtype)
    if name == "q4_0":
        # the value of largest magnitude maps to -8 (so its sign picks the sign of d)
        idx = np.abs(xb).argmax(-1)[..., None]
        d = _half(np.take_along_axis(xb, idx, -1)[..., 0] / -8 + 0.0)  # + 0.0: an all-zero block has d = +0
        inv = np.divide(1, d.astype(np.float32), out=np.zeros(d.shape, np.float32), where=d != 0)
        q = np.clip(np.floor(xb * inv[..., None] + 8.5), 0, 15).astype(np.uint8)
        out["d"], out["qs"] = d, q[..., :16] | (q[..., 16:] << 4)
    elif name == "q8_0":
        d = _half(np.abs(xb).max(-1) / 127)
        inv = np.divide(1, d.astype(np.float32), out=np.zeros(d.shape, np.float32), where=d != 0)
        out["d"], out["qs"] = d, np.clip(np.rint(xb * inv[..., None]), -127, 127).astype(np.int8)
    else:
        sub = xb.reshape(xb.shape[:-1] + (8, 32))
        lo = np.minimum(sub.min(-1), 0)                      # the min is subtracted: m >= 0
        scale = (sub.max(-1) - lo) / 15
        d = _half(scale.max(-1) / 63)
        dmin = _half(-lo.min(-1) / 63)
        d32, dmin32 = d.astype(np.float32), dmin.astype(np.float32)
        sc = np.clip(np.rint(np.divide(scale, d32[..., None], out=np.zeros_like(scale), where=d32[..., None] != 0)),
                     0, 63).astype(np.uint8)
        mn = np.clip(np.rint(np.divide(-lo, dmin32[..., None], out=np.zeros_like(lo),
                                       where=dmin32[..., None] != 0)), 0, 63).astype(np.uint8)
        step = d32[..., None] * sc
        q = np.divide(sub + (dmin32[..., None] * mn)[..., None], step[..., None],
                      out=np.zeros_like(sub), where=step[..., None] != 0)
        q = np.clip(np.rint(q), 0, 15).astype(np.uint8).reshape(xb.shape[:-1] + (4, 2, 32))
        out["d"], out["dmin"], out["scales"] = d, dmin, pack_scale_min_k4(sc, mn)
        out["qs"] = (q[..., 0, :] | (q[..., 1, :] << 4)).reshape(xb.shape[:-1] + (128,))
    return out.view(np.uint8).reshape(x.shape[:-1] + (-1,))


def random_blocks(rng: np.random.Generator, rows: int, k: int, name: str) -> np.ndarray:
    """Rows of random valid blocks (every code, scale and min drawn, not quantized from data):
    the kernels are checked on every bit pattern of the quants, not only those a quantizer makes."""
    f = fmt(name)
    b = np.zeros((rows, k // f.weights), f.dtype)
    b["d"] = rng.uniform(-0.05, 0.05, b.shape).astype(np.float16) if name != "q4_K" else \
        rng.uniform(0.001, 0.01, b.shape).astype(np.float16)
    if name == "q4_K":
        b["dmin"] = rng.uniform(0.001, 0.01, b.shape).astype(np.float16)
        b["scales"] = rng.integers(0, 256, b.shape + (f.dtype["scales"].shape[0],), dtype=np.uint8)
    info = np.iinfo(f.dtype["qs"].base)
    b["qs"] = rng.integers(info.min, info.max + 1, b.shape + f.dtype["qs"].shape, dtype=f.dtype["qs"].base)
    return b.view(np.uint8).reshape(rows, -1)
