"""The docs never drift: the repository's pages match its kernels and excerpts.lock.json."""

from __future__ import annotations

from gemmglossary.excerpts.check import check

from .conftest import REPO


def test_repo_excerpts_match_the_lock(monkeypatch):
    monkeypatch.delenv("GEMMGLOSSARY_ROOT", raising=False)
    report = check(REPO)
    assert report.excerpts, "no page quotes a kernel yet"
    assert not report.problems, "\n" + "\n".join(map(str, report.problems))
