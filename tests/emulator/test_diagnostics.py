"""Broken kernels must be reported with the .metal line, the threadgroup and the thread."""

import os

import numpy as np
import pytest

from gemmglossary.emulator import (BarrierError, CompileError, DataRaceError, KernelCrash, KernelTimeoutError,
                                   OutOfBoundsError, SimdgroupDivergenceError, load_kernel)

from pathlib import Path

KERNELS = Path(__file__).parent / "kernels"

DIAG = KERNELS / "diagnostics.metal"
TILED = KERNELS / "tiled.metal"
SCHEDULES = ["lockstep", "simdgroup-major", ("random", 7)]


def _tiled(defines):
    return load_kernel(TILED, "matmul_tiled", defines=defines)


def _run_tiled(k, n=40, schedule="lockstep"):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    C = np.full((n, n), 7.0, np.float32)
    t = (n + 15) // 16
    k(A, B, C, n, n, n, threadgroups=(t, t, 1), threads_per_threadgroup=(16, 16, 1), schedule=schedule)
    return A, B, C


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_tiled_with_both_barriers_is_clean(schedule):
    A, B, C = _run_tiled(_tiled({}), schedule=schedule)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_missing_first_barrier_is_a_race(schedule):
    k = _tiled({"BARRIER1": 0})
    with pytest.raises(DataRaceError) as e:
        _run_tiled(k, schedule=schedule)
    msg = str(e.value)
    src = str(TILED)
    # the staging write and the multiply's read are both named
    assert f"{src}:28" in msg or f"{src}:29" in msg
    assert f"{src}:34" in msg
    assert "threadgroup" in msg and "thread (" in msg


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_missing_second_barrier_is_a_race(schedule):
    k = _tiled({"BARRIER2": 0})
    with pytest.raises(DataRaceError) as e:
        _run_tiled(k, schedule=schedule)
    msg = str(e.value)
    src = str(TILED)
    assert f"{src}:34" in msg
    assert f"{src}:28" in msg or f"{src}:29" in msg


def test_simple_race_names_both_lines():
    k = load_kernel(DIAG, "tg_race_simple")
    out = np.zeros(64, np.float32)
    with pytest.raises(DataRaceError) as e:
        k(out, threads=(64, 1, 1), threads_per_threadgroup=(64, 1, 1))
    assert f"{DIAG}:74" in str(e.value) and f"{DIAG}:75" in str(e.value)
    assert np.all(out == 0)


def test_divergent_barrier():
    k = load_kernel(DIAG, "divergent_barrier")
    with pytest.raises(BarrierError) as e:
        k(np.zeros(32, np.float32), threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    msg = str(e.value)
    assert f"{DIAG}:9" in msg and f"{DIAG}:11" in msg


def test_unmasked_fragment_store_out_of_bounds_leaves_output_untouched():
    k = load_kernel(DIAG, "unmasked_store")
    n = 12
    C = np.full((n, n), -5.0, np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        k(C, n, threadgroups=(2, 2, 1), threads_per_threadgroup=(32, 1, 1))
    msg = str(e.value)
    assert "'C'" in msg and "[0, 144)" in msg and "index" in msg
    assert f"{DIAG}:21" in msg
    assert "threadgroup (" in msg and "thread (" in msg
    assert np.all(C == -5.0), "no half-written outputs"


def test_out_of_bounds_read():
    k = load_kernel(DIAG, "oob_read")
    with pytest.raises(OutOfBoundsError) as e:
        k(np.zeros(8, np.float32), np.zeros(8, np.float32), threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))
    assert "'in'" in str(e.value) and "index 8" in str(e.value) and f"{DIAG}:68" in str(e.value)


def test_simd_op_reached_by_part_of_the_simdgroup():
    k = load_kernel(DIAG, "partial_simd")
    with pytest.raises(SimdgroupDivergenceError) as e:
        k(np.zeros(32, np.int32), threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    msg = str(e.value)
    assert f"{DIAG}:28" in msg and f"{DIAG}:30" in msg and "simd_sum" in msg


def test_simd_ops_at_different_sites():
    k = load_kernel(DIAG, "split_simd")
    with pytest.raises(SimdgroupDivergenceError) as e:
        k(np.zeros(32, np.int32), threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    msg = str(e.value)
    assert f"{DIAG}:38" in msg and f"{DIAG}:40" in msg


def test_infinite_loop_times_out():
    k = load_kernel(DIAG, "spin")
    with pytest.raises(KernelTimeoutError) as e:
        k(np.zeros(1, np.int32), np.zeros(1, np.int32), threads=(4, 1, 1), threads_per_threadgroup=(4, 1, 1),
          timeout=1.0)
    msg = str(e.value)
    assert "did not finish" in msg
    assert str(DIAG) in msg


def test_trap_does_not_kill_the_caller():
    k = load_kernel(DIAG, "trap")
    out = np.zeros(8, np.int32)
    with pytest.raises(KernelCrash) as e:
        k(out, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))
    assert "SIGILL" in str(e.value) or "SIGTRAP" in str(e.value)
    assert f"{DIAG}:55" in str(e.value)
    assert np.all(out == 0)
    assert os.getpid() > 0  # still alive


def test_wild_pointer_segfault_is_reported():
    k = load_kernel(DIAG, "wild_pointer")
    with pytest.raises(KernelCrash) as e:
        k(np.zeros(8, np.int32), threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))
    assert "SIGSEGV" in str(e.value) and f"{DIAG}:61" in str(e.value)


def test_compile_error_points_at_metal_line(tmp_path):
    src = "#include <metal_stdlib>\nusing namespace metal;\n\nkernel void k(device float* o [[buffer(0)]]) {\n  o[0] = undefined_name;\n}\n"
    with pytest.raises(CompileError) as e:
        load_kernel(src, "k")
    assert "<source>:5" in str(e.value) and "undefined_name" in str(e.value)
    f = tmp_path / "bad.metal"
    f.write_text(src)
    with pytest.raises(CompileError) as e:
        load_kernel(f, "k")
    assert f"{f}:5" in str(e.value)
    assert "kernel.cpp" not in str(e.value)


def test_unknown_kernel_name():
    with pytest.raises(CompileError, match="divergent_barrier"):
        load_kernel(DIAG, "nope")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_schedules_are_deterministic_with_the_race_check_off(schedule):
    """A racy kernel's wrong answer depends on the schedule, never on luck or workers."""
    k = _tiled({"BARRIER1": 0})
    outs = []
    for workers in (1, 2, 3, 2):
        rng = np.random.default_rng(0)
        A = rng.standard_normal((40, 40)).astype(np.float32)
        B = rng.standard_normal((40, 40)).astype(np.float32)
        C = np.zeros((40, 40), np.float32)
        k(A, B, C, 40, 40, 40, threadgroups=(3, 3, 1), threads_per_threadgroup=(16, 16, 1), schedule=schedule,
          race_check=False, workers=workers)
        outs.append(C)
    for C in outs[1:]:
        assert np.array_equal(C, outs[0], equal_nan=True)  # the tile read before it is written: NaN
    assert not np.allclose(outs[0], A @ B, atol=1e-3), "the missing barrier shows in the result"


def test_simdgroup_matrix_multiply_in_divergent_branches():
    k = load_kernel(DIAG, "divergent_mma")
    with pytest.raises(SimdgroupDivergenceError) as e:
        k(np.zeros(64, np.float32), threads=32, threads_per_threadgroup=32)
    assert f"{DIAG}:81" in str(e.value) and f"{DIAG}:83" in str(e.value)


def test_compile_error_inside_the_library_is_reported_at_the_call():
    src = ("#include <metal_stdlib>\n#include <metal_simdgroup_matrix>\nusing namespace metal;\n\n"
           "kernel void k(device float* o [[buffer(0)]]) {\n  simdgroup_float8x8 m;\n  simdgroup_load(m, 5);\n"
           "  simdgroup_store(m, o);\n}\n")
    with pytest.raises(CompileError) as e:
        load_kernel(src, "k")
    msg = str(e.value)
    assert msg.startswith("<source>:7:") and "simdgroup_load" in msg
    assert "mslemu" not in msg


def test_stack_overflow_of_a_gpu_thread_is_named():
    src = """#include <metal_stdlib>
using namespace metal;
kernel void big(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float local[100000];
  for (int k = 0; k < 100000; ++k) local[k] = o[0] + k;
  o[i] = local[(i * 7919) % 100000];
}
"""
    with pytest.raises(KernelCrash, match="stack overflow of a GPU thread"):
        load_kernel(src, "big")(np.zeros(4, np.float32), threads=4, threads_per_threadgroup=4)


def test_simdgroup_multiply_by_part_of_the_simdgroup():
    k = load_kernel(DIAG, "partial_mma")
    with pytest.raises(SimdgroupDivergenceError) as e:
        k(np.zeros(64, np.float32), threads=32, threads_per_threadgroup=32)
    assert f"multiply at {DIAG}:91" in str(e.value), str(e.value)
