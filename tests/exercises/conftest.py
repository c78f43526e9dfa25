"""Shared helpers: the exercises, and typical wrong answers written to stable paths.

A wrong answer is a reference solution edited by the text replacements its
exercise.toml lists. It is written under the cache folder at a path that depends only
on its text, so a second run finds the emulator's compiled kernel in the cache.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from gemmglossary import paths
from gemmglossary.exercises import spec, workspace

EXERCISES = spec.all_exercises()
MISTAKES = [(e, m) for e in EXERCISES for m in e.mistakes]
#: The exercise whose kernel is the cheapest to compile, for tests of the command itself.
CHEAPEST = "scale_add"


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv(workspace.ENV_VAR, str(tmp_path / "ws"))
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "ws"


def mistake_file(exercise: spec.Exercise, mistake: spec.Mistake) -> Path:
    source = (exercise.body.solution if mistake.form == "body" else exercise.solution).read_text(encoding="utf-8")
    for old, new in mistake.replace:
        found = source.count(old)
        assert found == 1, (f"{exercise.name}: mistake {mistake.title!r} replaces {old!r}, which occurs {found} "
                            "times in the solution (exactly once expected): update exercise.toml")
        source = source.replace(old, new)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    target = paths.cache_dir() / "exercise-tests" / exercise.name / digest / f"{exercise.name}.metal"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    return target


def ids(value):
    if isinstance(value, spec.Exercise):
        return value.name
    if isinstance(value, spec.Mistake):
        return value.title.replace(" ", "-")
    return None
