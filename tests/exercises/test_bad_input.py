"""`gemmglossary exercise` with bad input: one line, exit 2, nothing lost; a pass that
cannot be recorded is still a pass, and says why (issue #36)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gemmglossary import cli
from gemmglossary.exercises import spec, workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import read_only  # noqa: E402

from .conftest import CHEAPEST as NAME


def _one_line(capsys, *words):
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured
    for w in words:
        assert w in captured.err, captured.err
    return captured


@pytest.mark.parametrize("kind, why", [
    ("latin-1", "is not UTF-8 text (invalid continuation byte at byte 3)"),
    ("folder", "is a folder; give the kernel file to check"),
    ("empty", "is empty: nothing to check"),
    ("blank", "is empty: nothing to check"),
])
def test_a_file_that_is_not_a_kernel_is_one_line(ws, tmp_path, capsys, kind, why):
    path = tmp_path / "mine.metal"
    if kind == "latin-1":
        path.write_bytes(b"// \xe9t\xe9\nkernel void f() {}\n")
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_text("" if kind == "empty" else "\n  \n")
    assert cli.main(["exercise", "check", NAME, str(path)]) == 2
    _one_line(capsys, str(path), why)


def test_an_exercises_folder_that_is_a_file(ws, tmp_path, capsys, monkeypatch):
    f = tmp_path / "a-file"
    f.write_text("x")
    monkeypatch.setenv(workspace.ENV_VAR, str(f))
    for argv in (["list"], ["start", NAME], ["check", NAME]):
        assert cli.main(["exercise", *argv]) == 2
        _one_line(capsys, f"{workspace.ENV_VAR}='{f}' (a file, not a folder)")


@pytest.mark.parametrize("content", ["[1, 2]", '{"scale_add": 3}', '{"scale_add": {"file": 1}}', '"text"'])
def test_status_json_of_the_wrong_shape_is_one_line_and_kept(ws, capsys, content):
    ws.mkdir()
    (ws / workspace.STATUS_FILE).write_text(content)
    assert cli.main(["exercise", "list"]) == 2
    _one_line(capsys, "status.json: ", "delete it to forget what was checked")
    mine = ws / "mine.metal"
    mine.write_text(spec.find(NAME).solution.read_text())
    assert cli.main(["exercise", "check", NAME, str(mine)]) == 0
    assert "(not recorded: " in capsys.readouterr().out
    assert (ws / workspace.STATUS_FILE).read_text() == content  # nothing lost


def test_a_scratch_file_failing_does_not_undo_a_solution(ws, tmp_path, capsys):
    ex = spec.find(NAME)
    workspace.start(ex)
    mine = workspace.copy_path(ex)
    mine.write_text(ex.solution.read_text())
    assert cli.main(["exercise", "check", NAME]) == 0
    scratch = tmp_path / "scratch.metal"
    scratch.write_text(ex.skeleton.read_text())
    assert cli.main(["exercise", "check", NAME, str(scratch)]) == 1
    out = capsys.readouterr().out
    assert f"(not recorded: {NAME} stays solved by {mine}" in out
    assert workspace.status(ex).state == "solved"
    mine.write_text(ex.skeleton.read_text())  # the solved copy itself failing is recorded
    assert cli.main(["exercise", "check", NAME]) == 1
    assert workspace.status(ex).state == "failing"


def test_a_pass_inside_the_repository_says_it_is_not_recorded(ws, capsys):
    ex = spec.find(NAME)
    assert cli.main(["exercise", "check", NAME, str(ex.solution)]) == 0
    out = capsys.readouterr().out
    assert "Solved." in out and f"(not recorded: {ex.solution} is inside the repository" in out


def test_a_read_only_exercises_folder(ws, capsys):
    ex = spec.find(NAME)
    workspace.start(ex)
    workspace.copy_path(ex).write_text(ex.solution.read_text())
    argv = [sys.executable, "-m", "gemmglossary.cli", "exercise", "check", NAME]
    run = read_only.run(ws, argv, env={**os.environ})
    assert run.returncode == 0, run
    assert "Solved." in run.stdout and "(not recorded: cannot write " in run.stdout, run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    workspace.copy_path(ex).unlink()
    start = read_only.run(ws, [*argv[:-2], "start", NAME], env={**os.environ})
    assert start.returncode == 2 and start.stderr.count("\n") == 1 and "cannot copy the skeleton" in start.stderr, start
