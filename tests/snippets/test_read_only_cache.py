"""A cached notebook in a checkout that cannot be written is used as it is; one that
would have to be made there is refused before the snippet runs (issue #36)."""

from __future__ import annotations

import errno
import os

import pytest

from gemmglossary.docs_hooks import snippet_pages
from gemmglossary.docs_hooks.snippet_pages import SnippetError, ensure_executed


def _read_only(*args, **kwargs):
    raise OSError(errno.EROFS, os.strerror(errno.EROFS))


def test_a_cached_notebook_is_used_where_its_last_use_cannot_be_recorded(tmp_path, monkeypatch):
    import nbformat

    path = tmp_path / "cache" / "x.ipynb"
    path.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), path)
    monkeypatch.setattr(os, "utime", _read_only)
    monkeypatch.setattr(snippet_pages, "execute", lambda *a: pytest.fail("executed again"))
    assert ensure_executed(tmp_path / "x.py", path) is False


def test_a_notebook_that_cannot_be_kept_is_refused_before_running(tmp_path, monkeypatch):
    monkeypatch.setattr(snippet_pages.tempfile, "mkstemp", _read_only)
    monkeypatch.setattr(snippet_pages, "execute", lambda *a: pytest.fail("ran though it could not be kept"))
    with pytest.raises(SnippetError, match=r"cannot keep the executed notebook there \(Read-only file system\)"):
        ensure_executed(tmp_path / "x.py", tmp_path / "cache" / "x.ipynb")


def test_a_figure_read_from_a_read_only_cache(tmp_path, monkeypatch):
    from gemmglossary.figures import cache
    from gemmglossary.figures.base import Figure

    monkeypatch.setattr(cache, "cache_dir", lambda: tmp_path)
    cache.store("k", Figure("<svg/>", "t", "a", "s"))
    monkeypatch.setattr(os, "utime", _read_only)
    assert cache.load("k") == Figure("<svg/>", "t", "a", "s")
