"""Every snippet runs to completion as a script, the way a reader runs it, and reads no
file of the repository that its cached page is not keyed by. These are the runs whose
kernel lines count as executed for the site's line coverage (collect.MODULES), so they
are a file of their own, apart from the tests of the site plumbing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemmglossary.docs_hooks import snippets as snippets_hook
from snippet_scripts import run_script

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = snippets_hook.snippet_paths(ROOT)


@pytest.mark.slow
@pytest.mark.parametrize("path", SNIPPETS, ids=[p.stem for p in SNIPPETS])
def test_snippet_runs(path: Path, tmp_path: Path):
    record = tmp_path / "read.json"
    proc = run_script(path, record=record, GEMMGLOSSARY_FIGURES=str(tmp_path))
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    assert proc.stdout.strip(), f"{path.name} printed nothing"
    # Diagnostics are printed by the snippet, never left to go to stderr (and so to a
    # stderr box on the page).
    assert "Warning" not in proc.stderr, f"{path.name} leaked a warning:\n{proc.stderr[-3000:]}"
    # Everything of the repository the snippet read is among the inputs its cached page
    # is keyed by, so no edit can leave a stale page.
    read = json.loads(record.read_text())
    inputs = {p.resolve() for p in snippets_hook.cache_inputs(path, ROOT)}
    if (ROOT / "kernels" / "vendor.toml") in inputs:  # vendored files are checked against it
        inputs |= {p.resolve() for p in (ROOT / "kernels" / "vendor").rglob("*") if p.is_file()}
    package = snippets_hook.package_dir(ROOT).resolve()
    watched = [ROOT / "kernels", package]
    used = {Path(f).resolve() for f in read["opened"] + read["launched"] + read["modules"]}
    used = {f for f in used if f.is_file() and any(f.is_relative_to(w) for w in watched)}
    assert used, "the recorder saw nothing"
    missing = sorted(str(f.relative_to(ROOT)) for f in used - inputs)
    assert not missing, f"{path.name} read files its cache key ignores: {missing}"
