"""Every snippet runs to completion as a notebook, as the site executes it, and reads no
file of the repository that its cached page is not keyed by. These are the runs whose
kernel lines count as executed for the site's line coverage (collect.MODULES), so they
are a file of their own, apart from the tests of the site plumbing.

Each test executes its snippet once, with the project's own executor
(gemmglossary.docs_hooks.snippet_pages), and keeps the executed notebook where the site
build looks for it. In a session that measures coverage, the site build (started with the
session) waits for these runs instead of executing every snippet a second time
(snippet_pages.MEASURED_RUNS): the pages show these runs' output, from kernels compiled
instrumented, which compute what the optimized builds compute. A snippet also runs as a
script, the way a reader runs it (``python snippets/<name>.py``): the two differ only in
how a figure is shown (gemmglossary.snippets.show_figure), and test_snippets.py runs the
script path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gemmglossary.docs_hooks import snippet_pages
from gemmglossary.docs_hooks import snippets as snippets_hook

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = snippets_hook.snippet_paths(ROOT)
RECORDER = Path(__file__).with_name("record_inputs.py")


def _streams(nb, name: str) -> str:
    return "".join(out.get("text", "") for cell in nb.cells for out in cell.get("outputs", [])
                   if out.get("output_type") == "stream" and out.get("name") == name)


@pytest.mark.slow
@pytest.mark.parametrize("path", SNIPPETS, ids=[p.stem for p in SNIPPETS])
def test_snippet_runs(path: Path, tmp_path: Path, monkeypatch):
    record = tmp_path / "read.json"
    key = snippets_hook.cache_key(path, ROOT)  # of the inputs as they are before it runs
    monkeypatch.setenv("GEMMGLOSSARY_RECORD_INPUTS", str(record))
    monkeypatch.setenv("MPLBACKEND", os.environ.get("MPLBACKEND", "Agg"))  # as the site build's
    try:
        nb = snippet_pages.execute(path, ROOT, startup=RECORDER)
    except snippet_pages.SnippetError as exc:
        pytest.fail(str(exc)[-6000:], pytrace=False)
    assert _streams(nb, "stdout").strip(), f"{path.name} printed nothing"
    # Diagnostics are printed by the snippet, never left to go to stderr (and so to a
    # stderr box on the page).
    stderr = _streams(nb, "stderr")
    assert "Warning" not in stderr, f"{path.name} leaked a warning:\n{stderr[-3000:]}"
    # Everything of the repository the snippet read is among the inputs its cached page
    # is keyed by, so no edit can leave a stale page.
    assert record.is_file(), "the kernel wrote no record of what the snippet read (did it exit normally?)"
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
    if snippets_hook.cache_key(path, ROOT) == key:  # nothing it is keyed by changed meanwhile
        snippet_pages.keep(snippet_pages.notebook_path(path, key, ROOT), nb)
