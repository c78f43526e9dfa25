"""A spinning loop and a division by a compile-time zero are reported at their own lines,
as what they are (issue #36): the timeout named the line before the loop, and the division
was an out-of-bounds access of a fixed-size array at no useful line; since issue #34 the
division is a warning at its line, not a crash."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from gemmglossary.emulator import KernelTimeoutError, PortabilityWarning, build, load_kernel

#: Both rest on flags build.py gives g++ only (clang++ has neither; not checked with it here).
gcc_only = pytest.mark.skipif("clang" in build.compiler()[1], reason="the flags these rely on are g++'s")

SPIN = """#include <metal_stdlib>
using namespace metal;
kernel void spin(device float* a [[buffer(0)]],
                 uint i [[thread_position_in_grid]]) {
    a[i] = 1.0f;
    while (true) {}
}
"""

DIVIDE = """#include <metal_stdlib>
using namespace metal;
constant int Z = 0;
kernel void divide(device int* a [[buffer(0)]],
                   uint i [[thread_position_in_grid]]) {
    int x = a[i] + 1;
    a[i] = x / Z;
}
"""


@gcc_only
def test_a_timeout_names_the_spinning_loop():
    with pytest.raises(KernelTimeoutError) as info:
        load_kernel(SPIN, "spin")(np.zeros(4, np.float32), threads=4, threads_per_threadgroup=4, timeout=2)
    assert "was running at <source>:6" in str(info.value), info.value


@gcc_only
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="arm64's division instructions give 0 for a zero divisor without trapping, so there "
                           "is nothing to report")
def test_a_division_by_a_compile_time_zero_warns_at_its_line_and_gives_zero():
    """Metal leaves an integer division by zero undefined and goes on; x86-64 traps (SIGFPE),
    and the emulator skips the division with 0 as its result and a warning at the line."""
    a = np.full(4, 5, np.int32)
    with pytest.warns(PortabilityWarning, match=r"divides an integer by zero .* at <source>:7 "):
        load_kernel(DIVIDE, "divide")(a, threads=4, threads_per_threadgroup=4)
    assert a.tolist() == [0, 0, 0, 0]
