"""Every executable line of every excerpt the pages quote was executed by the coverage
run of the current sources (gemmglossary.coverage.collect), or is exempted with a reason.

The report is made once per source state (a coverage run of the test modules that
execute the quoted kernels; a few minutes, then cached by the inputs' hash)."""

from __future__ import annotations

import importlib.util

import pytest

from gemmglossary import paths
from gemmglossary.coverage import collect
from gemmglossary.coverage.cli import missing_lines
from gemmglossary.coverage.excerpts import all_excerpts, lock_entries


def mlx_family_tests() -> dict:
    """tests/runtime/test_coverage.py's MLX_FAMILY_TESTS (the test directories are not packages)."""
    path = paths.project_root() / "tests" / "runtime" / "test_coverage.py"
    spec = importlib.util.spec_from_file_location("_quoted_files_coverage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MLX_FAMILY_TESTS


@pytest.fixture(scope="module")
def report():
    return collect.current(log=print)


@pytest.fixture(scope="module")
def rows(report):
    return all_excerpts(report)


def test_every_executable_line_of_every_excerpt_was_executed(rows):
    root = paths.project_root()
    problems = []
    for line in missing_lines(rows):
        page, where, _ = line.split(": ")
        file, n = where.rsplit(":", 1)
        text = (root / file).read_text().split("\n")[int(n) - 1].strip()
        problems.append(f"docs/{page}: {file}:{n} was never executed by the tests: {text}")
    assert not problems, (f"{len(problems)} quoted line(s) never executed (run `gemmglossary coverage`; "
                          "exempt one only with its reason, in coverage-exemptions.toml):\n" + "\n".join(problems))


def test_every_excerpt_has_executable_lines(rows):
    # an excerpt of which the compiler compiled nothing (a template no test instantiates,
    # a #if arm no build takes) would read "0 of 0": nothing would be proved about it
    empty = [f"docs/{r.page}: {r.file}:{r.start}-{r.end}" for r in rows
             if r.executable == 0 and not r.exempt and not (r.no_code or r.unmeasured)]
    assert not empty, ("excerpts with no executable line in any coverage build (list one in "
                       "coverage-exemptions.toml's [[no_code]] only if it really holds no code, [[unmeasured]] only saying why its code is not seen):\n" + "\n".join(empty))


def test_the_report_covers_the_lock_and_these_sources(report, rows):
    assert report["key"] == collect.inputs_key()
    assert len(rows) == len(lock_entries()) > 0
    assert sum(len(r.executed) for r in rows) > 0


def test_the_run_includes_every_module_that_runs_a_quoted_mlx_file():
    # tests/runtime/test_coverage.py says which test executes which instantiation file
    assert set(mlx_family_tests().values()) <= set(collect.MODULES)


def test_the_run_runs_every_snippet(report):
    # the report's own record of what ran: the snippet test, parametrized over every snippet
    assert "tests/snippets/test_snippet_runs.py" in report["modules"]
