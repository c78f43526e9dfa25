"""The checker on the GPU (skipped off Apple Silicon, with the reason), and what the emulator
does not yet get right for it."""

from __future__ import annotations

import pytest

from gemmglossary.exercises import check
from gemmglossary.runtime import metal_status

from .conftest import EXERCISES, mistake_file


@pytest.mark.metal
def test_reference_solutions_pass_on_the_gpu(monkeypatch):
    ok, reason = metal_status()
    if not ok:
        pytest.skip(reason)
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "metal")
    for exercise in EXERCISES:
        for path in [exercise.solution] + ([exercise.body.solution] if exercise.body else []):
            report = check(exercise, path)
            assert report.backend == "metal" and report.passed, report.text()


@pytest.mark.metal
def test_a_wrong_answer_fails_on_the_gpu_with_its_element(monkeypatch):
    ok, reason = metal_status()
    if not ok:
        pytest.skip(reason)
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "metal")
    exercise = next(e for e in EXERCISES if e.name == "simdgroup_matrix")
    report = check(exercise, mistake_file(exercise, exercise.mistakes[0]))
    assert report.problem.kind == "wrong" and "computed by threadgroup" in " ".join(report.text().split())


def test_an_out_of_bounds_hint_quotes_the_line_of_the_access(monkeypatch):
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    exercise = next(e for e in EXERCISES if e.name == "scale_add")
    report = check(exercise, mistake_file(exercise, exercise.mistakes[0]))
    assert report.problem.kind == "out-of-bounds"
    assert "C[i] = alpha * A[i] + beta * B[i];" in report.problem.title


class _Pipeline:
    def __init__(self, limit):
        self.max_total_threads_per_threadgroup = limit


def test_the_attribute_check_on_each_backend():
    """The emulator reports the attribute's value exactly; a Metal pipeline may report less (registers)."""
    from gemmglossary.exercises.checker import _attribute_problem

    exercise = next(e for e in EXERCISES if e.name == "max_total_threads")
    small = {"WM": 1, "WN": 2}
    assert _attribute_problem(exercise, _Pipeline(64), small, "emulator") is None
    assert _attribute_problem(exercise, _Pipeline(32), small, "emulator").kind == "attribute"
    assert _attribute_problem(exercise, _Pipeline(32), small, "metal") is None
    missing = _attribute_problem(exercise, _Pipeline(1024), {}, "metal")
    assert missing.kind == "attribute" and "does not declare" in missing.title
