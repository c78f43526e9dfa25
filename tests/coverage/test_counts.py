"""The counts of a coverage build are exact, merged over worker processes and launches,
and mapped to the .metal lines, whichever way the workers start."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gemmglossary.coverage import gcov, generated, mode

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


FLUSH = """\
import os
import numpy as np
from gemmglossary.emulator import load_kernel
from gemmglossary.emulator.kernel import flush_coverage
k = load_kernel({path!r}, "branches")
k(np.zeros(256, np.float32), np.uint32(256), threads=(256, 1, 1), threads_per_threadgroup=(32, 1, 1), workers=1)
if {flush}:
    print(flush_coverage(), flush_coverage(), flush=True)  # (os._exit flushes nothing)
os._exit(0)  # as if the process were still running: libgcov's exit handler never writes
"""


def test_a_process_can_write_its_own_counts_before_it_ends(tmp_path):
    # a test session that measures coverage itself reads the counts while its processes live:
    # the caller's own part (its calls into the kernel object, counted on the signature line)
    # must be written on request, once
    path = tmp_path / "branches.metal"
    path.write_text(KERNEL)
    counts = {}
    for flush in (True, False):
        data = tmp_path / f"coverage-{flush}"
        env = dict(os.environ, **{mode.ENV: str(data)})
        r = subprocess.run([sys.executable, "-c", FLUSH.format(path=str(path), flush=flush)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout.split() == (["1", "0"] if flush else [])  # only what was called into since
        counts[flush] = gcov.line_counts(mode.counters_dir(data), tmp_path)["branches.metal"]
    assert counts[True][TAKEN] == counts[False][TAKEN] >= 256  # the workers write theirs in any case
    assert counts[True][SIGNATURE] > counts[False][SIGNATURE], counts


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


BODY = """\
uint i = thread_position_in_grid.x;
if (inp[i] > 0.0f) {
    out[i] = inp[i];
} else {
    out[i] = 0.0f;
}
"""
BODY_RUN = """\
import numpy as np
from pathlib import Path
import gemmglossary as gg
body = Path({path!r}).read_text()
k = gg.metal_kernel("relu", ["inp"], ["out"], body)
x = np.array([1, -1, 2, 3], np.float32)
(y,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))
assert (y == [1, 0, 2, 3]).all()
"""


def test_a_metal_kernel_bodys_lines_are_counted_in_its_file(tmp_path):
    # metal_kernel compiles the body inside generated source named /metal_kernel/<name>.metal;
    # the counts of those lines must reach the project file the body was read from
    (tmp_path / "exercises").mkdir()
    path = tmp_path / "exercises" / "relu_body.metal"
    path.write_text(BODY)
    data = tmp_path / "coverage"
    env = dict(os.environ, **{mode.ENV: str(data), "GEMMGLOSSARY_BACKEND": "emulator"})
    r = subprocess.run([sys.executable, "-c", BODY_RUN.format(path=str(path))], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    counts = gcov.line_counts(mode.counters_dir(data), tmp_path, generated.Attribution(data, tmp_path))
    lines = counts["exercises/relu_body.metal"]
    assert lines[3] > 0 and lines[5] > 0, lines  # both arms ran (x has a negative element)
    assert set(lines) <= set(range(1, 7)), lines  # no line beyond the body's own
    # without the records of the generated text, nothing is attributed
    assert "exercises/relu_body.metal" not in gcov.line_counts(mode.counters_dir(data), tmp_path)


def test_a_body_is_found_in_generated_source_only_at_a_line_start():
    from gemmglossary.mlx.custom_kernel import body_line_offset

    generated = "kernel void k() {\n  out[0] = 1;\n}\n"
    assert body_line_offset(generated, "  out[0] = 1;\n") == 1
    assert body_line_offset(generated, "\n\n  out[0] = 1;\n") == -1  # its line 3 is line 2
    assert body_line_offset(generated, "out[0] = 1;") is None  # mid-line: not this body
    assert body_line_offset(generated, "\n \n") is None


HELPER_KERNEL = """\
#include <metal_stdlib>
using namespace metal;

inline __attribute__((always_inline)) float twice(float x)
{
    return 2.0f * x;
}

kernel void doubled(device float* out [[buffer(0)]],
                    uint gid [[thread_position_in_grid]])
{
    out[gid] = twice(float(gid));
}
"""
HELPER_SIGNATURE, HELPER_BODY = 4, 6
HELPER_RUN = """\
import numpy as np
from gemmglossary.emulator import load_kernel
k = load_kernel({path!r}, "doubled")
out = np.zeros(64, np.float32)
k(out, threads=(64, 1, 1), threads_per_threadgroup=(32, 1, 1), workers=1)
assert (out == 2 * np.arange(64)).all()
"""


def test_a_forced_inline_helper_is_compiled_as_a_function_of_its_own_for_coverage(tmp_path):
    # unoptimized, gcc still inlines what is marked always_inline (MLX's METAL_FUNC: nearly
    # every helper), which made a steel GEMM instantiation one 220 KB function; a coverage
    # build blanks the mark, and the helper's entry (its signature line) then has code of its own
    path = tmp_path / "helper.metal"
    path.write_text(HELPER_KERNEL)
    data = tmp_path / "coverage"
    r = subprocess.run([sys.executable, "-c", HELPER_RUN.format(path=str(path))], env=dict(os.environ, **{mode.ENV: str(data)}),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = gcov.line_counts(mode.counters_dir(data), tmp_path)["helper.metal"]
    assert lines[HELPER_BODY] >= 64 and lines[HELPER_SIGNATURE] >= 64, lines


def test_instrumented_text_blanks_forced_inlining_in_place():
    text = ("inline __attribute__((always_inline)) float f();\n"
            "METAL_FUNC_LIKE __attribute__(( __always_inline__ )) int g();\n"
            "[[gnu::always_inline]] inline int h();\n"
            "__attribute__((noinline)) int k(); // always_inline in a comment stays\n")
    out = mode.instrumented_text(text)
    assert "always_inline" not in out.split("//")[0] and "always_inline in a comment" in out
    assert "__attribute__((noinline))" in out
    assert [len(x) for x in out.splitlines()] == [len(x) for x in text.splitlines()]  # lines and columns kept
