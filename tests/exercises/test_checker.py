"""Every reference solution passes; every skeleton as shipped fails with a hint; each typical
wrong answer listed in an exercise.toml produces the problem and the hint it names.

These compile kernels on the emulator (one compile per solution variant, skeleton and
wrong answer); the checker stops at the first failing case, so most wrong answers cost
one compile and one launch.
"""

from __future__ import annotations

import pytest

from gemmglossary.exercises import check

from .conftest import EXERCISES, MISTAKES, ids, mistake_file

pytestmark = pytest.mark.usefixtures("emulator_backend")


@pytest.fixture
def emulator_backend(monkeypatch):
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")


def test_every_kernel_file_of_every_exercise_is_checked_here():
    """What tests/runtime/test_coverage.py counts as executed (Exercise.kernel_files) is run below."""
    run_here = ({e.solution for e in EXERCISES} | {e.body.solution for e in EXERCISES if e.body}
                | {p for p in SKELETONS})
    assert run_here == {p for e in EXERCISES for p in e.kernel_files}


@pytest.mark.parametrize("exercise", EXERCISES, ids=ids)
def test_reference_solution_passes(exercise):
    report = check(exercise, exercise.solution)
    assert report.passed, report.text()
    assert len(report.runs) == len(exercise.cases) * len(exercise.variants)
    assert report.text().endswith("Solved.")


@pytest.mark.parametrize("exercise", [e for e in EXERCISES if e.body], ids=ids)
def test_reference_body_passes_through_metal_kernel(exercise):
    report = check(exercise, exercise.body.solution)
    assert report.form == "body"
    assert report.passed, report.text()


SKELETONS = [e.skeleton for e in EXERCISES] + [e.body.skeleton for e in EXERCISES if e.body]


@pytest.mark.parametrize("skeleton", SKELETONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_skeleton_as_shipped_fails_with_a_hint(skeleton):
    exercise = next(e for e in EXERCISES if skeleton in (e.skeleton, e.body and e.body.skeleton))
    report = check(exercise, skeleton)
    text = report.text()
    assert not report.passed
    assert report.problem.kind not in ("crash", "compile"), text
    assert "Hint:" in text and "Traceback" not in text, text
    assert "Still marked TODO(exercise)" in text, "the report points at the parts left to write"
    assert text.rstrip().splitlines()[-1].startswith("FAIL:")


@pytest.mark.parametrize("exercise,mistake", MISTAKES, ids=ids)
def test_typical_mistake_gets_its_hint(exercise, mistake):
    report = check(exercise, mistake_file(exercise, mistake))
    text = report.text()
    assert not report.passed, f"{mistake.title!r} passed the checker:\n{text}"
    assert report.problem.kind == mistake.expect, text
    flat = " ".join(text.split())  # reports are wrapped: compare whitespace aside
    missing = [h for h in mistake.hint if " ".join(h.split()) not in flat]
    assert not missing, f"{exercise.name}: {mistake.title!r}: the report lacks {missing}:\n{text}"
