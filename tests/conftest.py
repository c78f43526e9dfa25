"""Session-wide set-up shared by every suite.

The pinned MLX headers are materialized before any test runs, so `pytest` on a
fresh checkout needs no separate `gemmglossary vendor` step.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gemmglossary import vendor

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


@pytest.fixture(scope="session")
def mkdocs_site(tmp_path_factory) -> SiteBuild:
    """The real site, built once per session and looked at by every suite that needs it
    (the site build, the snippet pages, the Zensical comparison, the browser): each of
    them asserts on the build's result itself."""
    env = {k: v for k, v in os.environ.items() if k != "GEMMGLOSSARY_ROOT"}
    env["NO_MKDOCS_2_WARNING"] = "1"
    env.setdefault("MPLBACKEND", "Agg")
    site = tmp_path_factory.mktemp("mkdocs-site") / "site"
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    return SiteBuild(site, run)


#: The xdist groups (pyproject's addopts run the suite with ``--dist loadgroup``), in the
#: order they are handed out. ``coverage``: its checks read the coverage report of these
#: sources, made by a coverage run (on every core, minutes on a cold compile cache) that
#: the first of them starts. ``site``: every test of the real site built once, and the
#: browser, which has one chromium per process; it waits for the same report, so the two
#: groups begin together and the coverage run has the machine to itself.
FIRST_GROUPS = ("coverage", "site")


def _group(item) -> str:
    if item.nodeid.startswith("tests/coverage/"):
        return "coverage"
    if item.nodeid.startswith("tests/browser/") or "mkdocs_site" in getattr(item, "fixturenames", ()):
        return "site"
    # one module on one process: its kernels are compiled once, not once per process
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups from the marks
def pytest_collection_modifyitems(session, config, items) -> None:
    groups = {id(item): _group(item) for item in items}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[id(item)]))
    # The first groups first; then the modules with the most tests (a rough measure of
    # their time) before the small ones, so that no long module is left for last while
    # the other process idles. Within a module the order is kept.
    size: dict[str, int] = {}
    for item in items:
        size[groups[id(item)]] = size.get(groups[id(item)], 0) + 1

    def rank(item):
        g = groups[id(item)]
        return (FIRST_GROUPS.index(g), 0) if g in FIRST_GROUPS else (len(FIRST_GROUPS), -size[g])
    items.sort(key=rank)  # stable: the order within a group is kept
