"""Session-wide set-up shared by every suite.

The pinned MLX headers are materialized before any test runs, so `pytest` on a
fresh checkout needs no separate `gemmglossary vendor` step.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from gemmglossary import vendor
from gemmglossary.coverage import collect
from gemmglossary.coverage import mode as coverage_mode
from gemmglossary.coverage import session as coverage_session
from gemmglossary.emulator.kernel import flush_coverage
from gemmglossary.file_lock import exclusive

REPO = Path(__file__).resolve().parents[1]


def pytest_sessionstart(session: pytest.Session) -> None:
    try:
        vendor.ensure()
    except vendor.VendorError as exc:
        raise pytest.UsageError(f"the pinned MLX files the tests run: {exc}") from None


@dataclass
class SiteBuild:
    """One ``mkdocs build --strict`` of the real site."""

    site: Path
    run: subprocess.CompletedProcess

    @property
    def log(self) -> str:
        return self.run.stdout + self.run.stderr


def _session_folder(tmp_path_factory) -> Path:
    """A folder of this test run shared by all its processes (an xdist worker's own
    temporary folder is one level below the run's)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _shared_site(folder: Path) -> Path:
    return folder / "mkdocs-site"


def _build_site(shared: Path, env: dict, started: list | None = None) -> SiteBuild:
    """The run's build of the real site: read, or (the first process to ask) made."""
    with exclusive(shared.with_name("mkdocs-site.lock")):
        record = shared / "build.json"
        if record.is_file():
            r = json.loads(record.read_text())
            return SiteBuild(shared / "site", subprocess.CompletedProcess(r["args"], r["returncode"], r["stdout"],
                                                                          r["stderr"]))
        shared.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                "-d", str(shared / "site")]
        proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if started is not None:
            started.append(proc)
        try:
            stdout, stderr = proc.communicate(timeout=1800)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        run = subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)
        record.write_text(json.dumps({"args": args, "returncode": run.returncode, "stdout": run.stdout,
                                      "stderr": run.stderr}))
        return SiteBuild(shared / "site", run)


def _site_env() -> dict:
    # (the build runs no test: coverage is never on in it, whatever test is running now)
    env = {k: v for k, v in os.environ.items() if k not in ("GEMMGLOSSARY_ROOT", coverage_mode.ENV)}
    env["NO_MKDOCS_2_WARNING"] = "1"
    env.setdefault("MPLBACKEND", "Agg")
    return env


@pytest.fixture(scope="session")
def mkdocs_site(tmp_path_factory) -> SiteBuild:
    """The real site, built once per test run and looked at by every suite that needs it
    (the site build, the snippet pages, the Zensical comparison, the browser): each of
    them asserts on the build's result itself. The first process of the run to ask builds
    it (in a session that measures coverage, one starts it in the background as soon as
    the tests are collected); the others wait for it and read the same build."""
    return _build_site(_shared_site(_session_folder(tmp_path_factory)), _site_env())


#: Test files in the order they are handed to the processes (pyproject's addopts run the
#: suite with ``-n logical --dist loadfile --no-loadscope-reorder``: each file on one process,
#: so its kernels are compiled once, in this order).
#:
#: A session that runs every test of the coverage run (collect.MODULES) measures coverage
#: itself (gemmglossary.coverage.session): those tests run once, instrumented, and the
#: site build and the coverage checks wait for the report they leave. So:
#: - the MODULES files first, in their order (the longest first);
#: - then EARLY_SHARE of the other files that need neither the report nor the site,
#:   which keep the processes busy while the last MODULES tests end and the site is built
#:   (started in the background when the session starts);
#: - then tests/coverage/ and the one file that builds the real site (SITE_BUILDER), then
#:   the files that look at the built site (the browser's), each followed by one of the
#:   rest (the largest first), then the rest.
#: Nothing that waits for the report is ever handed out before a MODULES test, so every
#: wait ends.
#:
#: A session that runs only some of them (``pytest tests/test_site_build.py``, ``-k``...)
#: leaves the report to a coverage run of its own, which the first test to need it starts:
#: tests/coverage/ then goes first, then SITE_BUILDER, then the rest as above.
SITE_BUILDER = "tests/test_site_build.py"
EARLY_SHARE = 0.3
#: The file that looks at the site longest (the tour of every page), handed out first
#: among those that do, so that it is not the last to end.
LONGEST_LOOKS = ("tests/browser/test_browser_site.py",)


def _measuring(config) -> bool:
    return getattr(config, "_gemmglossary_measuring", False)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items) -> None:
    reason = coverage_session.why_not_measuring(config, collect.MODULES, REPO)
    measuring = reason is None and not coverage_session.missing_entries(collect.MODULES, [i.nodeid for i in items])
    config._gemmglossary_measuring = measuring
    size: dict[str, int] = {}
    uses_site: set[str] = set()
    for item in items:
        size[collect.module_file(item.nodeid)] = size.get(collect.module_file(item.nodeid), 0) + 1
        if "mkdocs_site" in getattr(item, "fixturenames", ()) or item.nodeid.startswith("tests/browser/"):
            uses_site.add(collect.module_file(item.nodeid))
    waits = [f for f in size if f.startswith("tests/coverage/")] + [f for f in size if f == SITE_BUILDER]
    modules = {collect.module_file(e) for e in collect.MODULES} if measuring else set()
    if modules & uses_site:
        # its site test could be handed out before the file's own coverage tests had ended
        raise pytest.UsageError(f"{sorted(modules & uses_site)}: a file of the coverage run's tests "
                                "(collect.MODULES) must not look at the site, whose build waits for them "
                                "all: move that test to a file of its own")
    first = [f for f in dict.fromkeys(collect.module_file(e) for e in collect.MODULES) if f in modules and f in size]
    waits = [f for f in waits if f not in modules]
    rest = sorted((f for f in size if f not in modules and f not in waits and f not in uses_site),
                  key=lambda f: -size[f])
    early, count, total = [], 0, sum(size[f] for f in rest)
    for f in rest:
        if count >= EARLY_SHARE * total:
            break
        early.append(f)
        count += size[f]
    if measuring:
        # the browser's files wait on the page more than they compute: each goes in beside
        # a file that computes, so that one process waits while the other compiles
        looks = sorted(uses_site - set(waits) - modules, key=lambda f: (f not in LONGEST_LOOKS, f))
        computes = rest[len(early):]
        paired = [f for pair in zip(looks, computes) for f in pair]
        order = first + early + waits + paired + looks[len(paired) // 2:] + computes[len(paired) // 2:]
    else:
        order = waits + early + sorted(uses_site - set(waits)) + rest[len(early):]
    position = {f: i for i, f in enumerate(order)}
    items.sort(key=lambda item: position[collect.module_file(item.nodeid)])  # stable: the order within a file is kept


_background: dict = {}


def pytest_collection_finish(session) -> None:
    # What collection made (every test module and what it imports: most of a test process's
    # 300 MB of objects) lives to the end of the session; out of the collector's reach, it is
    # no longer walked by each full collection (96 of them in the two test processes of a
    # suite, 12 of their 14 s of garbage collection, measured on 7 December).
    gc.collect()
    gc.freeze()
    config = session.config
    if not _measuring(config):
        return
    folder = _session_folder(config._tmp_path_factory)
    config._gemmglossary_session = coverage_session.Session.start(
        folder / "coverage-session", REPO, collect.MODULES, [i.nodeid for i in session.items])
    if any(collect.module_file(i.nodeid) == SITE_BUILDER or i.nodeid.startswith("tests/browser/") for i in session.items):
        # the site's snippets run meanwhile; its excerpts wait for the report
        started: list = []
        env = _site_env()
        thread = threading.Thread(target=_build_site, args=(_shared_site(folder), env, started),
                                  name="site-build", daemon=True)
        thread.start()
        _background.update(thread=thread, started=started)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    measured = getattr(item.config, "_gemmglossary_session", None)
    if measured is None or not measured.measures(item.nodeid):
        yield
        return
    failed = []
    item._gemmglossary_failed = failed
    with measured.instrumenting():
        yield
    flush_coverage()  # this process's own counts, which libgcov would write only when it exits
    measured.done(item.nodeid, bool(failed))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    failed = getattr(item, "_gemmglossary_failed", None)
    if failed is not None and outcome.get_result().failed:
        failed.append(call.when)


def pytest_sessionfinish(session, exitstatus) -> None:
    thread = _background.get("thread")
    if thread is None:
        return
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        for proc in _background["started"]:
            if proc.poll() is None:
                proc.kill()
    thread.join()
