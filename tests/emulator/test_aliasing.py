"""Metal binds buffers, not copies: two parameters bound to one memory (the same array twice,
or overlapping views of one base) see one memory, each from its own offset, and the kernel's
writes are seen through every name (emulator/device_memory.py)."""

import numpy as np
import pytest

from gemmglossary.emulator import LaunchError, load_kernel

# each thread writes through `dst` what it read through `src`, then reads it back through `src`
ROUND_TRIP_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
              device float* seen [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  dst[i] = src[i] + 1.0f;
  seen[i] = src[i];
}
"""

# one thread walks the memory: dst[i] = src[i] + 1, in order, so overlap is visible at once
SEQUENTIAL_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]], constant uint& n [[buffer(2)]]) {
  for (uint i = 0; i < n; ++i) dst[i] = src[i] * 2.0f + 1.0f;
}
"""

# where the two pointers are relative to each other, as the kernel sees them
DISTANCE_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]], device long* out [[buffer(2)]]) {
  out[0] = b - a;
  out[1] = a == b;
}
"""

VEC_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const float* a [[buffer(0)]], device float4* b [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  b[i] = float4(a[i]);
}
"""


def _sequential(src_off: int, dst_off: int, n: int, base: np.ndarray) -> np.ndarray:
    """What the one-thread kernel leaves in `base`: numpy's answer, element by element."""
    out = base.copy()
    for i in range(n):
        out[dst_off + i] = out[src_off + i] * 2 + 1
    return out


@pytest.fixture(scope="module")
def round_trip():
    return load_kernel(ROUND_TRIP_SRC, "k")


@pytest.fixture(scope="module")
def sequential():
    return load_kernel(SEQUENTIAL_SRC, "k")


def test_the_same_array_twice_is_one_memory(round_trip):
    """llama.cpp binds src0's buffer again where a kernel has no src1."""
    x = np.arange(8, dtype=np.float32)
    seen = np.zeros(8, np.float32)
    round_trip(x, x, seen, threads=8, threads_per_threadgroup=8)
    np.testing.assert_array_equal(x, np.arange(8) + 1)
    np.testing.assert_array_equal(seen, np.arange(8) + 1)  # the write through dst, read through src


def test_separate_arrays_stay_separate(round_trip):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    seen = np.zeros(8, np.float32)
    round_trip(x, y, seen, threads=8, threads_per_threadgroup=8)
    np.testing.assert_array_equal(x, np.arange(8))
    np.testing.assert_array_equal(y, np.arange(8) + 1)
    np.testing.assert_array_equal(seen, np.arange(8))


@pytest.mark.parametrize("src_off, dst_off", [(0, 1), (1, 0), (0, 3), (2, 2)])
def test_overlapping_views_see_one_memory_at_their_offsets(sequential, src_off, dst_off):
    n = 6
    base = np.arange(10, dtype=np.float32)
    want = _sequential(src_off, dst_off, n, base)
    sequential(base[src_off:src_off + n], base[dst_off:dst_off + n], n, threads=1, threads_per_threadgroup=1)
    np.testing.assert_array_equal(base, want)


def test_writes_are_seen_through_every_name(round_trip):
    """An input and an output that alias: the caller sees the kernel's writes through both."""
    base = np.arange(12, dtype=np.float32)
    src, dst = base[2:10], base[2:10].reshape(2, 4)  # two views of the same bytes, two shapes
    seen = np.zeros(8, np.float32)
    round_trip(src, dst, seen, threads=8, threads_per_threadgroup=8)
    np.testing.assert_array_equal(src, np.arange(2, 10) + 1)
    np.testing.assert_array_equal(dst.ravel(), src)
    np.testing.assert_array_equal(base[[0, 1, 10, 11]], [0, 1, 10, 11])  # outside the views: untouched
    np.testing.assert_array_equal(seen, src)


def test_the_kernel_sees_the_offset_between_two_views():
    base = np.zeros(16, np.float32)
    out = np.zeros(2, np.int64)
    k = load_kernel(DISTANCE_SRC, "k")
    k(base[3:], base[5:12], out, threads=1, threads_per_threadgroup=1)
    assert out.tolist() == [2, 0]
    k(base, base, out, threads=1, threads_per_threadgroup=1)
    assert out.tolist() == [0, 1]


def test_non_overlapping_views_of_one_base_are_separate_buffers(sequential):
    base = np.arange(12, dtype=np.float32)
    sequential(base[:6], base[6:], 6, threads=1, threads_per_threadgroup=1)
    np.testing.assert_array_equal(base, _sequential(0, 6, 6, np.arange(12, dtype=np.float32)))


def test_a_dtype_view_of_the_same_bytes_aliases(round_trip):
    x = np.arange(4, dtype=np.float32)
    raw = x.view(np.uint32)  # the same memory, another dtype
    assert np.shares_memory(x, raw)
    seen = np.zeros(4, np.float32)
    round_trip(x, raw.view(np.float32), seen, threads=4, threads_per_threadgroup=4)
    np.testing.assert_array_equal(x, np.arange(4) + 1)


def test_a_read_only_view_sees_writes_through_its_writable_alias(round_trip):
    """The read-only flag protects a view, not the memory: numpy's read-only view of a
    writable array sees any write through the other name, and so it does here."""
    x = np.arange(8, dtype=np.float32)
    ro = x.view()
    ro.flags.writeable = False
    seen = np.zeros(8, np.float32)
    round_trip(ro, x, seen, threads=8, threads_per_threadgroup=8)
    np.testing.assert_array_equal(ro, np.arange(8) + 1)


def test_read_only_memory_is_never_written(round_trip):
    """Memory no writable array holds (np.frombuffer of bytes): the write is refused, and
    nothing is written back, not even to the writable arrays of the launch."""
    ro = np.frombuffer(np.arange(8, dtype=np.float32).tobytes(), np.float32)
    seen = np.full(8, -1, np.float32)
    with pytest.raises(LaunchError, match=r"wrote to buffer 'src', but the array is read-only \(parameters 'src', "
                                          r"'dst' are bound to one memory, and no writable array holds"):
        round_trip(ro, ro, seen, threads=8, threads_per_threadgroup=8)
    assert (seen == -1).all() and (ro == np.arange(8)).all()


def test_a_strided_view_that_aliases_is_refused(round_trip):
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(LaunchError, match=r"parameter 'dst' \[\[buffer\(1\)\]\].*shares memory.*not contiguous"):
        round_trip(x[:8], x[::2], np.zeros(8, np.float32), threads=8, threads_per_threadgroup=8)


def test_the_same_strided_view_twice_is_one_memory(round_trip):
    x = np.arange(16, dtype=np.float32)
    v = x[::2]
    seen = np.zeros(8, np.float32)
    round_trip(v, v, seen, threads=8, threads_per_threadgroup=8)
    np.testing.assert_array_equal(x[::2], np.arange(0, 16, 2) + 1)
    np.testing.assert_array_equal(x[1::2], np.arange(1, 16, 2))
    np.testing.assert_array_equal(seen, x[::2])


def test_a_misaligned_offset_is_refused():
    """Metal aligns a buffer's offset to the type the kernel reads (a float4: 16 bytes)."""
    k = load_kernel(VEC_SRC, "k")
    base = np.zeros(20, np.float32)
    with pytest.raises(LaunchError, match=r"'b' \[\[buffer\(1\)\]\].*starts 4 bytes into.*16-byte alignment"):
        k(base[:4], base[1:17], threads=4, threads_per_threadgroup=4)
    k(base[:4], base[4:20], threads=4, threads_per_threadgroup=4)  # 16 bytes in: aligned
