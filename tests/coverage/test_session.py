"""A test session that measures coverage itself (gemmglossary.coverage.session): which
sessions may, how their processes record the coverage tests, and what waits for the
report get: the report, the failures, or an error when the tests stop coming."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gemmglossary.coverage import collect, mode, session
from gemmglossary.coverage import reports as report_store

ENTRIES = ("tests/a_test.py", "tests/b_test.py::test_runs")
TESTS = ["tests/a_test.py::test_one", "tests/a_test.py::test_two[x]",
         "tests/b_test.py::test_runs[first]", "tests/b_test.py::test_runs[second]"]
OTHER = ["tests/b_test.py::test_runs_not", "tests/c_test.py::test_three"]


def config(tmp_path, *args, **options):
    defaults = dict(keyword="", markexpr="", deselect=None, lf=False, failedfirst=False, stepwise=False, maxfail=0,
                    collectonly=False, setuponly=False, setupplan=False)
    return SimpleNamespace(option=SimpleNamespace(**{**defaults, **options}), args=list(args),
                           invocation_params=SimpleNamespace(dir=tmp_path))


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(session.ENV, raising=False)
    monkeypatch.delenv(mode.ENV, raising=False)
    r = tmp_path / "project"
    (r / "tests").mkdir(parents=True)
    for f in ("a_test.py", "b_test.py", "c_test.py"):
        (r / "tests" / f).write_text("")
    return r


@pytest.fixture
def reports(monkeypatch):
    """save_report without gcov: a report naming what it was given."""
    made = []

    def save_report(root, key, modules, data, *, summary, tests_seconds):
        report = {"version": collect.VERSION, "key": key, "modules": list(modules), "pytest": summary, "lines": {}}
        collect.report_path(key).write_text(json.dumps(report))
        made.append(report)
        return report
    monkeypatch.setattr(report_store, "save_report", save_report)
    return made


def test_a_test_belongs_to_the_entry_that_runs_it():
    assert session.entry_of("tests/a_test.py::test_one", ENTRIES) == "tests/a_test.py"
    assert session.entry_of("tests/b_test.py::test_runs[first]", ENTRIES) == "tests/b_test.py::test_runs"
    assert session.entry_of("tests/b_test.py::test_runs", ENTRIES) == "tests/b_test.py::test_runs"
    # another test of the same file, whose name only starts like the entry's
    assert session.entry_of("tests/b_test.py::test_runs_not", ENTRIES) is None
    assert session.entry_of("tests/c_test.py::test_three", ENTRIES) is None


def test_only_a_session_that_runs_every_coverage_test_measures(root, monkeypatch):
    assert session.why_not_measuring(config(root), ENTRIES, root) is None
    assert session.why_not_measuring(config(root, "tests"), ENTRIES, root) is None
    assert session.why_not_measuring(config(root, "tests/a_test.py", "tests/b_test.py"), ENTRIES, root) is None
    refused = {
        "-k": config(root, keyword="steel"),
        "-m": config(root, markexpr="browser"),
        "--deselect": config(root, deselect=["tests/a_test.py::test_one"]),
        "--lf": config(root, lf=True),
        "-x": config(root, maxfail=1),
        "--collect-only": config(root, collectonly=True),
        "one test": config(root, "tests/a_test.py::test_one", "tests/b_test.py"),
        "some files": config(root, "tests/a_test.py"),
    }
    for what, cfg in refused.items():
        assert session.why_not_measuring(cfg, ENTRIES, root), what
    assert "tests/b_test.py" in session.why_not_measuring(config(root, "tests/a_test.py"), ENTRIES, root)
    monkeypatch.setenv(mode.ENV, str(root / "data"))
    assert "inside a coverage run" in session.why_not_measuring(config(root), ENTRIES, root)


def test_the_last_test_recorded_makes_the_report_that_the_waiters_get(root, tmp_path, reports):
    s = session.Session.start(tmp_path / "run", root, ENTRIES, TESTS + OTHER)
    assert s.meta["tests"] == sorted(TESTS)  # only the coverage tests are waited for
    assert session.Session.active().folder == s.folder  # named to this process and its children
    assert [s.measures(t) for t in TESTS + OTHER] == [True] * 4 + [False] * 2

    got = []
    waiter = threading.Thread(target=lambda: got.append(collect.current(root)))
    waiter.start()
    for t in TESTS:
        time.sleep(0.05)
        assert not reports  # no report before the last one
        s.done(t, failed=False)
    waiter.join(timeout=10)
    assert len(reports) == 1
    assert got and got[0]["key"] == collect.inputs_key(root) and got[0]["modules"] == list(ENTRIES)


def test_coverage_is_on_only_while_a_coverage_test_runs(root, tmp_path):
    s = session.Session.start(tmp_path / "run", root, ENTRIES, TESTS)
    assert not mode.enabled()
    with s.instrumenting():
        assert mode.data_dir() == s.data.resolve()
    assert not mode.enabled()


def test_a_failed_coverage_test_is_named_to_the_waiters_and_no_report_is_made(root, tmp_path, reports):
    s = session.Session.start(tmp_path / "run", root, ENTRIES, TESTS)
    for t in TESTS:
        s.done(t, failed=t.endswith("[second]"))
    with pytest.raises(collect.CoverageRunError, match=r"1 of the tests .* failed.*test_runs\[second\]"):
        s.wait()
    assert not reports


def test_a_wait_gives_up_when_no_test_ends_for_a_while(root, tmp_path, reports):
    s = session.Session.start(tmp_path / "run", root, ENTRIES, TESTS)
    s.done(TESTS[0], failed=False)
    t0 = time.monotonic()
    with pytest.raises(collect.CoverageRunError, match="none of the 3 coverage tests still to run ended"):
        s.wait(stall=1.0)
    assert time.monotonic() - t0 < 5


def test_a_wait_for_some_tests_ends_when_they_have_ended_with_their_outcomes(root, tmp_path, reports):
    s = session.Session.start(tmp_path / "run", root, ENTRIES, TESTS)
    first, second = TESTS[0], TESTS[1]
    s.done(first, failed=False)
    ended = threading.Timer(0.5, s.done, args=(second,), kwargs={"failed": True})
    ended.start()
    try:
        assert s.wait_for([first, second], stall=10.0) == {first: False, second: True}
    finally:
        ended.cancel()
    assert not reports  # the other tests have not ended: no report yet
    with pytest.raises(collect.CoverageRunError, match="none of the 1 coverage tests still to run ended"):
        s.wait_for([first, TESTS[2]], stall=1.0)


def test_the_processes_of_a_session_must_have_collected_the_same_tests(root, tmp_path):
    session.Session.start(tmp_path / "run", root, ENTRIES, TESTS)
    session.Session.start(tmp_path / "run", root, ENTRIES, list(reversed(TESTS)))  # order does not matter
    with pytest.raises(session.SessionError, match="other coverage tests"):
        session.Session.start(tmp_path / "run", root, ENTRIES, TESTS[:-1] + ["tests/b_test.py::test_runs[third]"])
    with pytest.raises(session.SessionError, match="no test of"):
        session.Session.start(tmp_path / "run2", root, ENTRIES, TESTS[:2])


def test_a_waiter_for_other_sources_does_not_wait(root, tmp_path, reports, monkeypatch):
    # (a tiny project's build in a test, say): its key is not the session's
    session.Session.start(tmp_path / "run", root, ENTRIES, TESTS)
    other = tmp_path / "other"
    other.mkdir()
    (other / "kernels").mkdir()
    (other / "kernels" / "k.metal").write_text("// another source\n")
    ran = []
    monkeypatch.setattr(collect, "run", lambda root=None, log=None: ran.append(root) or {"key": "x"})
    monkeypatch.setattr(collect, "_require_run_dependencies", lambda: None)
    assert collect.current(other) == {"key": "x"} and ran == [other]


def test_a_coverage_run_started_from_a_session_is_not_part_of_it(root, tmp_path, monkeypatch):
    session.Session.start(tmp_path / "run", root, ENTRIES, TESTS)
    seen = {}

    class Stop(Exception):
        pass

    def popen(cmd, cwd, env, **kw):
        seen.update(env)
        raise Stop
    monkeypatch.setattr(collect.subprocess, "Popen", popen)
    monkeypatch.setattr(collect, "_require_run_dependencies", lambda: None)
    monkeypatch.setattr(collect, "MODULES", ())
    with pytest.raises(Stop):
        collect.run(root, modules=())
    assert session.ENV not in seen and mode.ENV in seen
    assert Path(seen[mode.ENV]) != tmp_path / "run" / "data"


def test_a_build_in_the_session_waits_for_its_snippet_runs_instead_of_executing_them(root, tmp_path, reports,
                                                                                    monkeypatch):
    """The site build starts with the session; the session's own test_snippet_runs tests
    execute the snippets and keep their notebooks, so the build waits for those tests
    rather than execute every snippet a second time (snippet_pages.MEASURED_RUNS)."""
    from gemmglossary.docs_hooks import snippet_pages

    runs = [f"{snippet_pages.MEASURED_RUNS}::test_snippet_runs[one]"]
    (root / snippet_pages.MEASURED_RUNS).parent.mkdir(parents=True)
    (root / snippet_pages.MEASURED_RUNS).write_text("")
    (root / "snippets").mkdir()
    snippet = root / "snippets" / "one.py"
    snippet.write_text("print(1)\n")
    notebook = tmp_path / "one.ipynb"
    s = session.Session.start(tmp_path / "run", root, (*ENTRIES, snippet_pages.MEASURED_RUNS), TESTS + runs)
    executed = []

    def execute(snippet, path, project=None):
        executed.append((time.monotonic(), path.is_file()))
        return not path.is_file()
    monkeypatch.setattr(snippet_pages, "ensure_executed", execute)

    def run_the_snippet_test():
        notebook.write_text("{}")
        s.done(runs[0], failed=False)
    started = time.monotonic()
    ended = threading.Timer(1.0, run_the_snippet_test)
    ended.start()
    try:
        assert snippet_pages.ensure_all_executed([(snippet, notebook)], root, jobs=1) == []
    finally:
        ended.cancel()
    (when, found), = executed
    assert when - started >= 0.9 and found, "the build looked before the session's snippet test ended"

    # the other MODULES tests have not ended: the snippets' own tests are all it waits for,
    # and a snippet outside the project's snippets/ (a tiny site of a test) waits for nothing
    executed.clear()
    other = tmp_path / "elsewhere" / "two.py"
    assert snippet_pages.ensure_all_executed([(other, tmp_path / "two.ipynb")], root, jobs=1) == [other]
    (_, found), = executed
    assert not found

    # a snippet test that never ends (its process died): the build fails, saying so
    monkeypatch.setattr(session, "STALL", 1.0)
    s = session.Session.start(tmp_path / "run2", root, (*ENTRIES, snippet_pages.MEASURED_RUNS), TESTS + runs)
    with pytest.raises(snippet_pages.SnippetError, match=r"left to tests/snippets/test_snippet_runs\.py .*none of the 1"):
        snippet_pages.ensure_all_executed([(snippet, tmp_path / "three.ipynb")], root, jobs=1)
