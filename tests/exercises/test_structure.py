"""Where a missing barrier goes, found from the loops of the source."""

from __future__ import annotations

from gemmglossary.exercises import structure
from gemmglossary.paths import kernels_dir

TILED = (kernels_dir() / "matmul_tiled.metal").read_text(encoding="utf-8")


def _line(text: str) -> int:
    return next(i for i, line in enumerate(TILED.splitlines(), 1) if text in line)


def test_loops_and_statements_of_matmul_tiled():
    k_loop, store, read = _line("for (uint k0 = 0"), _line("tileA[lid.y][lid.x] ="), _line("acc += tileA")
    at = structure.placement(TILED, store, read)
    assert at.loop.head_line == k_loop and at.loop.keyword == "for"
    assert at.first == at.first_last == store
    assert at.second == _line("for (uint k = 0")  # the read sits in the inner loop: the barrier goes before it
    assert at.second_last == at.second + 2


def test_comments_and_strings_do_not_count_as_braces():
    src = "void f() {\n  // { not a block\n  for (int i = 0; i < 3; ++i) {\n    a = \"}\";\n    b = 1;\n  }\n}\n"
    at = structure.placement(src, 4, 5)
    assert at.loop.head_line == 3 and at.loop.close_line == 6


def test_barrier_calls_in_comments_are_not_barriers():
    src = "// threadgroup_barrier(mem_flags::mem_threadgroup);\nx = 1; threadgroup_barrier(mem_flags::mem_none);\n"
    assert structure.call_lines(src, "threadgroup_barrier") == [2]


def test_outermost_block_is_the_function_a_line_is_in():
    src = ("inline void stage(threadgroup float* t) {\n  t[0] = 1;\n}\n"
           "kernel void k(threadgroup float* t) {\n  for (int i = 0; i < 2; ++i) {\n    stage(t);\n  }\n}\n")
    helper, body = structure.outermost(src, 2), structure.outermost(src, 6)
    assert (helper.open_line, helper.close_line) == (1, 3)
    assert (body.open_line, body.close_line) == (4, 8)
    assert structure.outermost(src, 9) is None
