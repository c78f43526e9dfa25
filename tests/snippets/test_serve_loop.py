"""The author's loop under ``mkdocs serve`` (docs_hooks/serve.py, docs_hooks/snippet_deferred.py,
``gemmglossary bench serve``): a page converts again only when it or what it is made from
changed, the first page waits for no snippet, and the bench times it on a project of its own."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
from pathlib import Path

import markdown
import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config

from gemmglossary.bench import serve as bench_serve
from gemmglossary.docs_hooks import figures as figures_ext
from gemmglossary.docs_hooks import serve, snippet_deferred

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import git_repo  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SERVE_HOOK = ROOT / "docs" / ".hooks" / "serve.py"
SNIPPETS_HOOK = ROOT / "docs" / ".hooks" / "snippets.py"


@pytest.fixture
def fresh_state(monkeypatch):
    serve._rendered.clear()
    serve._search_entries.clear()
    for key, value in {"serving": False, "builds": 0, "figures": None}.items():
        monkeypatch.setitem(serve._state, key, value)
    for key, value in {"builds": 0, "thread": None, "folder": None}.items():
        monkeypatch.setitem(snippet_deferred._state, key, value)
    monkeypatch.setattr(figures_ext, "deferred", None)
    yield
    serve._rendered.clear()


def _pages_site(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Home\n\nSee [the other page](other.md).\n")
    (root / "docs" / "other.md").write_text("---\nterms: [tile]\n---\n# Other\n\nA tile.\n")
    (root / "mkdocs.yml").write_text(yaml.safe_dump({"site_name": "t", "docs_dir": "docs", "strict": True,
                                                     "hooks": [str(SERVE_HOOK)], "plugins": ["search"]}))
    return root


def _converted(monkeypatch) -> list[str]:
    """The Markdown texts converted from now on (their first lines)."""
    seen: list[str] = []
    original = markdown.Markdown.convert

    def convert(self, source):
        seen.append(source.strip().splitlines()[0] if source.strip() else "")
        return original(self, source)
    monkeypatch.setattr(markdown.Markdown, "convert", convert)
    return seen


def _build(root: Path, command: str) -> None:
    config = load_config(str(root / "mkdocs.yml"), site_dir=str(root / "site"))
    config.plugins.on_startup(command=command, dirty=False)
    build(config, serve_url="http://127.0.0.1:8000/" if command == "serve" else None)


def test_under_serve_only_the_edited_page_converts_again(tmp_path, monkeypatch, fresh_state):
    root = _pages_site(tmp_path / "p")
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(root))
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(tmp_path / "cache"))
    seen = _converted(monkeypatch)
    _build(root, "serve")
    assert sorted(seen) == ["# Home", "# Other"]
    first = (root / "site" / "other" / "index.html").read_text()
    seen.clear()
    _build(root, "serve")
    assert seen == []  # nothing changed: every page reused
    assert (root / "site" / "other" / "index.html").read_text() == first  # as converted, toc and title too
    (root / "docs" / "index.md").write_text("# Home\n\nEdited.\n")
    _build(root, "serve")
    assert seen == ["# Home"]
    assert "Edited." in (root / "site" / "index.html").read_text()
    seen.clear()
    # what an entry declares in its front matter changes every page (the glossary's links)
    (root / "docs" / "other.md").write_text("---\nterms: [tile, tiles]\n---\n# Other\n\nA tile.\n")
    _build(root, "serve")
    assert sorted(seen) == ["# Home", "# Other"]


def test_mkdocs_build_converts_every_page_every_time(tmp_path, monkeypatch, fresh_state):
    root = _pages_site(tmp_path / "p")
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(root))
    seen = _converted(monkeypatch)
    _build(root, "build")
    _build(root, "build")
    assert sorted(seen) == ["# Home", "# Home", "# Other", "# Other"]


def test_the_first_build_defers_the_snippets_and_later_ones_do_not(tmp_path, monkeypatch, fresh_state):
    release, ran = threading.Event(), []

    def slow(pairs):
        release.wait(30)
        ran.extend(pairs)
        return []
    monkeypatch.setattr(snippet_deferred, "ensure_all_executed", slow)
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(tmp_path))
    trigger = tmp_path / serve.TRIGGER
    trigger.parent.mkdir(parents=True)
    trigger.write_text("")
    before = trigger.stat().st_mtime_ns
    pairs = [(tmp_path / "a.py", tmp_path / "a.ipynb")]
    assert snippet_deferred.defer(pairs)  # the first build: deferred
    assert not snippet_deferred.running() and ran == []  # until the build has written its pages
    snippet_deferred.start()
    assert snippet_deferred.running()
    assert snippet_deferred.defer(pairs)  # a rebuild meanwhile: placeholders again, not a second run
    release.set()
    snippet_deferred._state["thread"].join(10)
    assert ran == pairs and trigger.stat().st_mtime_ns >= before
    assert not snippet_deferred.defer(pairs)  # afterwards a build executes what it lacks itself
    page = snippet_deferred.placeholder(tmp_path / "a.py")
    assert page.match("snippets/*/*.ipynb") and "Being executed" in page.read_text()


def test_the_first_build_shows_a_placeholder_for_each_figure_and_draws_it_meanwhile(tmp_path, monkeypatch,
                                                                                   fresh_state):
    root = tmp_path / "p"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Home\n\n{{figure matmul-flow}}\n")
    (root / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "t", "docs_dir": "docs", "strict": True, "hooks": [str(SERVE_HOOK)],
        "markdown_extensions": ["gemmglossary.docs_hooks.figures"]}))
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(root))
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(tmp_path / "cache"))
    _build(root, "serve")
    first = (root / "site" / "index.html").read_text()
    assert "Being drawn" in first and "<svg" not in first
    trigger = root / serve.TRIGGER
    touched = trigger.stat().st_mtime_ns
    serve._state["figures"].join(300)  # drawn by a process of its own
    assert trigger.stat().st_mtime_ns >= touched
    _build(root, "serve")  # the rebuild the server makes then
    again = (root / "site" / "index.html").read_text()
    assert "Being drawn" not in again and "<svg" in again
    # mkdocs build never shows a placeholder
    (root / ".cache" / "figures").rename(root / "old-figures")
    monkeypatch.setitem(serve._state, "serving", False)
    _build(root, "build")
    assert "<svg" in (root / "site" / "index.html").read_text()


SNIPPET = "# %% [markdown]\n# # A snippet\n\n# %%\nprint('ran')\n"


def _served_project(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Tiny\n")
    (root / "snippets").mkdir()
    (root / "snippets" / "s.py").write_text(SNIPPET)
    plugin = next(e for e in yaml.safe_load((ROOT / "mkdocs.yml").read_text())["plugins"]
                  if isinstance(e, dict) and "mkdocs-jupyter" in e)
    (root / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "tiny", "docs_dir": "docs", "strict": True, "hooks": [str(SNIPPETS_HOOK), str(SERVE_HOOK)],
        "plugins": [plugin], "nav": ["index.md", "snippets/s.py"]}))
    return git_repo.commit_all(root)


def test_bench_serve_times_the_first_page_and_both_edits(tmp_path):
    root = _served_project(tmp_path / "p")
    out = io.StringIO()
    run = bench_serve.run_serve(root, page="docs/index.md", snippet="s", out=out)
    assert not run.problem, run.log[-20:]
    assert run.first_page is not None and run.all_snippets is not None and run.all_snippets >= run.first_page
    assert run.page_edit is not None and run.snippet_edit is not None
    assert run.snippet_run is not None and 0 < run.snippet_run < run.snippet_edit  # executed by the rebuild
    assert any("executing 1 snippets in the background" in line for line in run.log)
    text = io.StringIO()
    bench_serve.report(run, out=text)
    assert f"{run.page_edit:.1f} s" in text.getvalue().split("page edit")[1].splitlines()[0]
    assert "snippet edit" in text.getvalue() and "its run:" in text.getvalue()
    assert subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""  # the edits were the clone's
