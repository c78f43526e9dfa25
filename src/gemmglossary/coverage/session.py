"""A test session that measures the coverage of the quoted kernels itself.

The whole suite runs every test of the coverage run (``collect.MODULES``) anyway; a coverage
run would then run them all a second time, instrumented, before the site could show its
excerpts' coverage. A session that runs every one of those tests (nothing selected away, no
early stop: :func:`why_not_measuring`) instead runs them once, instrumented, and leaves the
report that a coverage run of the same sources would:

- While a MODULES test runs, coverage is on in its process (:meth:`Session.instrumenting`),
  so the kernels it compiles are instrumented and their workers write their counters into
  the session's data folder. Every other test compiles as usual, optimized.
- When a test ends, its process records it as done, with its outcome (:meth:`Session.done`).
  The process that records the last MODULES test turns the counters into the report of the
  inputs' key (``reports.save_report``), or, when one of those tests failed, records why
  there is none.
- Meanwhile whatever asks for the report of that key (``collect.current``: the site build,
  the coverage checks) waits for it (:meth:`Session.wait`) instead of starting a coverage run.
  :data:`ENV` names the session's folder to its processes and their children.

A test that waits must not be handed out before any MODULES test (tests/conftest.py orders
them after), so the wait ends: with the report, with the failures, or when no test has been
recorded as done for :data:`STALL` seconds (a process died, or the session was stopped).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path

from ..file_lock import exclusive
from .. import settings
from . import mode, reports

ENV = "GEMMGLOSSARY_COVERAGE_SESSION"
#: Seconds without a MODULES test recorded as done after which a wait gives up.
STALL = 600.0
POLL = 0.5


class SessionError(RuntimeError):
    pass


class _Stall:
    """A wait's clock: true once the progress it is given has not changed for `seconds`."""

    def __init__(self, seconds: float):
        self.seconds, self.progress, self.since = seconds, None, time.monotonic()

    def __call__(self, progress: int) -> bool:
        now = time.monotonic()
        if progress != self.progress:
            self.progress, self.since = progress, now
        return now - self.since > self.seconds


def entry_of(nodeid: str, entries) -> str | None:
    """The MODULES entry (a test file, or ``file::test``) that runs the test `nodeid`."""
    for entry in entries:
        if "::" in entry:
            if nodeid == entry or nodeid.startswith((entry + "[", entry + "::")):
                return entry
        elif nodeid.startswith(entry + "::"):
            return entry
    return None


def missing_entries(entries, nodeids) -> list[str]:
    """The entries of which no test is among `nodeids`."""
    found = {entry_of(n, entries) for n in nodeids}
    return [e for e in entries if e not in found]


def why_not_measuring(config, entries, root: Path) -> str | None:
    """Why a pytest session with this `config` cannot measure the coverage itself (it would
    not run every test of `entries`, or is itself part of a coverage run), or None."""
    if mode.enabled():
        return "it runs inside a coverage run"
    if settings.value(ENV) is not None:
        return "it runs inside a test session that measures coverage"
    option = config.option
    if getattr(option, "collectonly", False) or getattr(option, "setuponly", False) or getattr(option, "setupplan", False):
        return "it runs no test (--collect-only, --setup-only or --setup-plan)"
    if getattr(option, "keyword", "") or getattr(option, "markexpr", ""):
        return "tests are selected with -k or -m"
    if getattr(option, "deselect", None):
        return "tests are deselected"
    if getattr(option, "lf", False) or getattr(option, "failedfirst", False) or getattr(option, "stepwise", False):
        return "--lf, --ff or --sw runs or orders only some tests"
    if getattr(option, "maxfail", 0):
        return "-x or --maxfail may stop the session early"
    args = [str(a) for a in config.args] or ["."]
    if any("::" in a for a in args):
        return "tests are named one by one"
    bases = [(Path(config.invocation_params.dir) / a).resolve() for a in args]
    for entry in entries:
        f = (root / reports.module_file(entry)).resolve()
        if not any(f == b or b in f.parents for b in bases):
            return f"{reports.module_file(entry)} is not among the tests this session runs"
    return None


class Session:
    """The coverage measured by one test session, in a folder its processes share."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._meta: dict | None = None

    # -- the folder
    @property
    def data(self) -> Path:
        """The coverage data folder (mode.ENV while a MODULES test runs)."""
        return self.folder / "data"

    @property
    def _done_dir(self) -> Path:
        return self.folder / "done"

    @property
    def _result(self) -> Path:
        return self.folder / "result.json"

    @property
    def meta(self) -> dict:
        if self._meta is None:
            self._meta = json.loads((self.folder / "session.json").read_text())
        return self._meta

    @property
    def key(self) -> str:
        return self.meta["key"]

    # -- set-up
    @classmethod
    def start(cls, folder: Path, root: Path, entries, nodeids) -> "Session":
        """Set up the session in `folder` (its first process) or join it (the others, which
        must have collected the same MODULES tests), and name it in :data:`ENV`."""
        folder = Path(folder)
        tests = sorted(n for n in nodeids if entry_of(n, entries))
        missing = missing_entries(entries, tests)
        if missing:
            raise SessionError(f"the session collected no test of {missing} (collect.MODULES)")
        with exclusive(folder / ".lock"):
            meta_file = folder / "session.json"
            if meta_file.is_file():
                meta = json.loads(meta_file.read_text())
                if meta["tests"] != tests:
                    raise SessionError(f"this process collected other coverage tests than the session in {folder}")
            else:
                meta = {"key": reports.inputs_key(root), "root": str(root), "modules": list(entries),
                        "tests": tests, "started": time.time()}
                folder.mkdir(parents=True, exist_ok=True)
                tmp = folder / f".session.{os.getpid()}"
                tmp.write_text(json.dumps(meta, indent=1))
                os.replace(tmp, meta_file)
        os.environ[ENV] = str(folder)
        s = cls(folder)
        s._meta = meta
        return s

    @classmethod
    def active(cls) -> "Session | None":
        """The measuring session this process belongs to, if any."""
        value = settings.value(ENV)
        if value is None or not (value / "session.json").is_file():
            return None
        return cls(value)

    def measures(self, nodeid: str) -> bool:
        return entry_of(nodeid, self.meta["modules"]) is not None

    @contextlib.contextmanager
    def instrumenting(self):
        """Coverage on (this process compiles kernels for it) for the block."""
        before = os.environ.get(mode.ENV)
        os.environ[mode.ENV] = str(self.data)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(mode.ENV, None)
            else:
                os.environ[mode.ENV] = before

    # -- progress
    def done(self, nodeid: str, failed: bool) -> None:
        """Record that the MODULES test `nodeid` ended; the last one makes the report."""
        d = self._done_dir
        d.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(nodeid.encode()).hexdigest()[:24]
        tmp = d / f".{name}.{os.getpid()}"
        tmp.write_text(json.dumps({"test": nodeid, "failed": failed}))
        os.replace(tmp, d / f"{name}.json")
        self._finish_if_complete()

    def _recorded(self) -> dict[str, bool]:
        out = {}
        for f in self._done_dir.glob("*.json"):
            r = json.loads(f.read_text())
            out[r["test"]] = r["failed"]
        return out

    def _finish_if_complete(self) -> None:
        if sum(1 for _ in self._done_dir.glob("*.json")) < len(self.meta["tests"]):
            return  # (cheap: the records are read only once there are enough of them)
        with exclusive(self.folder / ".lock"):
            if self._result.is_file():
                return
            recorded = self._recorded()
            if not set(self.meta["tests"]) <= set(recorded):
                return
            failed = sorted(t for t in self.meta["tests"] if recorded[t])
            if failed:
                result = {"failed": failed}
            else:
                root = Path(self.meta["root"])
                seconds = time.time() - self.meta["started"]
                try:
                    reports.save_report(root, self.key, self.meta["modules"], self.data,
                                        summary=f"{len(self.meta['tests'])} tests, measured by the test session",
                                        tests_seconds=seconds)
                    result = {"report": self.key}
                except Exception as exc:  # the waiters must learn why, not wait
                    result = {"error": f"{type(exc).__name__}: {exc}"}
            tmp = self.folder / f".result.{os.getpid()}"
            tmp.write_text(json.dumps(result))
            os.replace(tmp, self._result)

    def _stall_error(self, stall: float, left: int):
        return reports.CoverageRunError(
            f"waited {stall:g} s for the test session's coverage tests, and none of the {left} "
            f"coverage tests still to run ended meanwhile (a test process died, or the session "
            f"was stopped early); session folder: {self.folder}")

    def wait_for(self, nodeids, stall: float | None = None) -> dict[str, bool]:
        """Wait until the MODULES tests `nodeids` have ended; whether each failed.
        `stall`: :data:`STALL` by default."""
        stall = STALL if stall is None else stall
        wanted, stalled = set(nodeids), _Stall(stall)
        while True:
            recorded = self._recorded() if self._done_dir.is_dir() else {}
            if wanted <= set(recorded):
                return {t: recorded[t] for t in wanted}
            if stalled(len(recorded)):
                raise self._stall_error(stall, len(wanted - set(recorded)))
            time.sleep(POLL)

    def wait(self, stall: float = STALL) -> dict:
        """The session's report, once its last MODULES test has ended."""
        stalled = _Stall(stall)
        while True:
            if self._result.is_file():
                result = json.loads(self._result.read_text())
                if "report" in result:
                    report = reports.load(self.key)
                    if report is None:
                        raise reports.CoverageRunError(f"the test session's coverage report {reports.report_path(self.key)} "
                                                       "is missing or unreadable")
                    return report
                if "error" in result:
                    raise reports.CoverageRunError(f"the test session could not make its coverage report: {result['error']}")
                failed = result["failed"]
                raise reports.CoverageRunError(
                    f"this test session measures the coverage of the quoted kernels itself, and "
                    f"{len(failed)} of the tests that execute them failed, so there is no report: "
                    + ", ".join(failed[:10]) + (" ..." if len(failed) > 10 else ""))
            n = len(list(self._done_dir.glob("*.json"))) if self._done_dir.is_dir() else 0
            if stalled(n):
                raise self._stall_error(stall, len(self.meta["tests"]) - n)
            time.sleep(POLL)
