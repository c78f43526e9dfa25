"""The emulator's opt-in trace (emulator/trace.py, the trace section of cpp/runtime.cpp).

Checked against what the kernels are known to do: matmul_tiled's two barriers per K step,
its one-element-per-thread load (thread y*16+x writes tileA[y][x]), tiled_gemm's deferred
multiplies met at its second barrier.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gemmglossary import emulator
from gemmglossary.kernels import KERNELS
from gemmglossary.snippets import kernel_source


def barrier_lines(name: str) -> list[int]:
    src = KERNELS[name].path.read_text().splitlines()
    return [i for i, line in enumerate(src, 1) if "threadgroup_barrier(" in line and not line.lstrip().startswith("//")]


@pytest.fixture(scope="module")
def tiled():
    return emulator.load_kernel(KERNELS["matmul_tiled"].path, "matmul_tiled")


def run_tiled(k, M=20, N=20, K=32, **kw):
    rng = np.random.default_rng(1)
    A = rng.random((M, K), dtype=np.float32)
    B = rng.random((K, N), dtype=np.float32)
    C = np.zeros((M, N), np.float32)
    d = KERNELS["matmul_tiled"].dispatch(M, N, K)
    out = k(A, B, C, M, N, K, threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup, **kw)
    return out, A, B, C


def test_off_by_default(tiled):
    out, A, B, C = run_tiled(tiled)
    assert out is None and tiled.last_trace is None
    np.testing.assert_allclose(C, A @ B, rtol=1e-5)


def test_every_thread_meets_both_barriers_of_every_k_step(tiled):
    trace, A, B, C = run_tiled(tiled, schedule=("random", 7), trace=True)
    np.testing.assert_allclose(C, A @ B, rtol=1e-5)  # tracing does not change the result
    assert trace is tiled.last_trace and trace.complete
    assert trace.threadgroups_per_grid == (2, 2, 1)
    b1, b2 = barrier_lines("matmul_tiled")
    steps = 2  # K = 32 in 16-deep steps
    for tg in [(x, y, 0) for x in range(2) for y in range(2)]:
        events = trace.threadgroup(tg)
        assert [e.step for e in events] == list(range(len(events)))
        for t in range(256):
            mine = [(e.kind, e.line) for e in events if e.thread == t and e.kind != "barrier-release"]
            assert mine == ([("start", 0)] + [("barrier-arrive", b1), ("barrier-depart", b1),
                                               ("barrier-arrive", b2), ("barrier-depart", b2)] * steps
                            + [("end", 0)]), (tg, t)
        # barrier instance i releases once, after all 256 arrivals of instance i and before
        # any departure from it (other threads may meanwhile arrive at instance i + 1)
        count = {t: 0 for t in range(256)}  # instances each thread has arrived at
        releases = []
        for e in events:
            if e.kind == "barrier-arrive":
                count[e.thread] += 1
            elif e.kind == "barrier-release":
                i = len(releases)
                assert e.line == (b1, b2)[i % 2] and e.mem_flags == 2  # mem_threadgroup
                assert all(n >= i + 1 for n in count.values()), "released before every thread arrived"
                releases.append(e.step)
            elif e.kind == "barrier-depart":
                assert len(releases) >= count[e.thread], "a thread left a barrier before it was released"
        instance = len(releases)
        assert instance == 2 * steps


def test_snapshots_show_who_wrote_each_tile_element(tiled):
    trace, A, B, C = run_tiled(tiled, trace=emulator.Tracing(threadgroups=[(1, 0)], snapshots=True))
    assert {e.threadgroup for e in trace.events} == {(1, 0, 0)}
    first = trace.snapshots[0]
    assert first.line == barrier_lines("matmul_tiled")[0] and first.threadgroup == (1, 0, 0)
    writers = first["tileA"].writers()
    assert writers.shape == (16, 16)
    assert np.array_equal(writers, np.arange(256).reshape(16, 16))  # thread y*16+x wrote tileA[y][x]
    assert first["tileA"].written_since_barrier().all()
    # tileB of threadgroup (1, 0) holds B[0:16, 16:32], zero past N = 20
    expected = np.zeros((16, 16), np.float32)
    expected[:, :4] = B[0:16, 16:20]
    np.testing.assert_array_equal(first["tileB"].values(np.float32), expected)
    # at the second barrier nothing was written since the first
    assert not trace.snapshots[1]["tileA"].written_since_barrier().any()


def test_the_snapshots_are_those_of_the_release_events_in_their_order(tiled):
    """A trace's snapshots are read with the launch and its events made when first asked
    for: both give the same snapshots, in the same order, one per barrier release."""
    trace, *_ = run_tiled(tiled, trace=emulator.Tracing(snapshots=True))
    snapshots = trace.snapshots  # before the events are made
    released = [e for e in trace.events if e.kind == "barrier-release"]
    assert len(snapshots) == len(released) == 4 * 4 and trace.complete  # 4 threadgroups, 2 K steps of 2 barriers
    assert [e.snapshot for e in released] == snapshots
    assert all(e.snapshot is None for e in trace.events if e.kind != "barrier-release")
    assert [(s.threadgroup, s.step, s.line) for s in snapshots] == [(e.threadgroup, e.step, e.line) for e in released]


def test_a_full_buffer_is_said(tiled):
    with pytest.warns(emulator.TraceTruncated, match="did not fit"):
        trace, *_ = run_tiled(tiled, trace=emulator.Tracing(max_events=10))
    assert not trace.complete and len(trace) == 10 and trace.dropped_events == 4 * (256 * 10 + 4) - 10


def test_bad_requests_are_refused(tiled):
    with pytest.raises(emulator.LaunchError, match="race_check=True"):
        run_tiled(tiled, race_check=False, trace=emulator.Tracing(snapshots=True))
    with pytest.raises(emulator.LaunchError, match="outside the grid"):
        run_tiled(tiled, trace=emulator.Tracing(threadgroups=[(5, 0)]))
    with pytest.raises(emulator.LaunchError, match="trace= must be"):
        run_tiled(tiled, trace="yes")


def test_a_failed_launch_keeps_its_trace():
    src = kernel_source("matmul_tiled.metal")
    lines = src.splitlines()
    b2 = barrier_lines("matmul_tiled")[1]
    broken = "\n".join(lines[:b2 - 1] + [""] + lines[b2:])  # B2 removed, line numbers kept
    k = emulator.load_kernel(broken, "matmul_tiled")
    with pytest.raises(emulator.DataRaceError):
        run_tiled(k, trace=True)
    arrivals = [e for e in k.last_trace.events if e.kind == "barrier-arrive"]
    assert arrivals and {e.line for e in arrivals} == {barrier_lines("matmul_tiled")[0]}


def test_simdgroup_operations_are_named():
    spec = KERNELS["tiled_gemm"]
    k = emulator.load_kernel(spec.path, "tiled_gemm")
    M = N = 64
    K = 16
    A, B, C = (np.ones((M, K), np.float32), np.ones((K, N), np.float32), np.zeros((M, N), np.float32))
    d = spec.dispatch(M, N, K)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = k(*spec.arguments(A, B, C), threadgroups=d.threadgroups,
                  threads_per_threadgroup=d.threads_per_threadgroup, trace=True)
    simd = [e for e in trace.events if e.kind.startswith("simd")]
    # the queued multiplies are computed where a result is first needed: at the second barrier
    assert {(e.operation, e.line) for e in simd} == {("simdgroup matrix multiply", barrier_lines("tiled_gemm")[1])}
    assert len(simd) == 2 * 128
    assert "simdgroup 3 lane 31" in str(next(e for e in simd if e.thread == 127))
