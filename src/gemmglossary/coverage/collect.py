"""A coverage run: the test modules that execute the quoted kernels, run once with the
emulator's builds instrumented, and the line counts they leave, saved as a report.

The report is keyed by a hash of everything that can change what runs (the kernels, the
exercises, the tooling and the tests), so the site and the checks always read the counts
of the sources they show; a report for other sources is never used. Reports live in the
per-user cache (``.cache/gemmglossary/coverage/<key>.json``); one process at a time
collects (a file lock), the others wait and then read its report.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import paths
from ..file_lock import exclusive
from . import gcov, generated, mode, session

VERSION = 1

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
)


def module_file(entry: str) -> str:
    """The test file of a MODULES entry, or of a test's node id."""
    return entry.split("::", 1)[0]


#: How many pytest processes (xdist workers) share the modules: the run is mostly
#: compiling, one process per core (the machine that runs CI has 2).
JOBS = 2

#: What the key hashes: every file below these (relative to the repository root), but
#: those of IGNORED, which cannot change what a coverage run executes or counts (they
#: read its report, or never run in it).
INPUTS = ("kernels", "exercises", "snippets", "src/gemmglossary", "tests", "pyproject.toml")
IGNORED = ("tests/coverage/test_counts.py", "tests/coverage/test_excerpts_executed.py",
           "tests/coverage/test_report.py", "tests/coverage/test_site_marks.py", "tests/coverage/test_coverage_cli.py",
           "tests/coverage/test_session.py",
           "src/gemmglossary/docs_hooks/", "src/gemmglossary/coverage/site.py",
           "src/gemmglossary/coverage/cli.py", "src/gemmglossary/coverage/excerpts.py",
           "src/gemmglossary/coverage/exemptions.py")


#: What a coverage run imports that the site's own dependencies do not bring (the test
#: extra, ``pip install -e '.[test]'``), by module and the distribution that provides it.
RUN_REQUIRES = {"pytest": "pytest", "xdist": "pytest-xdist"}


class CoverageRunError(RuntimeError):
    pass


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


def input_files(root: Path | None = None):
    """(path relative to the root, path) of every file the key hashes, in a fixed order."""
    root = root or paths.project_root()
    for top in INPUTS:
        p = root / top
        files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
        for f in files:
            rel = f.relative_to(root).as_posix()
            if "__pycache__" in rel or rel.endswith(".pyc") or rel.startswith(IGNORED):
                continue
            yield rel, f


def inputs_key(root: Path | None = None) -> str:
    h = hashlib.sha256(f"coverage-{VERSION}\0".encode())
    for rel, f in input_files(root):
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:24]


def reports_dir() -> Path:
    d = Path(paths.cache_dir()) / "coverage"
    d.mkdir(parents=True, exist_ok=True)
    return d


def report_path(key: str) -> Path:
    return reports_dir() / f"{key}.json"


def log_path(key: str) -> Path:
    """The output of the coverage run's tests (their durations included)."""
    return reports_dir() / f"{key}.log"


def _commit(root: Path) -> dict:
    def git(*args):
        r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--", *INPUTS))}


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


def save_report(root: Path, key: str, modules, data: Path, *, summary: str, tests_seconds: float) -> dict:
    """Turn the counters a run of `modules` left in its data folder into the report of `key`,
    saved where :func:`load` finds it (by a coverage run, or by a test session that measured
    itself: gemmglossary.coverage.session)."""
    t0 = time.monotonic()
    counts = gcov.line_counts(mode.counters_dir(data), root, generated.Attribution(data, root))
    report = {
        "version": VERSION, "key": key, **_commit(root), "modules": list(modules),
        "pytest": summary, "tests_seconds": round(tests_seconds, 1),
        "seconds": round(tests_seconds + time.monotonic() - t0, 1),
        "lines": {f: {str(n): c for n, c in sorted(lines.items())} for f, lines in sorted(counts.items())},
    }
    out = report_path(key)
    tmpf = out.with_name(f".{out.name}.{os.getpid()}")
    tmpf.write_text(json.dumps(report, indent=1) + "\n")
    os.replace(tmpf, out)
    return report


def load(key: str) -> dict | None:
    p = report_path(key)
    if not p.is_file():
        return None
    try:
        report = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return report if report.get("version") == VERSION and report.get("key") == key else None


def current(root: Path | None = None, *, collect: bool = True, log=None) -> dict | None:
    """The report for the sources as they are now: read, or (`collect`) made by a coverage
    run, one process at a time. None when there is none and `collect` is false."""
    root = root or paths.project_root()
    key = inputs_key(root)
    report = load(key)
    if report or not collect:
        return report
    if mode.enabled():
        raise CoverageRunError("a coverage run was asked for from inside a coverage run")
    measuring = session.Session.active()
    if measuring is not None and measuring.key == key:
        return measuring.wait()  # the test session under way is measuring these sources itself
    _require_run_dependencies()
    with exclusive(reports_dir() / ".lock"):
        return load(key) or run(root, log=log)
