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


def pytest_collection_modifyitems(session, config, items) -> None:
    # tests/coverage/ first: its check makes the coverage report of these sources (a coverage
    # run, minutes on a cold compile cache), which every site build of the session then reads
    # instead of making it within its own time limit. The order is otherwise kept.
    items.sort(key=lambda item: 0 if item.nodeid.startswith("tests/coverage/") else 1)
