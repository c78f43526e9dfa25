"""`gemmglossary zensical` with a page's mistake, and interrupted (issue #36): the page's
message first, not under the warnings about the page Zensical left out; Ctrl-C is one
line, with no site written."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from gemmglossary.docs_hooks import zensical_site

from test_zensical_build import PAGE, fixture_root, project_at  # noqa: F401 - the fixture site (no package here)

#: What Zensical 0.0.73 prints when a Markdown extension raises (shortened): a warning for
#: every link to the page it left out, its own traceback, the error, the extension's traceback.
OUTPUT = """\
Build started
\x1b[33mWarning:\x1b[0m page does not exist
    ╭─[ index.md:8:12 ]
 8 │ [barriers](glossary/barriers.md)
28 issues found
Traceback (most recent call last):
  File ".../zensical/main.py", line 81, in execute_build
RuntimeError: Python error: FactTagError: docs/glossary/barriers.md:234: argument gen= must be 1 to 99, got 1000
Traceback (most recent call last):
  File ".../facts.py", line 501, in run
"""


def test_the_page_error_is_found_in_zensicals_output():
    assert zensical_site.page_error(OUTPUT) == "docs/glossary/barriers.md:234: argument gen= must be 1 to 99, got 1000"
    multi = OUTPUT.replace("FactTagError: docs/glossary/barriers.md:234: argument gen= must be 1 to 99, got 1000",
                           "ExcerptError: 1 kernel excerpt problem(s) on docs/a.md:\n  docs/a.md:9: moved")
    assert zensical_site.page_error(multi) == "1 kernel excerpt problem(s) on docs/a.md:\n  docs/a.md:9: moved"
    # a fault of our own code is not a page's mistake: its traceback is the report
    assert zensical_site.page_error(OUTPUT.replace("FactTagError", "ZeroDivisionError")) is None


def _run(monkeypatch, tmp_path, outcome):
    monkeypatch.setattr(zensical_site, "project_root", lambda: tmp_path)
    (tmp_path / zensical_site.STAGING).mkdir(parents=True)

    def build(site_dir, strict=True, log=print, capture=True):
        if isinstance(outcome, BaseException):
            raise outcome
        return subprocess.CompletedProcess(["zensical"], 1, outcome, "")

    monkeypatch.setattr(zensical_site, "build", build)
    return zensical_site._run(SimpleNamespace(site_dir=tmp_path / "site", strict=True))


def test_a_page_error_is_said_first_and_the_output_kept(monkeypatch, tmp_path, capsys):
    assert _run(monkeypatch, tmp_path, OUTPUT) == 1
    out = capsys.readouterr().out
    assert out.startswith("gemmglossary zensical: docs/glossary/barriers.md:234: argument gen= must be 1 to 99")
    assert "page does not exist" not in out and "Traceback" not in out
    assert (tmp_path / zensical_site.STAGING / "zensical.log").read_text() == OUTPUT  # nothing lost


def test_another_failure_shows_everything(monkeypatch, tmp_path, capsys):
    assert _run(monkeypatch, tmp_path, OUTPUT.replace("FactTagError", "ZeroDivisionError")) == 1
    assert "Traceback" in capsys.readouterr().out


def test_ctrl_c_is_one_line(monkeypatch, tmp_path, capsys):
    assert _run(monkeypatch, tmp_path, KeyboardInterrupt()) == 130
    captured = capsys.readouterr()
    assert captured.err == "gemmglossary zensical: interrupted; no site was written\n" and captured.out == ""


@pytest.mark.slow
def test_a_bad_fact_under_zensical_is_said_first(fixture_root, tmp_path, capsys):  # noqa: F811
    page = fixture_root / "docs" / "glossary" / "quoted.md"
    page.write_text(PAGE + "\nThe tile is {{fact mlx.tile gen=1000}}.\n")
    try:
        with project_at(fixture_root):
            status = zensical_site._run(SimpleNamespace(site_dir=tmp_path / "site", strict=True))
    finally:
        page.write_text(PAGE)
    out = capsys.readouterr().out
    assert status == 1
    first = next(line for line in out.splitlines() if line.startswith("gemmglossary zensical:"))
    assert first == "gemmglossary zensical: docs/glossary/quoted.md:20: fact mlx.tile: argument gen= must be 1 to 99, got 1000"
    assert "Traceback" not in out
