"""A threadgroup parameter given 0 bytes (a host's setThreadgroupMemoryLength(0), as llama.cpp's
host sets for q4_0's mul_mv, whose kernel declares `shmem` and never uses it) launches; an
access to it is outside its 0 bytes and fails naming the parameter; a parameter never given
memory is still refused before the launch."""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.emulator import load_kernel
from gemmglossary.emulator.errors import LaunchError, OutOfBoundsError

SOURCE = """#include <metal_stdlib>
using namespace metal;
kernel void reads_it(device float *out [[buffer(0)]], threadgroup float *t [[threadgroup(0)]],
                     uint i [[thread_position_in_threadgroup]]) {
    t[i] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = t[i];
}
kernel void ignores_it(device float *out [[buffer(0)]], threadgroup float *t [[threadgroup(0)]],
                       uint i [[thread_position_in_threadgroup]]) {
    out[i] = 2.0f;
}
"""


def _run(name, memory):
    out = np.zeros(32, np.float32)
    load_kernel(SOURCE, name)({0: out}, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1),
                              threadgroup_memory=memory)
    return out


def test_zero_bytes_for_an_unused_parameter_launch():
    np.testing.assert_array_equal(_run("ignores_it", {0: 0}), 2.0)


def test_an_access_to_zero_bytes_is_out_of_bounds():
    with pytest.raises(OutOfBoundsError, match="'t'"):
        _run("reads_it", {0: 0})


def test_memory_never_given_is_refused():
    with pytest.raises(LaunchError, match=r"has no memory"):
        _run("ignores_it", None)
