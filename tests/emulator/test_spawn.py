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
