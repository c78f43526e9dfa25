"""The coverage reports: what a report is keyed by (a hash of every input that can change
what a coverage run executes or counts), where reports are kept, and saving and reading one.

Below both makers of a report, a coverage run (:mod:`.collect`) and a test session that
measures itself (:mod:`.session`): each imports this, and nothing here imports them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

from .. import paths
from . import gcov, generated, mode, warnings_record

VERSION = 1

class CoverageRunError(RuntimeError):
    pass


def module_file(entry: str) -> str:
    """The test file of a MODULES entry, or of a test's node id."""
    return entry.split("::", 1)[0]


#: What the key hashes: every file below these (relative to the repository root), but
#: those of IGNORED, which cannot change what a coverage run executes or counts (they
#: read its report, or never run in it).
INPUTS = ("kernels", "exercises", "snippets", "src/gemmglossary", "tests", "pyproject.toml")
IGNORED = ("tests/coverage/test_counts.py", "tests/coverage/test_excerpts_executed.py",
           "tests/coverage/test_report.py", "tests/coverage/test_site_marks.py", "tests/coverage/test_coverage_cli.py",
           "tests/coverage/test_session.py", "tests/coverage/test_warnings_record.py",
           "src/gemmglossary/docs_hooks/", "src/gemmglossary/coverage/site.py",
           "src/gemmglossary/coverage/cli.py", "src/gemmglossary/coverage/excerpts.py",
           "src/gemmglossary/coverage/exemptions.py")


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
        # the PortabilityWarnings the run's tests met, by kernel, kind and site
        "warnings": warnings_record.collected(data, root),
    }
    out = report_path(key)
    tmpf = out.with_name(f".{out.name}.{os.getpid()}")
    tmpf.write_text(json.dumps(report, indent=1) + "\n")
    os.replace(tmpf, out)
    return report


class ReportDamaged(CoverageRunError):
    """The report of these sources is there but cannot be read (truncated, hand-edited):
    said as such, never taken for "no report"."""


#: What every reader of a report needs, and the type of each (what is said about the run
#: that made it, its commit and time, is read with a default).
REPORT_FIELDS = {"version": int, "key": str, "lines": dict}


def load(key: str) -> dict | None:
    """The report of ``key``; None when there is none, or it is of another version; a report
    that cannot be read is a :class:`ReportDamaged` naming the file."""
    p = report_path(key)
    if not p.exists():
        return None
    try:
        report = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportDamaged(f"the coverage report {p} cannot be read ({exc}); `gemmglossary coverage` makes it "
                            "again (a coverage run: several minutes)") from None
    if isinstance(report, dict) and report.get("version") != VERSION:
        return None
    bad = [f for f, kind in REPORT_FIELDS.items() if not isinstance(report, dict) or not isinstance(report.get(f), kind)]
    if bad or report["key"] != key:
        raise ReportDamaged(f"the coverage report {p} is damaged ({', '.join(bad) or 'key'} missing or wrong); "
                            "`gemmglossary coverage` makes it again (a coverage run: several minutes)")
    return report
