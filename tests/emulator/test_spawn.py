"""Spawned workers (what macOS uses: a fresh process from posix_spawn, not a fork of the
caller) give the same results and reports as forked ones (issue #19)."""

import os
from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import DataRaceError, KernelCrash, OutOfBoundsError, load_kernel, workers

DIAG = Path(__file__).parent / "kernels" / "diagnostics.metal"
SRC = """#include <metal_stdlib>
using namespace metal;
kernel void scale(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  y[i] = 2.0f * x[i];
}
"""


@pytest.fixture(params=["fork", "spawn", "spawn-tempfile"])
def start(request, monkeypatch):
    monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_START", request.param.split("-")[0])
    if request.param.endswith("tempfile"):  # the region as macOS makes it: no memfd there
        monkeypatch.delattr(os, "memfd_create", raising=False)
    return request.param


def test_results_and_reports_do_not_depend_on_how_workers_start(start):
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    load_kernel(SRC, "scale")(x, y, threads=1000, threads_per_threadgroup=64, workers=3)
    assert np.array_equal(y, 2 * x)
    with pytest.raises(DataRaceError) as e:
        load_kernel(DIAG, "tg_race_simple")(np.zeros(64, np.float32), threads=64, threads_per_threadgroup=64)
    assert e.value.memory == "s"
    with pytest.raises(OutOfBoundsError) as e:
        load_kernel(DIAG, "oob_read")(np.zeros(8, np.float32), np.zeros(8, np.float32), threads=8,
                                      threads_per_threadgroup=8, workers=2)
    assert e.value.site == (str(DIAG), 68)
    with pytest.raises(KernelCrash, match="SIGILL|SIGTRAP"):
        load_kernel(DIAG, "trap")(np.zeros(8, np.int32), threads=8, threads_per_threadgroup=8)


def test_start_method_is_checked(monkeypatch):
    monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_START", "vfork")
    with pytest.raises(ValueError, match="GEMMGLOSSARY_EMULATOR_START='vfork': expected fork or spawn"):
        workers.start_method()


def test_spawned_workers_start_cheaper_than_forked_ones_from_a_process_holding_much_memory():
    """Why spawn is the default: a fork's cost grows with what the caller holds (bench
    emulator's launch-start table; here one row pair, with fewer launches)."""
    from gemmglossary.bench import launch_start

    rows = launch_start.measure(held_mb=(300,), launches=20)
    cpu = {method: caller + workers for method, _, caller, workers, _ in rows}
    assert set(cpu) == {"spawn", "fork"} and all(c > 0 for c in cpu.values()), rows
    assert cpu["fork"] > 2 * cpu["spawn"], rows


def test_the_launch_start_table_compares_each_row_with_the_spawned_one(monkeypatch):
    import io

    from gemmglossary.bench import bench_launch_start, launch_start

    monkeypatch.setattr(launch_start, "measure", lambda: [
        ("spawn", 0, 0.001, 0.004, 0.004), ("fork", 0, 0.002, 0.002, 0.003),
        ("spawn", 300, 0.001, 0.004, 0.004), ("fork", 300, 0.015, 0.015, 0.025)])
    out = io.StringIO()
    rows = bench_launch_start(out=out)
    lines = out.getvalue().splitlines()
    assert [ln.split()[:2] for ln in lines[2:6]] == [["spawn", "+0"], ["fork", "+0"], ["spawn", "+300"], ["fork", "+300"]]
    assert lines[5].split()[-1] == "6.0×" and lines[3].split()[-1] == "0.8×"
    assert all(r[-1] for r in rows)
