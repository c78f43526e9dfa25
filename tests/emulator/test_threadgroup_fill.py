"""Threadgroup memory starts undefined: the emulator fills it with a byte that reads as NaN
at every float width and as -1 (or the largest value) at every integer width, so a kernel
that reads it before writing it gives visibly wrong numbers, with the warning at its line."""

import warnings

import numpy as np
import pytest

from gemmglossary.emulator import PortabilityError, PortabilityWarning, load_kernel
from gemmglossary.emulator.abi import abi

# one threadgroup array per element type, read before any thread writes it
UNWRITTEN_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device float* f [[buffer(0)]], device half* h [[buffer(1)]], device ushort* bf [[buffer(2)]],
              device int* i [[buffer(3)]], device uint* u [[buffer(4)]], device short* s [[buffer(5)]],
              device uchar* c [[buffer(6)]], uint t [[thread_index_in_threadgroup]]) {
  threadgroup float tf[4];
  threadgroup half th[4];
  threadgroup bfloat tb[4];
  threadgroup int ti[4];
  threadgroup uint tu[4];
  threadgroup short ts[4];
  threadgroup uchar tc[4];
  f[t] = tf[t];
  h[t] = th[t];
  bf[t] = as_type<ushort>(tb[t]);
  i[t] = ti[t];
  u[t] = tu[t];
  s[t] = ts[t];
  c[t] = tc[t];
}
"""

# a reduction that forgets to zero its partial sums: correct with zeroed memory, NaN here
FORGOT_TO_ZERO_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
              uint t [[thread_index_in_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
  threadgroup float partial[1];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (t == 0) {
    for (int j = 0; j < 8; ++j) partial[0] += x[g * 8 + j];
    out[g] = partial[0];
  }
}
"""


def _outputs(n=4):
    return [np.zeros(n, d) for d in (np.float32, np.float16, np.uint16, np.int32, np.uint32, np.int16, np.uint8)]


def test_the_fill_byte_is_nan_at_every_float_width():
    """The reason for the byte (mslemu_abi.h): 0xFF.. is NaN as float, half and bfloat."""
    b = abi()["MSLEMU_TG_FILL_BYTE"]
    assert b == 0xFF
    assert np.isnan(np.frombuffer(bytes([b]) * 4, np.float32)).all()
    assert np.isnan(np.frombuffer(bytes([b]) * 2, np.float16)).all()
    bfloat_bits = np.frombuffer(bytes([b]) * 2, np.uint16)
    assert np.isnan((bfloat_bits.astype(np.uint32) << 16).view(np.float32)).all()  # bfloat: float's top half


def test_unwritten_threadgroup_memory_reads_as_the_fill_at_every_type():
    k = load_kernel(UNWRITTEN_SRC, "k")
    f, h, bf, i, u, s, c = outs = _outputs()
    with pytest.warns(PortabilityWarning, match=r"reads threadgroup memory 'tf\[0\]' at <source>:13 .*"
                                                r"fills it with 0xFF bytes") as w:
        k(*outs, threads=4, threads_per_threadgroup=4)
    assert [x.message.kind for x in w if issubclass(x.category, PortabilityWarning)] == ["uninitialized-read"]
    assert np.isnan(f).all() and np.isnan(h).all()
    assert (bf == 0xFFFF).all() and np.isnan((bf.astype(np.uint32) << 16).view(np.float32)).all()
    assert (i == -1).all() and (s == -1).all()
    assert (u == 0xFFFFFFFF).all() and (c == 0xFF).all()


def test_a_kernel_that_relies_on_zeroed_threadgroup_memory_gives_nan():
    """The sum is right on zeroed memory (a fresh allocation often is), wrong on a GPU that
    leaves whatever was there, and NaN here; the warning names the line of the read."""
    k = load_kernel(FORGOT_TO_ZERO_SRC, "k")
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(2, np.float32)
    with pytest.warns(PortabilityWarning, match=r"'partial\[0\]' at <source>:8") as w:
        k(x, out, threadgroups=2, threads_per_threadgroup=32)
    assert np.isnan(out).all()
    assert [x.message.site for x in w if x.category is PortabilityWarning] == [("<source>", 8)]
    with pytest.raises(PortabilityError, match="uninitialized|before any thread"):
        k(x, out, threadgroups=2, threads_per_threadgroup=32, strict=True)


def test_the_fill_does_not_depend_on_the_race_check():
    """race_check=False drops the warning (the shadow finds the unwritten read), not the fill."""
    k = load_kernel(FORGOT_TO_ZERO_SRC, "k")
    out = np.zeros(2, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k(np.ones(16, np.float32), out, threadgroups=2, threads_per_threadgroup=32, race_check=False)
    assert np.isnan(out).all()
