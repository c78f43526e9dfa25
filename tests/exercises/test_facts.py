"""The facts read from emulator diagnostics, in the message formats of the emulator today.

The hint logic reads attributes of the exceptions when the emulator sets them, and falls
back on the text: these messages (copied from real runs) pin that fallback, so a change of
format shows up here and not as a vague hint.
"""

from __future__ import annotations

from gemmglossary.emulator import DataRaceError, OutOfBoundsError, PortabilityWarning
from gemmglossary.exercises import facts
from gemmglossary.exercises.facts import Site, Thread

RACE = ("kernel 'matmul_tiled': data race on threadgroup memory 'tileA[0][0]' in threadgroup (0,2,0): "
        "thread (1,0,0) [index 1, simdgroup 0 lane 1] reads it at /w/k.metal:56, but thread (0,0,0) "
        "[index 0, simdgroup 0 lane 0] wrote it at /w/k.metal:49 with no "
        "threadgroup_barrier(mem_flags::mem_threadgroup) in between")
OOB = ("kernel 'matmul_tiled': out-of-bounds access to 'C': element index 950 is outside the valid range "
       "[0, 660) (4-byte elements) at /w/k.metal:66 in threadgroup (0,2,0), thread (10,15,0) "
       "[index 250, simdgroup 7 lane 26]\n(if the kernel only reads out of bounds and discards the values, "
       "oob_reads='warn' lets such reads return 0)")
UNINIT = ("kernel 'matmul_tiled': thread (0,0,0) [index 0, simdgroup 0 lane 0] reads threadgroup memory "
          "'tileB[1][0]' at /w/k.metal:57 in threadgroup (0,2,0) before any thread of the threadgroup wrote "
          "it; threadgroup memory starts with undefined contents on a GPU (the emulator fills it with 0xFF bytes: NaN as a float, -1 or the largest value as "
          "an integer)")
RETURNED = ("kernel 'matmul_tiled': threads 16-255 of threadgroup (0,2,0) returned before the "
            "threadgroup_barrier at /w/k.metal:54; Apple GPUs let returned threads skip barriers, but the "
            "Metal specification requires every thread to reach them (not portable)")


def test_race_names_both_accesses():
    f = facts.of(DataRaceError(RACE))
    assert f.kind == "race" and f.threadgroup == (0, 2, 0)
    assert (f.memory, f.element) == ("tileA", "tileA[0][0]")
    assert (f.site, f.access) == (Site("/w/k.metal", 56), "read")
    assert (f.other_site, f.other_access) == (Site("/w/k.metal", 49), "write")
    assert f.thread == Thread((1, 0, 0), 1, 0, 1) and f.other_thread == Thread((0, 0, 0), 0, 0, 0)


def test_out_of_bounds_names_buffer_element_and_line():
    f = facts.of(OutOfBoundsError(OOB))
    assert (f.kind, f.memory, f.index, f.length) == ("out-of-bounds", "C", 950, 660)
    assert f.site == Site("/w/k.metal", 66) and f.threadgroup == (0, 2, 0)
    assert f.thread == Thread((10, 15, 0), 250, 7, 26)
    assert f.access is None  # today's text does not say; the hint infers it from the buffer


def test_out_of_bounds_read_or_write_when_the_message_says_it():
    f = facts.of(OutOfBoundsError(OOB.replace("out-of-bounds access to", "out-of-bounds write to")))
    assert (f.access, f.memory, f.index) == ("write", "C", 950)


def test_portability_warnings():
    u = facts.of(PortabilityWarning(UNINIT))
    assert (u.kind, u.warning, u.element, u.memory) == ("warning", "uninitialized-read", "tileB[1][0]", "tileB")
    assert u.site == Site("/w/k.metal", 57)
    r = facts.of(PortabilityWarning(RETURNED))
    assert (r.warning, r.site, r.threadgroup) == ("returned-before-barrier", Site("/w/k.metal", 54), (0, 2, 0))


def test_attributes_win_over_the_text():
    exc = OutOfBoundsError(OOB)
    exc.access, exc.buffer, exc.index, exc.site = "read", "A", 7, ("/w/other.metal", 12)
    f = facts.of(exc)
    assert (f.access, f.memory, f.index, f.site) == ("read", "A", 7, Site("/w/other.metal", 12))
    assert f.length == 660  # not given as an attribute: still read from the text


def test_errors_from_outside_the_emulator():
    class MetalError(RuntimeError):
        pass

    assert facts.of(MetalError("threadgroup of 256 threads exceeds ...")).kind == "launch"
    assert facts.of(ValueError("Thread group size (2048) is greater than ...")).kind == "launch"
    assert facts.of(RuntimeError("something else")).kind == "crash"
