"""A real ``mkdocs build`` with a page's mistake in a tag, and in a read-only checkout
(issue #36): one message naming the page line, no traceback; a cache that cannot be
written is only not written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .test_hook_build import build, site  # noqa: F401 - the tiny site and its build

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import read_only  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("tag, message", [
    ("{{figure gemv-rows kernel=gemv M=100000000 K=300}}",
     "docs/bad.md:3: figure gemv-rows: argument M= must be 1 to 256, got 100000000"),
    ("The tile is {{fact mlx.tile gen=1000}}.", "docs/bad.md:3: fact mlx.tile: argument gen= must be 1 to 99, got 1000"),
])
def test_a_tag_mistake_is_one_error_line_without_a_traceback(site, tag, message):  # noqa: F811
    site.page("bad.md", f"# Bad\n\n{tag}\n")
    run = build(site.root, "--strict")
    assert run.returncode == 1, run.stderr
    assert message in run.stderr and "Traceback" not in run.stderr, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) <= 2 and any(message in e for e in errors), errors  # MkDocs' "Error reading page" and ours


def test_a_read_only_checkout_builds_from_its_caches(site):  # noqa: F811
    site.page("figure.md", "# A figure\n\n{{figure quantized-word bits=4 group_size=64}}\n")
    assert build(site.root, "--strict").returncode == 0  # draws the figure into .cache/figures
    out = site.root.parent / "site-ro"
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)]
    import os

    env = {**os.environ, "GEMMGLOSSARY_ROOT": str(site.root), "NO_MKDOCS_2_WARNING": "1"}
    run = read_only.run(site.root, argv, env=env, cwd=site.root)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "gg-figure" in (out / "figure" / "index.html").read_text()
