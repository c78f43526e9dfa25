"""What the reports say beyond the exception class (issue #13 item 6, and the fields that
programs read instead of the wording): an out-of-bounds access says read or write, a
barrier under a condition is a BarrierError naming the barrier and the threads that never
reached it, an infinite loop is a timeout with a line, a jump to nowhere is not ':?'."""

from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import (BarrierError, DataRaceError, KernelCrash, KernelTimeoutError, OutOfBoundsError,
                                   PortabilityWarning, SimdgroupDivergenceError, load_kernel)
from gemmglossary.emulator.errors import Thread

KERNELS = Path(__file__).parent / "kernels"
REPORTS = KERNELS / "reports.metal"
DIAG = KERNELS / "diagnostics.metal"
S = str(REPORTS)


@pytest.fixture(scope="module")
def reports():
    return lambda name: load_kernel(REPORTS, name)


def test_an_out_of_bounds_read_says_read(conformance):
    k = load_kernel(DIAG, "oob_read")
    with pytest.raises(OutOfBoundsError) as e:
        k(np.zeros(8, np.float32), np.zeros(8, np.float32), threads=8, threads_per_threadgroup=8)
    err = e.value
    assert "out-of-bounds read of 'in': element index 8 is outside the valid range [0, 8)" in str(err)
    assert (err.access, err.buffer, err.index, err.length, err.element_size) == ("read", "in", 8, 8, 4)
    assert err.site == (str(DIAG), 68) and err.threadgroup == (0, 0, 0)
    assert err.thread == Thread((7, 0, 0), 7, 0, 7)
    assert "oob_reads='warn'" in str(err)


def test_an_out_of_bounds_write_says_write():
    k = load_kernel(DIAG, "unmasked_store")
    C = np.full((12, 12), -5.0, np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        k(C, 12, threadgroups=(2, 2, 1), threads_per_threadgroup=(32, 1, 1))
    assert "out-of-bounds write to 'C'" in str(e.value) and e.value.access == "write"
    assert e.value.site == (str(DIAG), 21)
    assert "oob_reads='warn'" not in str(e.value), "the hint is for reads"
    assert np.all(C == -5.0)


@pytest.mark.parametrize("oob_reads", ["error", "warn"])
def test_threadgroup_memory_out_of_bounds(reports, oob_reads):
    k = reports("tg_oob")
    out = np.zeros(16, np.float32)
    if oob_reads == "error":
        with pytest.raises(OutOfBoundsError) as e:
            k(out, 0, threads=16, threads_per_threadgroup=16)
        assert e.value.access == "read" and e.value.buffer == "tile" and e.value.index == 16
        assert e.value.site == (S, 13) and "out-of-bounds read of 'tile'" in str(e.value)
    else:
        with pytest.warns(PortabilityWarning, match="read outside a buffer") as w:
            k(out, 0, threads=16, threads_per_threadgroup=16, oob_reads="warn")
        assert np.array_equal(out, [1.0] * 15 + [0.0]) and w[0].message.kind == "oob-read"
    with pytest.raises(OutOfBoundsError) as e:
        k(out, 1, threads=16, threads_per_threadgroup=16, oob_reads=oob_reads)
    assert e.value.access == "write" and e.value.site == (S, 12) and e.value.index == 19
    assert "out-of-bounds write to 'tile'" in str(e.value)


def test_reads_allowed_writes_still_refused_names_the_write():
    src = ("#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device const float* x [[buffer(0)]], "
           "device float* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {\n  float v = x[i + 1];\n"
           "  y[i + 1] = v;\n}\n")
    with pytest.raises(OutOfBoundsError) as e:
        load_kernel(src, "k")(np.zeros(8, np.float32), np.zeros(8, np.float32), threads=8,
                              threads_per_threadgroup=8, oob_reads="warn")
    assert "out-of-bounds write to 'y': element index 8" in str(e.value) and "<source>:5" in str(e.value)
    assert "allowed by oob_reads='warn', writes are not" in str(e.value)


def test_a_barrier_under_a_condition_is_a_barrier_error(reports):
    with pytest.raises(BarrierError) as e:
        reports("barrier_under_if")(np.zeros(32, np.float32), threads=32, threads_per_threadgroup=32)
    err = e.value
    assert f"threadgroup_barrier at {S}:20 in threadgroup (0,0,0) is not reached by every thread" in str(err)
    assert "threads 1-31 returned without reaching it" in str(err)
    assert err.sites == [(S, 20)] and err.not_reached == list(range(1, 32)) and err.waiting == [0]
    # what gave it away is kept: thread 1 read what thread 0 wrote before the barrier
    assert (err.site, err.other_site, err.access, err.other_access) == ((S, 22), (S, 19), "read", "write")


def test_a_race_keeps_its_facts():
    k = load_kernel(DIAG, "tg_race_simple")
    with pytest.raises(DataRaceError) as e:
        k(np.zeros(64, np.float32), threads=64, threads_per_threadgroup=64)
    err = e.value
    assert err.memory == "s" and err.element.startswith("s[") and "'" not in err.element and err.threadgroup == (0, 0, 0)
    assert {err.site, err.other_site} == {(str(DIAG), 74), (str(DIAG), 75)}
    assert isinstance(err.thread, Thread) and isinstance(err.other_thread, Thread)


def test_divergence_and_barrier_facts():
    with pytest.raises(SimdgroupDivergenceError) as e:
        load_kernel(DIAG, "split_simd")(np.zeros(32, np.int32), threads=32, threads_per_threadgroup=32)
    assert set(e.value.sites) == {(str(DIAG), 38), (str(DIAG), 40)}
    assert set(e.value.operation) == {"simd_sum", "simd_max"} and e.value.simdgroup == 0
    with pytest.raises(BarrierError) as e:
        load_kernel(DIAG, "divergent_barrier")(np.zeros(32, np.float32), threads=32, threads_per_threadgroup=32)
    assert set(e.value.sites) == {(str(DIAG), 9), (str(DIAG), 11)}


def test_an_infinite_loop_is_a_timeout_with_its_line(reports):
    """C++ may delete a side-effect-free loop (clang did: the kernel then crashed at ':?')."""
    with pytest.raises(KernelTimeoutError) as e:
        reports("for_ever")(np.zeros(1, np.int32), threads=4, threads_per_threadgroup=4, timeout=0.3)
    msg = str(e.value)
    assert "did not finish within 0.3 s" in msg and ":?" not in msg
    assert f"{S}:26" in msg or f"{S}:25" in msg, msg  # gcc gives the loop the line of the function
    k = load_kernel(DIAG, "spin")
    with pytest.raises(KernelTimeoutError) as e:
        k(np.zeros(1, np.int32), np.zeros(1, np.int32), threads=4, threads_per_threadgroup=4, timeout=0.3)
    # the thread is stopped wherever it is in the loop: its condition (line 48) or its body (49)
    assert e.value.site in {(str(DIAG), 48), (str(DIAG), 49)} and e.value.thread is not None


def test_a_jump_to_nowhere_names_no_line(reports):
    with pytest.raises(KernelCrash) as e:
        reports("jump_to_nowhere")(np.zeros(1, np.int32), threads=1, threads_per_threadgroup=1)
    assert "an address outside the kernel's code" in str(e.value) and ":?" not in str(e.value)
    assert e.value.signal == "SIGSEGV"


def test_source_strings_are_named_without_a_directory():
    src = "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* o [[buffer(0)]]) {\n  o[1] = 1;\n}\n"
    with pytest.raises(OutOfBoundsError) as e:
        load_kernel(src, "k")(np.zeros(1, np.float32), threads=1, threads_per_threadgroup=1)
    assert " at <source>:4 " in str(e.value) and e.value.site == ("<source>", 4)


def test_the_shim_can_raise_a_portability_warning(reports):
    with pytest.warns(PortabilityWarning, match="a warning raised by the emulator's library") as w:
        reports("shim_warning")(np.zeros(1, np.int32), threads=1, threads_per_threadgroup=1)
    assert w[0].message.kind == "library" and w[0].message.site == (S, 34)


def test_warnings_carry_their_kind():
    src = ("#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* o [[buffer(0)]], "
           "uint t [[thread_index_in_threadgroup]]) {\n  threadgroup float s[4];\n  if (t >= 2) return;\n"
           "  threadgroup_barrier(mem_flags::mem_threadgroup);\n  o[t] = s[t];\n}\n")
    with pytest.warns(PortabilityWarning) as w:
        load_kernel(src, "k")(np.zeros(4, np.float32), threads=4, threads_per_threadgroup=4)
    kinds = {x.message.kind: x.message for x in w}
    assert kinds["returned-before-barrier"].site == ("<source>", 6)
    assert kinds["uninitialized-read"].memory == "s" and kinds["uninitialized-read"].site == ("<source>", 7)


def test_an_out_of_bounds_access_is_reported_at_its_own_line(reports):
    """The pc is taken where the check fails, not scheduled among an earlier line's code."""
    A = np.ones((1, 1), np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        reports("oob_line")(A, A.copy(), np.uint32(1), threadgroups=(1, 1, 1), threads_per_threadgroup=(16, 16, 1))
    assert e.value.site == (S, 47), str(e.value)
