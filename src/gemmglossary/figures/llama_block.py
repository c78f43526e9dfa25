"""One block of llama.cpp's q4_0 format, byte by byte: its half-precision scale, then 16
bytes whose low nibbles are weights 0-15 and whose high nibbles are weights 16-31.

The block is a seeded random row of 32 weights quantized by ``gemmglossary.llama.blocks``
(q4_0 as ggml-common.h defines it, tested by its round trip); the codes are read back from
the block's bytes, and the weights under them are ``blocks.dequantize``'s. The tests check
those values against llama.cpp's ``kernel_mul_mv_q4_0_f32`` run on the emulator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Figure, Int
from .svg import SMALL, Drawing, category


@dataclass
class Q4Block:
    w: np.ndarray            # the row, float32 (32 weights)
    data: np.ndarray         # its 18 bytes
    d: float                 # the scale, as stored (half)
    q: np.ndarray            # the 32 codes, weight order
    dequantized: np.ndarray  # d * (q - 8)


def q4_0_block(seed: int = 0) -> Q4Block:
    from ..llama import blocks

    f = blocks.fmt("q4_0")
    w = np.random.default_rng(seed).uniform(-1, 1, (1, f.weights)).astype(np.float32)
    data = blocks.quantize(w, "q4_0")[0]
    b = data.view(f.dtype)[0]
    q = np.concatenate([b["qs"] & 0x0F, b["qs"] >> 4]).astype(int)
    return Q4Block(w[0], data, float(b["d"]), q, blocks.dequantize(data, "q4_0").astype(np.float64))


def q4_0_block_figure(*, seed: Int(0, 2 ** 32 - 1) = 0, shown: Int(1, 16) = 8) -> Figure:
    """The block's bytes (the scale, then ``shown`` of the 16 code bytes) and the weights each nibble holds."""
    r = q4_0_block(seed)
    d = Drawing(680, 250)
    d.text(12, 20, f"llama.cpp's q4_0: 32 weights in {len(r.data)} bytes, the scale first", anchor="start",
           bold=True)
    d.text(12, 40, "byte j (j < 16): low nibble = weight j, high nibble = weight j + 16; a weight is d·(q − 8)",
           anchor="start", size=SMALL, cls="muted", mono=False)
    left, top, bw = 20, 62, 60
    d.rect(left, top, 2 * bw * 0.8, 30, "tint edge", title=f"d, the block's half-precision scale: {r.d:.5f}")
    d.text(left + bw * 0.8, top + 15, f"d = {r.d:.4f}", size=SMALL, mono=True)
    d.text(left + bw * 0.8, top - 6, "bytes 0-1", size=SMALL, cls="muted")
    x0 = left + 2 * bw * 0.8 + 10
    for j in range(shown):
        x = x0 + j * bw
        lo, hi = int(r.q[j]), int(r.q[j + 16])
        d.rect(x, top, bw / 2, 30, category(0) + " edge", title=f"byte {j + 2}, low nibble: weight {j}, q = {lo}")
        d.rect(x + bw / 2, top, bw / 2, 30, category(1) + " edge",
               title=f"byte {j + 2}, high nibble: weight {j + 16}, q = {hi}")
        d.text(x + bw / 4, top + 15, str(lo), size=SMALL, mono=True)
        d.text(x + 3 * bw / 4, top + 15, str(hi), size=SMALL, mono=True)
        d.text(x + bw / 2, top - 6, f"byte {j + 2}", size=SMALL, cls="muted")
        d.text(x + bw / 4, top + 46, f"w{j}", size=SMALL, bold=True)
        d.text(x + 3 * bw / 4, top + 46, f"w{j + 16}", size=SMALL, bold=True)
        d.text(x + bw / 4, top + 64, f"{r.dequantized[j]:+.2f}", size=SMALL, mono=True)
        d.text(x + 3 * bw / 4, top + 82, f"{r.dequantized[j + 16]:+.2f}", size=SMALL, mono=True)
    d.text(12, top + 116, f"codes q (0-15) in the boxes; under them d·(q − 8): the weights they stand for "
           f"(the row as drawn: {', '.join(f'{v:+.3f}' for v in r.w[:3])}, …)", anchor="start", size=SMALL)
    d.text(12, top + 136, "the value of largest magnitude has q = 0 (it sets d, sign included); "
           "MLX packs neighbours into one 32-bit word instead, with its scales in another array",
           anchor="start", size=SMALL, cls="muted")
    alt = (f"A q4_0 block of llama.cpp: 18 bytes, a half-precision scale d = {r.d:.4f} in bytes 0 and 1, then 16 "
           f"bytes of 4-bit codes. Byte j holds weight j in its low nibble and weight j + 16 in its high nibble. "
           f"The first {shown} code bytes hold "
           + "; ".join(f"weights {j} and {j + 16}: q = {int(r.q[j])} and {int(r.q[j + 16])}" for j in range(shown))
           + ". Each weight is d times (q minus 8), so they stand for "
           + ", ".join(f"w{j} = {r.dequantized[j]:+.3f}" for j in range(min(shown, 4))) + ", and so on.")
    title = "A block of llama.cpp's q4_0 format"
    return Figure(d.svg(title, alt), title, alt,
                  "Computed when the site was built: a seeded random row of 32 weights quantized to q4_0 by "
                  "`gemmglossary.llama.blocks` (from ggml-common.h's definition), the codes read back from the "
                  "block's bytes; the tests check the weights against llama.cpp's q4_0 mul_mv on the emulator.")
