"""The figure cache: a second build reuses a figure; a changed kernel or argument does not."""

from __future__ import annotations

import os
import time

import pytest

from gemmglossary import figures
from gemmglossary.figures import cache
from gemmglossary.figures.base import Figure
from gemmglossary.text_args import Int


@pytest.fixture
def counted(monkeypatch, tmp_path):
    monkeypatch.setattr(cache, "cache_dir", lambda: tmp_path / "figures")
    calls = []

    def fake(*, n: Int(1, 9) = 1) -> Figure:
        calls.append(n)
        return Figure(f"<svg>{n}</svg>", "t", "a figure of n", "made here")

    monkeypatch.setitem(figures.FIGURES, "fake", fake)
    return calls


def test_second_request_is_served_from_the_cache(counted):
    a = figures.generate("fake", {"n": "2"})
    b = figures.generate("fake", {"n": "2"})
    assert a == b and counted == [2]
    figures.generate("fake", {"n": "3"})
    assert counted == [2, 3]
    figures.generate("fake", {"n": "3"}, use_cache=False)
    assert counted == [2, 3, 3]


def test_a_changed_kernel_changes_the_key(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "k.metal").write_text("// one\n")
    monkeypatch.setattr(cache, "project_root", lambda: root)
    k1 = cache.key("x", {})
    assert cache.key("x", {}) == k1 and cache.key("x", {"a": "1"}) != k1
    (root / "kernels" / "k.metal").write_text("// two\n")
    assert cache.key("x", {}) != k1


def test_a_damaged_entry_is_recomputed_and_old_ones_go(counted, tmp_path):
    figures.generate("fake")
    (entry,) = (tmp_path / "figures").glob("*.json")
    entry.write_text("{not json")
    figures.generate("fake")
    assert counted == [1, 1]
    old = time.time() - (cache.MAX_AGE_DAYS + 1) * 86400
    os.utime(entry, (old, old))
    assert cache.prune() == 1 and not entry.exists()


def test_snippets_do_not_depend_on_the_figure_generators():
    """A snippet imports this package for show_figure's matplotlib schemes; the registry
    imports generators lazily, so changing a generator does not re-execute every snippet
    (the snippet hook keys each one by the modules it imports)."""
    from pathlib import Path

    from gemmglossary.docs_hooks.snippet_inputs import modules_used

    pkg = Path(figures.__file__).resolve().parent.parent
    root = pkg.parent.parent
    used = {p.name for p in modules_used(root / "snippets" / "barriers.py", pkg) if p.parent.name == "figures"}
    assert "matplotlib_schemes.py" in used
    assert not used & {"swizzle.py", "timeline.py", "precision.py", "loads.py"}, used
    assert callable(figures.FIGURES["k-step-timeline"]) and len(figures.FIGURES) >= 15
