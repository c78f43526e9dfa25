"""Races on device memory (device_races=True, or $GEMMGLOSSARY_EMULATOR_DEVICE_RACES=1): two
threads of one dispatch that touch one device address, at least one writing, not both
atomically, with nothing that orders them. Within a threadgroup a
threadgroup_barrier(mem_flags::mem_device) orders device memory (a simdgroup_barrier with it,
within the simdgroup); across threadgroups nothing does in one dispatch."""

import warnings

import numpy as np
import pytest

from gemmglossary.emulator import DataRaceError, PortabilityError, PortabilityWarning, load_kernel

SRC = """#include <metal_stdlib>
using namespace metal;

kernel void neighbour(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] = x[i + 1] + 1.0f;  // reads what the next thread writes
}

kernel void every_group_writes_one(device uint* out [[buffer(0)]], uint g [[threadgroup_position_in_grid]],
                                   uint t [[thread_index_in_threadgroup]]) {
  if (t == 0) out[0] = g;
}

kernel void publish(device float* x [[buffer(0)]], device float* y [[buffer(1)]], uint t [[thread_index_in_threadgroup]],
                    uint g [[threadgroup_position_in_grid]], uint n [[threads_per_threadgroup]]) {
  if (t == 0) x[g] = float(g) + 1.0f;
#if ORDER == 1
  threadgroup_barrier(mem_flags::mem_device);
#elif ORDER == 2
  threadgroup_barrier(mem_flags::mem_threadgroup);
#elif ORDER == 3
  simdgroup_barrier(mem_flags::mem_device);
#endif
  y[g * n + t] = x[g];
}

kernel void count(device atomic_uint* counter [[buffer(0)]], device uint* seen [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
#if PEEK
  if (i == 5) seen[0] = *((device uint*)counter);  // a plain read of what other threads add to
#endif
}

kernel void read_shared(device const float* w [[buffer(0)]], device float* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  out[i] = w[0] + w[i % 4];  // every thread reads w: reads never race
}

kernel void bytes(device bool* flags [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  flags[i] = (i % 3) == 0;  // neighbouring threads write neighbouring bytes
}

kernel void vector_then_scalar(device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
  if (i == 0) *((device float4*)x) = float4(1.0f);
  if (i == 1) out[0] = x[2];  // a component of what thread 0 wrote as a float4
}

kernel void through_two_names(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
  dst[i] = 2.0f * src[i];
  if (i > 0) dst[i] += src[i - 1];  // what the previous thread wrote, through the other name
}
"""


def _k(name, **defines):
    return load_kernel(SRC, name, defines=defines or None)


def test_off_by_default():
    """Without it, the racy kernel runs (its numbers depend on the order the threads ran in)."""
    x = np.zeros(65, np.float32)
    _k("neighbour")(x, threads=64, threads_per_threadgroup=32)
    assert (x[:64] >= 1).all()


def test_a_neighbour_read_races_with_its_write():
    x = np.zeros(65, np.float32)
    with pytest.raises(DataRaceError) as e:
        _k("neighbour")(x, threads=64, threads_per_threadgroup=32, device_races=True)
    err = e.value
    assert "data race on device memory 'x'[1]" in str(err)
    assert (err.memory, err.element, err.element_size) == ("x", "x[1]", 4)
    assert err.site == ("<source>", 5) and err.other_site == ("<source>", 5)
    assert (err.access, err.other_access) == ("write", "read")
    assert (err.thread.index, err.other_thread.index) == (1, 0)
    assert err.threadgroup == err.other_threadgroup == (0, 0, 0)
    assert "with no threadgroup_barrier(mem_flags::mem_device) in between" in str(err)
    assert (x == 0).all(), "a failed launch writes nothing back"


def test_the_environment_variable_turns_it_on(monkeypatch):
    monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_DEVICE_RACES", "1")
    with pytest.raises(DataRaceError):
        _k("neighbour")(np.zeros(65, np.float32), threads=64, threads_per_threadgroup=32)
    _k("neighbour")(np.zeros(65, np.float32), threads=64, threads_per_threadgroup=32, device_races=False)


def test_two_threadgroups_writing_one_address_race():
    """Nothing orders two threadgroups of one dispatch: the same write from each is a race."""
    out = np.zeros(1, np.uint32)
    with pytest.raises(DataRaceError) as e:
        _k("every_group_writes_one")(out, threadgroups=3, threads_per_threadgroup=32, device_races=True)
    err = e.value
    assert err.threadgroup == (1, 0, 0) and err.other_threadgroup == (0, 0, 0)
    assert err.site == err.other_site == ("<source>", 10)
    assert "nothing orders two threadgroups' accesses within one dispatch" in str(err)


def test_unordered_publish_is_a_race():
    y = np.zeros((2, 64), np.float32)
    with pytest.raises(DataRaceError) as e:
        _k("publish", ORDER=0)(np.zeros(2, np.float32), y, threadgroups=2, threads_per_threadgroup=64,
                               device_races=True)
    assert e.value.site == ("<source>", 23) and e.value.other_site == ("<source>", 15)


def test_a_barrier_with_mem_device_orders_device_memory():
    x, y = np.zeros(2, np.float32), np.zeros((2, 64), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _k("publish", ORDER=1)(x, y, threadgroups=2, threads_per_threadgroup=64, device_races=True)
    np.testing.assert_array_equal(y, [[1] * 64, [2] * 64])


def test_a_barrier_without_mem_device_warns():
    """An execution barrier that orders threadgroup memory only: the specification does not
    order device memory there, so it warns (and is an error in strict mode)."""
    x, y = np.zeros(2, np.float32), np.zeros((2, 64), np.float32)
    k = _k("publish", ORDER=2)
    with pytest.warns(PortabilityWarning, match=r"ordered only by a barrier without mem_flags::mem_device "
                                                r"\(the last one at <source>:19\)") as w:
        k(x, y, threadgroups=2, threads_per_threadgroup=64, device_races=True)
    kinds = [m.message.kind for m in w if m.category is PortabilityWarning]
    assert kinds == ["device-barrier-without-memory-order"]
    np.testing.assert_array_equal(y, [[1] * 64, [2] * 64])
    with pytest.raises(PortabilityError):
        k(x, y, threadgroups=2, threads_per_threadgroup=64, device_races=True, strict=True)


def test_a_simdgroup_barrier_with_mem_device_orders_its_simdgroup_only():
    x, y = np.zeros(1, np.float32), np.zeros((1, 64), np.float32)
    k = _k("publish", ORDER=3)
    k(x, y[:, :32].copy(), threadgroups=1, threads_per_threadgroup=32, device_races=True)  # one simdgroup: ordered
    with pytest.raises(DataRaceError) as e:  # thread 32 is in the second simdgroup
        k(x, y, threadgroups=1, threads_per_threadgroup=64, device_races=True)
    assert e.value.thread.simdgroup == 1 and e.value.other_thread.index == 0


def test_atomics_do_not_race_with_each_other():
    counter, seen = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    _k("count", PEEK=0)(counter, seen, threads=256, threads_per_threadgroup=64, device_races=True)
    assert counter[0] == 256


def test_a_plain_read_of_an_atomic_races():
    counter, seen = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    with pytest.raises(DataRaceError) as e:
        _k("count", PEEK=1)(counter, seen, threads=64, threads_per_threadgroup=64, device_races=True)
    assert e.value.access == "write" and e.value.site == ("<source>", 28)  # thread 6's add, after thread 5's read
    assert e.value.other_site == ("<source>", 30) and e.value.other_access == "read"


def test_reads_never_race():
    out = np.zeros(256, np.float32)
    w = np.arange(4, dtype=np.float32)
    _k("read_shared")(w, out, threads=256, threads_per_threadgroup=64, device_races=True)
    np.testing.assert_array_equal(out, w[0] + w[np.arange(256) % 4])


def test_neighbouring_bytes_do_not_race():
    flags = np.zeros(100, np.bool_)
    _k("bytes")(flags, threads=100, threads_per_threadgroup=50, device_races=True)
    np.testing.assert_array_equal(flags, np.arange(100) % 3 == 0)


def test_a_vector_write_meets_a_scalar_read_of_its_component():
    with pytest.raises(DataRaceError) as e:
        _k("vector_then_scalar")(np.zeros(4, np.float32), np.zeros(1, np.float32), threads=2,
                                 threads_per_threadgroup=2, device_races=True)
    assert e.value.element == "x[2]" and e.value.other_access == "write"


def test_a_race_through_two_names_of_one_memory():
    """The same array bound twice is one memory (test_aliasing.py), checked as one."""
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(DataRaceError, match=r"'src'\[0\] \(a 4-byte access, also bound as 'dst'\)"):
        _k("through_two_names")(x, x, threads=8, threads_per_threadgroup=8, device_races=True)
    y = np.zeros(8, np.float32)
    _k("through_two_names")(x, y, threads=8, threads_per_threadgroup=8, device_races=True)  # two memories: no race


def test_bench_reports_what_the_check_costs():
    """`gemmglossary bench emulator` prints the GEMMs with and without the check, and the ratio."""
    import io

    from gemmglossary.bench import bench_device_races

    out = io.StringIO()
    (row,) = bench_device_races(sizes=(32,), kernels=("tiled_gemm",), repeats=1, out=out)
    name, n, without, checked, ratio, ok = row
    assert (name, n, ok) == ("tiled_gemm", 32, True)
    assert without > 0 and checked > 0 and ratio == pytest.approx(checked / without)
    assert "device_races" in out.getvalue() and "tiled_gemm" in out.getvalue()


SAME_VALUE_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]], uint g [[threadgroup_position_in_grid]]) {
  out[0] = SAME ? 1.0f : float(i);  // every thread writes out[0]
}
"""


def test_two_writes_of_the_same_value_warn():
    """Every thread writing one flag, or MLX's gemv writing its moved-back last rows twice:
    a race by the specification, but the bytes do not depend on the order: a warning naming
    both writes (an error in strict mode). Different values stay a DataRaceError."""
    k = load_kernel(SAME_VALUE_SRC, "k", defines={"SAME": 1})
    out = np.zeros(1, np.float32)
    with pytest.warns(PortabilityWarning, match=r"both wrote the same bytes") as w:
        k(out, threads=64, threads_per_threadgroup=32, device_races=True)
    same = [m.message for m in w if m.category is PortabilityWarning]
    assert [m.kind for m in same] == ["same-value-write-race"]
    assert same[0].site == same[0].other_site == ("<source>", 4)
    assert out[0] == 1
    with pytest.raises(PortabilityError):
        k(out, threads=64, threads_per_threadgroup=32, device_races=True, strict=True)
    with pytest.raises(DataRaceError, match=r"'out'\[0\].*writes it at <source>:4.*wrote it at <source>:4"):
        load_kernel(SAME_VALUE_SRC, "k", defines={"SAME": 0})(out, threads=64, threads_per_threadgroup=32,
                                                              device_races=True)


SPIN_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const int* flag [[buffer(0)]], device int* out [[buffer(1)]]) {
  int n = 0;
  while (flag[0] == 0) n += 1;
  out[0] = n;
}
"""


def test_a_timeout_names_the_kernels_line_not_the_check():
    """The time goes in the check's calls; the timeout names the line that made the access."""
    from gemmglossary.emulator import KernelTimeoutError

    k = load_kernel(SPIN_SRC, "k")
    with pytest.raises(KernelTimeoutError) as e:
        k(np.zeros(1, np.int32), np.zeros(1, np.int32), threads=1, threads_per_threadgroup=1, timeout=0.3,
          device_races=True)
    assert e.value.site == ("<source>", 5)
