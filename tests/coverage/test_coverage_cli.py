"""``gemmglossary coverage``: the table, the missing lines and the exit status, from a
made-up report (the real one is checked by test_excerpts_executed.py)."""

from __future__ import annotations

import json

from gemmglossary import paths
from gemmglossary.cli import main
from gemmglossary.coverage import collect


def fake_report(executed: bool) -> dict:
    lock = json.loads((paths.project_root() / "excerpts.lock.json").read_text())["excerpts"]
    lines: dict = {}
    for e in lock:
        lines.setdefault(e["file"], {})[str(e["start"])] = 1
    first = lock[0]
    lines[first["file"]][str(first["end"])] = 1 if executed else 0
    return {"lines": lines, "commit": "0123456789abcdef", "dirty": False, "seconds": 1.0, "pytest": "1 passed"}


def run(monkeypatch, capsys, report):
    monkeypatch.setattr(collect, "current", lambda **kw: report)
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(paths.project_root()))
    # the real exemptions file is made for the real report: leave it out here
    monkeypatch.setattr("gemmglossary.coverage.exemptions.path", lambda root=None: paths.project_root() / "none.toml")
    status = main(["coverage", "--no-run"])
    return status, capsys.readouterr().out


def test_the_table_has_a_row_per_excerpt_and_the_missing_lines(monkeypatch, capsys):
    lock = json.loads((paths.project_root() / "excerpts.lock.json").read_text())["excerpts"]
    status, out = run(monkeypatch, capsys, fake_report(executed=False))
    assert status == 1
    first = lock[0]
    assert f"{first['page']}: {first['file']}:{first['end']}: never executed" in out
    for e in lock:
        assert f"{e['file']}:{e['start']}-{e['end']}" in out
    assert "lines in %d excerpts executed" % len(lock) in out


def test_all_executed_exits_0(monkeypatch, capsys):
    status, out = run(monkeypatch, capsys, fake_report(executed=True))
    assert status == 0 and "never executed" not in out


def test_no_report_and_no_run_is_a_failure(monkeypatch, capsys):
    status, out = run(monkeypatch, capsys, None)
    assert status == 1 and "no coverage report" in out


def test_listed_excerpts_without_code_say_so():
    from gemmglossary.coverage.cli import _executed
    from gemmglossary.coverage.excerpts import ExcerptCoverage
    assert _executed(ExcerptCoverage("p", "f", 1, 2, (), (), {}, no_code="a comment")) == "no code"
    assert _executed(ExcerptCoverage("p", "f", 1, 2, (), (), {}, unmeasured="a macro")) == "not measured"
    assert _executed(ExcerptCoverage("p", "f", 1, 2, (), ())) == "0/0"


def _damaged_report(tmp_path, monkeypatch, text: str):
    """The report of the current sources, damaged; the cache in a folder of the test's."""
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(tmp_path / "cache"))
    key = collect.inputs_key()
    path = collect.report_path(key)
    path.write_text(text)
    return path


def test_a_truncated_report_is_named_not_taken_for_none(tmp_path, monkeypatch, capsys):
    report = fake_report(executed=True) | {"version": collect.VERSION, "modules": [], "key": "k"}
    path = _damaged_report(tmp_path, monkeypatch, json.dumps(report)[:100])  # issue 36: cut short
    assert main(["coverage", "--no-run"]) == 1
    out = capsys.readouterr().out
    assert f"the coverage report {path} cannot be read" in out and "no coverage report" not in out
    assert out.count("\n") == 1


def test_a_report_of_the_wrong_shape_is_damaged(tmp_path, monkeypatch):
    import pytest

    path = _damaged_report(tmp_path, monkeypatch, json.dumps({"version": collect.VERSION, "key": "x"}))
    with pytest.raises(collect.ReportDamaged, match=f"{path} is damaged .*lines"):
        collect.current(collect=False)


def test_a_plain_run_says_it_makes_a_damaged_report_again(tmp_path, monkeypatch):
    from gemmglossary.coverage import session

    monkeypatch.setattr(session.Session, "active", classmethod(lambda cls: None))  # not the suite's own session
    _damaged_report(tmp_path, monkeypatch, "{")
    said = []
    monkeypatch.setattr(collect, "run", lambda root, log=None: {"made": True})
    assert collect.current(log=said.append) == {"made": True}
    assert "cannot be read" in said[0] and said[0].endswith(": making it again")
