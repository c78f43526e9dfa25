"""``pytest exercises/NAME``: the check of ``gemmglossary exercise check NAME`` as a test.

``exercises/conftest.py`` loads this plugin. Each ``exercise.toml`` becomes one test that
checks the learner's copy (``gemmglossary exercise start NAME`` makes it) or the file
given with ``--exercise-file``. A failure shows the checker's report, not a traceback; an
exercise not started yet is skipped, with the command that starts it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from . import spec, workspace
from .checker import check


def pytest_addoption(parser):
    parser.addoption("--exercise-file", default=None,
                     help="check this file instead of your copy (select one exercise)")
    parser.addoption("--exercise-backend", default=None, choices=["metal", "emulator"],
                     help="run on this backend (default: automatic / $GEMMGLOSSARY_BACKEND)")


def pytest_collect_file(file_path: Path, parent):
    if file_path.name == "exercise.toml":
        return ExerciseFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config, items):
    chosen = [i for i in items if isinstance(i, ExerciseItem)]
    if config.getoption("--exercise-file") and len(chosen) > 1:
        raise pytest.UsageError(f"--exercise-file checks one exercise, but {len(chosen)} were collected "
                                "(give the exercise's folder, e.g. pytest exercises/barriers)")


class ExerciseFailed(Exception):
    """The learner's kernel does not pass; the message is the checker's report."""


class ExerciseFile(pytest.File):
    def collect(self):
        yield ExerciseItem.from_parent(self, name="check", exercise=spec.load(self.path.parent))


class ExerciseItem(pytest.Item):
    def __init__(self, *, exercise: spec.Exercise, **kwargs):
        super().__init__(**kwargs)
        self.exercise = exercise

    def runtest(self):
        given = self.config.getoption("--exercise-file")
        path = Path(given) if given else workspace.learner_file(self.exercise)
        if path is None:
            pytest.skip(f"you have no copy of {self.exercise.name} yet: run `gemmglossary exercise start "
                        f"{self.exercise.name}` (or pass --exercise-file)")
        report = check(self.exercise, path, backend_name=self.config.getoption("--exercise-backend"))
        try:
            workspace.record(self.exercise, path, report.passed, report.backend)
        except workspace.NotRecorded:
            pass  # a reference solution, or a scratch file failing after a solution: by design
        except workspace.WorkspaceError as exc:  # the outcome stands; only its record is missing
            warnings.warn(f"exercise {self.exercise.name}: not recorded: {exc}", stacklevel=1)
        if not report.passed:
            raise ExerciseFailed(report.text())

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ExerciseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"exercise {self.exercise.name}"
