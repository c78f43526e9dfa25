"""`gemmglossary exercise list|start|show|check` and `pytest exercises/NAME`, in a scratch workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gemmglossary import cli, paths
from gemmglossary.exercises import spec, workspace

from .conftest import CHEAPEST as NAME


def _rows(out: str) -> dict:
    """exercise -> status, from the table `exercise list` prints."""
    return {line.split()[0]: line.split()[1] for line in out.splitlines()[1:]
            if line.strip() and not line.startswith("Your")}


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_start_check_list(ws, capsys):
    assert cli.main(["exercise", "start", NAME]) == 0
    mine = ws / f"{NAME}.metal"
    assert mine.read_text() == spec.find(NAME).skeleton.read_text()
    assert cli.main(["exercise", "start", NAME]) == 2, "never overwrites the learner's file"
    assert "already exists" in capsys.readouterr().err

    assert cli.main(["exercise", "check", NAME]) == 1
    out = capsys.readouterr().out
    assert "No element of C was written" in _flat(out) and "Hint:" in out

    cli.main(["exercise", "list"])
    rows = _rows(capsys.readouterr().out)
    assert rows[NAME] == "failing" and rows["barriers"] == "-"

    mine.write_text(spec.find(NAME).solution.read_text())
    cli.main(["exercise", "list"])
    assert _rows(capsys.readouterr().out)[NAME] == "changed"
    assert cli.main(["exercise", "check", NAME]) == 0
    assert "PASS" in capsys.readouterr().out
    assert workspace.status(spec.find(NAME)).state == "solved"
    assert not any(paths.project_root() in p.parents for p in ws.rglob("*")), "nothing of it in the repository"


def test_checking_a_file_of_the_repository_is_not_recorded(ws, capsys):
    exercise = spec.find(NAME)
    assert cli.main(["exercise", "check", NAME, str(exercise.solution)]) == 0
    assert workspace.status(exercise).state == "not started"


def test_bad_input_is_one_line_and_exit_2(ws, capsys):
    assert cli.main(["exercise", "check", "nope"]) == 2
    assert "no exercise named 'nope'" in capsys.readouterr().err
    assert cli.main(["exercise", "check", NAME]) == 2
    assert f"gemmglossary exercise start {NAME}" in capsys.readouterr().err
    assert cli.main(["exercise", "check", NAME, "missing.metal"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli.main(["exercise", "bogus"]) == 2


def test_show_prints_the_statement_and_hints(ws, capsys):
    assert cli.main(["exercise", "show", "barriers"]) == 0
    out = capsys.readouterr().out
    assert "Hint: how many?:" in out and "???" not in out and "gemmglossary exercise check barriers" in out
    assert "Practises: Barriers." in out and "](" not in out
    # its place in the sequence, as the page's fact computes it, not the fact's tag
    assert f"\n{spec.place('barriers')}. Practises" in out and "{{" not in out


def test_a_workspace_inside_the_repository_is_refused(monkeypatch, capsys):
    monkeypatch.setenv(workspace.ENV_VAR, str(paths.project_root() / "my-work"))
    assert cli.main(["exercise", "start", NAME]) == 2
    assert "inside the repository" in capsys.readouterr().err
    assert not (paths.project_root() / "my-work").exists()


def test_a_kernel_file_for_an_exercise_without_a_body_form(ws, capsys):
    body = spec.find(NAME).body.solution
    assert cli.main(["exercise", "check", "cooperative_load", str(body)]) == 1
    assert "declares no kernel function" in _flat(capsys.readouterr().out)


def _pytest(args, ws):
    env = {k: v for k, v in os.environ.items() if k != "GEMMGLOSSARY_ROOT"}
    env.update({workspace.ENV_VAR: str(ws), "GEMMGLOSSARY_BACKEND": "emulator"})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=paths.project_root(), env=env, capture_output=True, text=True, timeout=300)


def test_outcomes_recorded_at_once_are_all_kept(ws):
    # `pytest exercises/` checks exercises side by side (xdist): each process adds its
    # outcome to status.json while the others add theirs
    ws.mkdir(parents=True)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gemmglossary.exercises import spec, workspace\n"
        "ex = spec.find(sys.argv[1]); mine = Path(sys.argv[2])\n"
        "mine.write_text(ex.skeleton.read_text())\n"
        "for _ in range(40):\n"
        "    assert workspace.record(ex, mine, False, 'emulator')\n"
    )
    names = [e.name for e in spec.all_exercises()][:3]
    procs = [subprocess.Popen([sys.executable, "-c", code, name, str(ws / f"{name}.metal")], stderr=subprocess.PIPE,
                              text=True) for name in names]
    errors = [p.communicate()[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    assert sorted(json.loads((ws / workspace.STATUS_FILE).read_text())) == sorted(names)
    assert [p.name for p in ws.iterdir() if p.suffix == ".tmp"] == []


def test_pytest_on_the_exercise_folder(ws):
    folder = f"exercises/{NAME}"
    skipped = _pytest([folder], ws)
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout + skipped.stderr
    assert f"gemmglossary exercise start {NAME}" in skipped.stdout
    workspace.start(spec.find(NAME))  # the skeleton: fails
    workspace.copy_path(spec.find("barriers")).write_text(spec.find("barriers").solution.read_text())  # passes
    both = _pytest([folder, "exercises/barriers"], ws)
    assert both.returncode == 1 and "1 failed, 1 passed" in both.stdout, both.stdout + both.stderr
    assert "No element of C was written" in _flat(both.stdout) and "Traceback" not in both.stdout
    assert workspace.status(spec.find("barriers")).state == "solved"


def test_a_kernel_that_does_not_compile_or_is_renamed(ws, capsys):
    solution = spec.find(NAME).solution.read_text()
    broken = ws.parent / "broken.metal"
    broken.write_text(solution.replace("const uint row = pos.y;", "const uint row = pos.y"))
    assert cli.main(["exercise", "check", NAME, str(broken)]) == 1
    out = _flat(capsys.readouterr().out)
    assert "The kernel does not compile" in out and "broken.metal:32" in out and "fix the first error" in out
    renamed = ws.parent / "renamed.metal"
    renamed.write_text(solution.replace("kernel void scale_add(", "kernel void my_scale_add("))
    assert cli.main(["exercise", "check", NAME, str(renamed)]) == 1
    out = _flat(capsys.readouterr().out)
    assert "no kernel named 'scale_add'" in out and "keep the name" in out
