"""The numpy block formats (gemmglossary.llama.blocks) against ggml-common.h's definitions.

- Sizes: each dtype's size is the one the header's ``static_assert`` states, from the header's
  own constants.
- Nibble order and scale: hand-built blocks whose every code is known give the values the
  definition says (q4_0's low nibbles first, q4_K's sub-blocks alternating low/high nibbles
  over one 32-byte run, q8_0's signed codes).
- q4_K's 12 scale bytes: packing and ``get_scale_min_k4``'s unpacking are inverse for every
  6-bit scale and min.
- The round trip: quantize, dequantize, quantize gives the same bytes, and the dequantized
  values are within half a step of the data.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.llama import blocks as B
from gemmglossary.llama import source

FORMATS = ("q4_0", "q8_0", "q4_K")


def _static_assert_size(struct: str) -> str:
    text = (source.root() / "ggml/src/ggml-common.h").read_text(encoding="utf-8")
    m = re.search(rf"static_assert\(sizeof\({struct}\) == ([^,]+),", text)
    assert m, f"ggml-common.h has no static_assert on sizeof({struct})"
    return m.group(1).strip()


def test_block_sizes_are_the_headers():
    qk4, qk8, qkk, ks = (source.common_constant(n) for n in ("QK4_0", "QK8_0", "QK_K", "K_SCALE_SIZE"))
    half = 2
    # the header's expression, evaluated with its constants: the dtype must have that size
    env = {"sizeof(ggml_half)": half, "sizeof(uint32_t)": 4, "QK4_0": qk4, "QK8_0": qk8, "QK_K": qkk,
           "K_SCALE_SIZE": ks}
    for name, struct in (("q4_0", "block_q4_0"), ("q8_0", "block_q8_0"), ("q4_K", "block_q4_K")):
        expr = _static_assert_size(struct)
        for k, v in sorted(env.items(), key=lambda kv: -len(kv[0])):
            expr = expr.replace(k, str(v))
        assert B.fmt(name).bytes_per_block == eval(expr, {}), (name, expr)  # noqa: S307 (integers only)
    assert B.fmt("q4_0").weights == qk4 and B.fmt("q4_K").weights == qkk
    assert [B.fmt(n).bits_per_weight for n in FORMATS] == [4.5, 8.5, 4.5]


def test_q4_0_low_nibbles_are_the_first_half():
    b = np.zeros(1, B.fmt("q4_0").dtype)
    b["d"] = 0.5
    j = np.arange(16, dtype=np.uint8)
    b["qs"] = j | ((15 - j) << 4)
    w = B.dequantize(b.view(np.uint8), "q4_0")
    np.testing.assert_array_equal(w[:16], (j.astype(np.float32) - 8) * 0.5)
    np.testing.assert_array_equal(w[16:], (7 - j.astype(np.float32)) * 0.5)


def test_q8_0_codes_are_signed():
    b = np.zeros(1, B.fmt("q8_0").dtype)
    b["d"] = 0.25
    b["qs"] = np.arange(-16, 16, dtype=np.int8)
    np.testing.assert_array_equal(B.dequantize(b.view(np.uint8), "q8_0"), np.arange(-16, 16) * 0.25)


def test_q4_K_sub_blocks_alternate_nibbles_over_32_bytes():
    b = np.zeros(1, B.fmt("q4_K").dtype)
    b["d"], b["dmin"] = 1.0, 0.5
    sc = np.arange(1, 9, dtype=np.uint8)             # sub-block s has scale s + 1
    mn = np.arange(10, 18, dtype=np.uint8)           # and min s + 10
    b["scales"] = B.pack_scale_min_k4(sc[None], mn[None])[0]
    b["qs"] = np.tile(np.array([3 | (12 << 4)], np.uint8), 128)  # low nibble 3, high nibble 12
    w = B.dequantize(b.view(np.uint8), "q4_K").reshape(8, 32)
    for s in range(8):
        q = 3 if s % 2 == 0 else 12
        np.testing.assert_array_equal(w[s], np.full(32, 1.0 * sc[s] * q - 0.5 * mn[s], np.float32))


def test_q4_K_scale_packing_round_trips_every_value():
    values = np.arange(64, dtype=np.uint8)
    for shift in range(8):  # every 6-bit value in every slot
        sc = np.roll(np.stack([values[i:i + 8] for i in range(0, 64, 8)]), shift, axis=1)
        mn = sc[::-1].copy()
        got_sc, got_mn = B.scale_min_k4(B.pack_scale_min_k4(sc, mn))
        np.testing.assert_array_equal(got_sc, sc)
        np.testing.assert_array_equal(got_mn, mn)
    with pytest.raises(ValueError, match="6-bit"):
        B.pack_scale_min_k4(np.full((1, 8), 64), np.zeros((1, 8)))


@pytest.mark.parametrize("name", FORMATS)
def test_round_trip(name):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 1024)).astype(np.float32)
    x[0, :32] = 0  # an all-zero block: d = 0, and every value comes back 0
    q = B.quantize(x, name)
    assert q.dtype == np.uint8 and q.shape == (4, 1024 // B.fmt(name).weights * B.fmt(name).bytes_per_block)
    w = B.dequantize(q, name)
    np.testing.assert_array_equal(B.quantize(w, name), q)
    np.testing.assert_array_equal(w[0, :32], 0)
    step = {"q4_0": np.abs(x).max() / 8, "q8_0": np.abs(x).max() / 127, "q4_K": (x.max() - x.min()) / 15}[name]
    assert np.abs(w - x).max() <= step  # within a step (q4_K: its 6-bit scales round too)
    assert np.abs(w - x).mean() < step / 3


def test_a_partial_block_is_refused():
    with pytest.raises(ValueError, match="whole number"):
        B.quantize(np.zeros((1, 48), np.float32), "q4_0")
