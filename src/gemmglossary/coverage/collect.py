"""A coverage run: the test modules that execute the quoted kernels, run once with the
emulator's builds instrumented, and the line counts they leave, saved as a report.

The report is keyed by a hash of everything that can change what runs (the kernels, the
exercises, the tooling and the tests), so the site and the checks always read the counts
of the sources they show; a report for other sources is never used. Reports live in the
per-user cache (``.cache/gemmglossary/coverage/<key>.json``); one process at a time
collects (a file lock), the others wait and then read its report.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import paths
from ..file_lock import exclusive
from . import mode, session
# (what the readers of a report also find here: collect.load, collect.CoverageRunError...)
from .reports import (VERSION, CoverageRunError, ReportDamaged, input_files, inputs_key,  # noqa: F401
                      load, log_path, module_file, report_path, reports_dir, save_report)

#: What a coverage run runs: the test modules that execute the first-party kernels, MLX's
#: kernel families and the exercises the pages quote (tests/runtime/test_coverage.py names
#: which test runs which quoted file), and every snippet, run as a reader runs it. Only
#: these run instrumented: the rest of the suite exercises the emulator's diagnostics on
#: kernels of its own, not the quoted lines. An entry is a test file or a test of one
#: (``path::name``). They are handed out in this order, the longest first (as measured on
#: the machine that runs CI), so that no long one is left to end last.
MODULES = (
    "tests/mlx/test_steel_gemm.py",
    "tests/snippets/test_snippet_runs.py",
    "tests/exercises/test_checker.py",
    "tests/mlx/test_quantized.py",
    "tests/mlx/test_sdpa_vector.py",
    "tests/mlx/test_reduce.py",
    "tests/mlx/test_gemv.py",
    "tests/mlx/test_gather.py",
    "tests/mlx/test_steel_splitk.py",
    "tests/mlx/test_nax_gemm.py",
    "tests/mlx/test_softmax.py",
    "tests/mlx/test_segmented.py",
    "tests/mlx/test_block_masked.py",
    "tests/emulator/test_first_party_kernels.py",
    "tests/coverage/test_swizzled_steel.py",
    "tests/emulator/test_double_buffered_gemm.py",
    "tests/emulator/test_half_precision_kernels.py",
    "tests/emulator/test_tensor_ops.py",
    "tests/emulator/test_decode_kernels.py",
    "tests/runtime/test_load_kernel.py",
    "tests/llama/test_llama_mul_mat.py",
    "tests/llama/test_llama_rows.py",
    # tests that run a quoted kernel on a translation unit one of the above compiles too:
    # instrumented, they take its compile from the cache instead of compiling it optimized
    # (about 20 s of the compiler in a test session, the figure of llama.cpp's q4_0 block 10)
    "tests/figures/test_entry_generators.py::test_q4_0_block_figure_is_what_llamas_mul_mv_multiplies",
    "tests/figures/test_entry_generators.py::test_splitk_bounds_are_the_slices_mlx_kernel_multiplies",
    "tests/runtime/test_steel.py",
    "tests/mlx/test_matmul.py::test_the_configuration_route_chooses_runs_on_the_emulator",
)


#: How many pytest processes (xdist workers) share the modules: the run is mostly
#: compiling, one process per core (the machine that runs CI has 2).
JOBS = 2

#: What a coverage run imports that the site's own dependencies do not bring (the test
#: extra, ``pip install -e '.[test]'``), by module and the distribution that provides it.
RUN_REQUIRES = {"pytest": "pytest", "xdist": "pytest-xdist"}


class CoverageUnavailable(RuntimeError):
    """No coverage run can be made in this environment (what it needs is not installed)."""


def missing_requirements() -> list[str]:
    """The distributions of RUN_REQUIRES that this Python cannot import."""
    return [dist for module, dist in RUN_REQUIRES.items() if importlib.util.find_spec(module) is None]


def _require_run_dependencies() -> None:
    missing = missing_requirements()
    if missing:
        raise CoverageUnavailable(
            f"a coverage run needs {', '.join(missing)}, which {sys.executable} cannot import "
            "(they come with the test dependencies: pip install -e '.[test]')")


def available(root: Path | None = None) -> bool:
    """Whether the project has the coverage run's test modules (the tests' tiny project
    copies do not)."""
    root = root or paths.project_root()
    return all((root / module_file(m)).is_file() for m in MODULES)


def run(root: Path | None = None, modules=MODULES, log=None) -> dict:
    """Run `modules` with coverage on; the report (also saved under the inputs' key)."""
    root = root or paths.project_root()
    _require_run_dependencies()
    key = inputs_key(root)
    missing = [m for m in modules if not (root / module_file(m)).is_file()]
    if missing:
        raise CoverageRunError(f"the coverage run's test modules are missing: {missing} "
                               "(gemmglossary/coverage/collect.py: MODULES)")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gemmglossary-coverage-") as tmp:
        data = Path(tmp)
        # (a run started from a test of an xdist worker must not look like one of its workers)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST")) and k != session.ENV}
        env.update({mode.ENV: str(data), "GCOV_PREFIX": str(mode.counters_dir(data)), "GCOV_PREFIX_STRIP": "0"})
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", "--durations=10",
               "-n", str(JOBS), "--dist", "loadfile", *modules]
        if log:
            log(f"coverage run: {' '.join(cmd[1:])}")
        with open(data / "pytest.log", "w+") as out:
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                status = proc.wait()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            out.seek(0)
            output = out.read()
        tests_seconds = time.monotonic() - t0
        log_path(key).write_text(output)
        if status:
            tail = "\n".join(output.splitlines()[-30:])
            raise CoverageRunError(f"the coverage run's tests failed (exit {status}; all output in "
                                   f"{log_path(key)}); no report was written:\n{tail}")
        summary = next((ln for ln in reversed(output.splitlines()) if ln.strip()), "")
        return save_report(root, key, modules, data, summary=summary, tests_seconds=tests_seconds)


def current(root: Path | None = None, *, collect: bool = True, log=None) -> dict | None:
    """The report for the sources as they are now: read, or (`collect`) made by a coverage
    run, one process at a time. None when there is none and `collect` is false."""
    root = root or paths.project_root()
    key = inputs_key(root)
    try:
        report = load(key)
    except ReportDamaged as exc:
        if not collect:
            raise
        if log:
            log(f"{exc}: making it again")
        report = None
    if report or not collect:
        return report
    if mode.enabled():
        raise CoverageRunError("a coverage run was asked for from inside a coverage run")
    measuring = session.Session.active()
    if measuring is not None and measuring.key == key:
        return measuring.wait()  # the test session under way is measuring these sources itself
    _require_run_dependencies()
    with exclusive(reports_dir() / ".lock"):
        try:
            made = load(key)  # by another process while this one waited
        except ReportDamaged:
            made = None
        return made or run(root, log=log)
