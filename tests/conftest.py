"""Session-wide set-up shared by every suite.

The pinned MLX headers are materialized before any test runs, so `pytest` on a
fresh checkout needs no separate `gemmglossary vendor` step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gemmglossary import vendor
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


@pytest.fixture(scope="session")
def mkdocs_site(tmp_path_factory) -> SiteBuild:
    """The real site, built once per test run and looked at by every suite that needs it
    (the site build, the snippet pages, the Zensical comparison, the browser): each of
    them asserts on the build's result itself. The first process of the run to ask builds
    it; the others wait for it and read the same build."""
    shared = _session_folder(tmp_path_factory) / "mkdocs-site"
    with exclusive(shared.with_name("mkdocs-site.lock")):
        record = shared / "build.json"
        if record.is_file():
            r = json.loads(record.read_text())
            return SiteBuild(shared / "site", subprocess.CompletedProcess(r["args"], r["returncode"], r["stdout"],
                                                                          r["stderr"]))
        env = {k: v for k, v in os.environ.items() if k != "GEMMGLOSSARY_ROOT"}
        env["NO_MKDOCS_2_WARNING"] = "1"
        env.setdefault("MPLBACKEND", "Agg")
        shared.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                "-d", str(shared / "site")]
        run = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        record.write_text(json.dumps({"args": args, "returncode": run.returncode, "stdout": run.stdout,
                                      "stderr": run.stderr}))
        return SiteBuild(shared / "site", run)


#: Test files in the order they are handed to the processes (pyproject's addopts run the
#: suite with ``-n logical --dist loadfile --no-loadscope-reorder``: each file on one process,
#: so its kernels are compiled once, in this order).
#: - tests/coverage/ first: its checks read the coverage report of these sources, made by a
#:   coverage run (on every core, minutes on a cold compile cache) that the first of them
#:   starts; everything that needs the report waits for it.
#: - Then the one file that builds the real site (tests/test_site_build.py), which needs the
#:   report too.
#: - Then the other files, those with the most tests (a rough measure of their time) first,
#:   so that no long file is left for last while the other processes idle; the files that
#:   look at the built site (the browser's) go in after the first EARLY_SHARE of the tests:
#:   by then the site is built, and their waiting for pages overlaps the others' compiling.
SITE_BUILDER = "tests/test_site_build.py"
EARLY_SHARE = 0.3


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items) -> None:
    def file_of(item) -> str:
        return item.nodeid.split("::", 1)[0]

    size: dict[str, int] = {}
    uses_site: set[str] = set()
    for item in items:
        size[file_of(item)] = size.get(file_of(item), 0) + 1
        if "mkdocs_site" in getattr(item, "fixturenames", ()) or item.nodeid.startswith("tests/browser/"):
            uses_site.add(file_of(item))
    first = [f for f in size if f.startswith("tests/coverage/")] + [f for f in size if f == SITE_BUILDER]
    rest = sorted((f for f in size if f not in first and f not in uses_site), key=lambda f: -size[f])
    early, count, total = [], 0, sum(size[f] for f in rest)
    for f in rest:
        if count >= EARLY_SHARE * total:
            break
        early.append(f)
        count += size[f]
    order = first + early + sorted(uses_site - set(first)) + rest[len(early):]
    position = {f: i for i, f in enumerate(order)}
    items.sort(key=lambda item: position[file_of(item)])  # stable: the order within a file is kept
