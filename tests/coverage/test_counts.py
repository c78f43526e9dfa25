"""The counts of a coverage build are exact, merged over worker processes and launches,
and mapped to the .metal lines, whichever way the workers start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from gemmglossary.coverage import gcov, mode

KERNEL = """\
#include <metal_stdlib>
using namespace metal;

// a comment carries no code
kernel void branches(device float* out [[buffer(0)]],
                     constant uint& n   [[buffer(1)]],
                     uint gid [[thread_position_in_grid]])
{
    if (gid < n) {
        out[gid] = 1.0f;
    } else {
        out[gid] = 2.0f;
    }
    threadgroup_barrier(mem_flags::mem_none);
}
"""
TAKEN, NOT_TAKEN, COMMENT, SIGNATURE, BARRIER = 10, 12, 4, 5, 14

RUN = """\
import numpy as np
from gemmglossary.emulator import load_kernel
k = load_kernel({path!r}, "branches")
out = np.zeros(256, np.float32)
for _ in range({launches}):
    k(out, np.uint32(256), threads=(256, 1, 1), threads_per_threadgroup=(32, 1, 1), workers={workers})
assert (out == 1).all()
"""


def collect_in_subprocess(tmp_path, start: str, launches: int, workers: int) -> dict:
    path = tmp_path / "branches.metal"
    path.write_text(KERNEL)
    data = tmp_path / f"coverage-{launches}-{workers}"
    env = dict(os.environ, **{mode.ENV: str(data), "GEMMGLOSSARY_EMULATOR_START": start})
    r = subprocess.run([sys.executable, "-c", RUN.format(path=str(path), launches=launches, workers=workers)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return gcov.line_counts(mode.counters_dir(data), tmp_path)["branches.metal"]


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_counts_add_up_over_workers_and_launches(tmp_path, start):
    # gcov counts entries into a line's blocks (a line with a loop or a branch is entered
    # more than once per execution), so what must hold is proportionality: no worker's
    # counts are lost or overwritten when several processes write the same counters file
    one = collect_in_subprocess(tmp_path, start, launches=1, workers=1)
    three = collect_in_subprocess(tmp_path, start, launches=3, workers=3)
    assert one[TAKEN] >= 256, one  # every thread
    body = lambda counts: {n: c for n, c in counts.items() if n > SIGNATURE}  # noqa: E731
    # (the signature line also counts the caller's own calls that read the kernel's
    # parameters, once per load)
    assert body(three) == {n: 3 * c for n, c in body(one).items()}, (one, three)
    assert one[NOT_TAKEN] == 0  # executable, never executed
    assert one.get(BARRIER, 0) > 0, one  # a line that is only a call into the shim counts too
    assert COMMENT not in one and 2 not in one  # a comment, a using-declaration: no code


def test_without_coverage_nothing_is_instrumented(monkeypatch):
    monkeypatch.delenv(mode.ENV, raising=False)
    assert mode.kernel_flags([]) == [] and mode.runtime_flags() == []
    monkeypatch.setenv(mode.ENV, "/tmp/somewhere")
    monkeypatch.setenv("GCOV_PREFIX", "")
    assert "--coverage" in mode.kernel_flags([]) and mode.runtime_flags()


def test_a_gcda_without_its_notes_is_an_error(tmp_path):
    stray = tmp_path / "nowhere" / "x.gcda"
    stray.parent.mkdir()
    stray.write_bytes(b"")
    with pytest.raises(gcov.GcovError, match="notes file"):
        gcov.line_counts(tmp_path, tmp_path)
