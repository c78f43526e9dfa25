"""One row in MLX's affine quantized format: the fields of its first packed word and its
groups with their scales and biases.

The row (seeded uniform weights in [-1, 1]) is quantized by ``gemmglossary.mlx.affine``,
the restatement of ``mx.quantize`` that the tests check bit for bit against the pinned
wheel; the fields are read back from the packed word with ``affine.unpack``. The tests
also check the figure's numbers against ``kernels/qmv4.metal`` on the emulator: a product
with ``x`` the unit vector of weight ``j`` returns exactly ``scale * q_j + bias``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Figure, FigureError, Int
from .svg import SMALL, Drawing, category


@dataclass
class QuantizedRow:
    w: np.ndarray          # the row, float32
    word: int              # its first packed uint32 word
    q: np.ndarray          # the integers of that word's fields, lowest bits first
    scales: np.ndarray     # one per group
    biases: np.ndarray
    dequantized: np.ndarray  # scale * q + bias of every weight (float64)
    bits: int
    group_size: int


def quantized_row(bits: int = 4, group_size: int = 64, groups: int = 3, seed: int = 0) -> QuantizedRow:
    from ..mlx import affine

    if bits not in affine.BITS or 32 % bits:
        raise FigureError(f"bits= must be one of {', '.join(str(b) for b in affine.BITS if 32 % b == 0)} "
                          f"(a whole number of fields per word); got {bits}")
    if group_size not in affine.GROUP_SIZES:
        raise FigureError(f"group_size= must be one of {', '.join(map(str, affine.GROUP_SIZES))}; got {group_size}")
    if not 1 <= groups <= 8:
        raise FigureError(f"groups= must be 1 to 8, got {groups}")
    w = np.random.default_rng(seed).uniform(-1, 1, (1, groups * group_size)).astype(np.float32)
    qw = affine.quantize(w, group_size, bits)
    word = int(qw.wq[0, 0])
    q = affine.unpack(qw.wq[:, :1], bits)[0]
    return QuantizedRow(w[0], word, q, qw.scales[0].astype(np.float64), qw.biases[0].astype(np.float64),
                        affine.dequantize(qw)[0], bits, group_size)


def quantized_word(*, bits: Int(1, 8) = 4, group_size: Int(1, 1024) = 64, groups: Int(1, 8) = 3,
                   seed: Int(0, 2 ** 32 - 1) = 0) -> Figure:
    """The first word's bit fields and the weights they give; the row's groups."""
    r = quantized_row(bits, group_size, groups, seed)
    fields = 32 // bits
    d = Drawing(680, 330)
    d.text(12, 20, f"MLX's affine format, {bits} bits, groups of {group_size}: the first word of a row",
           anchor="start", bold=True)
    d.text(12, 42, f"word 0 = 0x{r.word:08x}, bit 31 at the left; weight j of the word sits in bits {bits}·j … {bits}·j + {bits - 1}",
           anchor="start", size=SMALL, cls="muted", mono=False)

    # the 32 bits, most significant at the left as a number is written; fields labelled
    left, top, bw = 40, 66, 18.75
    for bit in range(32):
        x = left + (31 - bit) * bw
        j = bit // bits
        d.rect(x, top + 18, bw, 24, category(j) + (" strong" if (r.word >> bit) & 1 else "") + " edge",
               title=f"bit {bit} = {(r.word >> bit) & 1}, field of weight {j}")
        d.text(x + bw / 2, top + 30, str((r.word >> bit) & 1), size=SMALL, mono=True)
        if bit % bits == 0 or bit == 31:
            d.text(x + bw / 2, top + 8, str(bit), size=SMALL, cls="muted")
    for j in range(fields):
        x0 = left + (31 - (j + 1) * bits + 1) * bw
        wdt = bits * bw
        d.line(x0 + 2, top + 50, x0 + wdt - 2, top + 50, category(j) + " thick")
        d.text(x0 + wdt / 2, top + 64, f"w{j}", size=SMALL, bold=True)
        d.text(x0 + wdt / 2, top + 82, f"q={int(r.q[j])}", size=SMALL, mono=True)
    s, b = r.scales[0], r.biases[0]
    for j in range(fields):
        x0 = left + (32 - (j + 1) * bits) * bw
        d.text(x0 + bits * bw / 2, top + 100, f"{r.dequantized[j]:+.3f}", size=SMALL, mono=True)
    d.text(12, top + 128, f"w_j = s·q_j + b with group 0's scale s = {s:.4f} and bias b = {b:.4f} (the row as "
           f"drawn: {', '.join(f'{v:+.3f}' for v in r.w[:min(fields, 3)])}, …)", anchor="start", size=SMALL)
    d.text(12, top + 146, "fields: weight j in bits j·bits and up; the values under them are the weights they "
           "stand for", anchor="start", size=SMALL, cls="muted")

    # the row in groups
    gy = 270
    n = len(r.scales)
    gw = 600 / n
    for g in range(n):
        x = left + g * gw
        d.rect(x, gy, gw, 26, category(g) + " edge", title=f"group {g}: weights {g * group_size} … "
               f"{(g + 1) * group_size - 1}")
        d.text(x + gw / 2, gy + 13, f"group {g}: s = {r.scales[g]:.4f}, b = {r.biases[g]:+.4f}", size=SMALL)
    d.text(left, gy + 40, f"the row, {n * group_size} weights: {group_size * bits // 32} words per group",
           anchor="start", size=SMALL, cls="muted")
    d.text(left, gy - 10, "word 0", anchor="start", size=SMALL, cls="muted")
    d.rect(left, gy - 4, 600 * fields / (n * group_size), 4, "tint outline")

    alt = (f"The first 32-bit word of a row of {n * group_size} weights quantized to {bits} bits in groups of "
           f"{group_size}, 0x{r.word:08x}, drawn bit by bit: weight j occupies bits {bits}j to {bits}j+{bits - 1}, "
           f"lowest bits first, so the word's fields hold the integers "
           + ", ".join(f"w{j} = {int(r.q[j])}" for j in range(fields))
           + f". With group 0's scale {s:.4f} and bias {b:.4f} they stand for the weights "
           + ", ".join(f"{v:+.3f}" for v in r.dequantized[:fields])
           + ". Below, the row cut into its groups, each with its own scale and bias: "
           + "; ".join(f"group {g} scale {r.scales[g]:.4f} bias {r.biases[g]:+.4f}" for g in range(n)) + ".")
    title = f"A word of MLX's {bits}-bit affine format"
    return Figure(d.svg(title, alt), title, alt,
                  "Computed when the site was built: a seeded random row quantized by `gemmglossary.mlx.affine` "
                  "(checked bit for bit against `mx.quantize` by the tests), the fields read back from its first "
                  "word; the tests check them against `kernels/qmv4.metal` run on the emulator.")
