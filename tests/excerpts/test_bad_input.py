"""The excerpt lock keeps every entry a page still quotes, and the commands say what is
wrong with their input in one line (issue #36)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gemmglossary.excerpts import cli
from gemmglossary.excerpts.lock import lock_path, read_lock
from gemmglossary.excerpts.update import update

from .conftest import KERNEL

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import read_only  # noqa: E402


def _locked(project):
    assert update(project.root).ok
    return lock_path().read_text()


def test_a_deleted_quoted_file_keeps_its_entries(project, capsys):
    before = _locked(project)
    (project.root / "kernels" / "add.metal").unlink()
    assert cli.main(["update"]) == 1
    out = capsys.readouterr().out
    assert "missing file: no kernels/add.metal" in out and "dropped" not in out
    assert lock_path().read_text() == before


def test_a_restored_file_with_a_changed_line_is_not_locked_as_added(project, capsys):
    before = _locked(project)
    kernel = project.root / "kernels" / "add.metal"
    kernel.unlink()
    assert cli.main(["update"]) == 1
    kernel.write_text(KERNEL.replace("a[i] += 1.0f;", "a[i] += 2.0f;"))
    assert cli.main(["update"]) == 1
    out = capsys.readouterr().out
    assert "added" not in out
    assert "kernels/add.metal lines 5–11: text changed; not relocked without --accept-changes" in out
    assert lock_path().read_text() == before
    assert cli.main(["update", "--accept-changes"]) == 0
    assert "accepted changed text of docs/index.md:6" in capsys.readouterr().out


def test_a_block_that_no_longer_parses_keeps_its_pages_entries(project, capsys):
    before = _locked(project)
    page = project.read("docs/index.md")
    project.page("index.md", page.replace('"kernels/add.metal:5:11"', '"kernels/add.metal:5:"'))
    assert cli.main(["update"]) == 1
    assert "dropped" not in capsys.readouterr().out
    assert lock_path().read_text() == before
    project.page("index.md", page.replace("```metal annotate", "```text\n```\n```metal annotate", 1)
                 .replace('```metal annotate="5 7" hl_lines="7"\n', "", 1))  # the excerpt line out of its fence
    assert cli.main(["update"]) == 1
    assert "dropped" not in capsys.readouterr().out
    assert [(e.start, e.end) for e in read_lock(lock_path())] == [(5, 11)]


def test_a_page_that_no_longer_quotes_a_range_still_drops_it(project, capsys):
    _locked(project)
    project.page("index.md", "# Adding one\n\nNo excerpt now.\n")
    assert cli.main(["update"]) == 0
    assert "dropped unused lock entry docs/index.md: kernels/add.metal lines 5–11" in capsys.readouterr().out
    assert read_lock(lock_path()) == []


def _command(root: Path, *argv: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gemmglossary.cli", "excerpts", *argv], capture_output=True,
                          text=True, timeout=300, cwd=root, env={**os.environ, "GEMMGLOSSARY_ROOT": str(root), **env})


def test_a_root_that_is_not_a_project_is_bad_input(tmp_path):
    for root, why in ((tmp_path / "nonexistent", "GEMMGLOSSARY_ROOT="), (tmp_path, "has no docs/ folder")):
        for action in ("check", "update"):
            run = _command(tmp_path, action, GEMMGLOSSARY_ROOT=str(root))
            assert run.returncode == 2, run
            assert why in run.stderr and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
            assert "match" not in run.stdout


def test_update_in_a_read_only_checkout_is_one_line(project):
    _locked(project)
    argv = [sys.executable, "-m", "gemmglossary.cli", "excerpts", "update"]
    env = {**os.environ, "GEMMGLOSSARY_ROOT": str(project.root)}
    run = read_only.run(project.root, argv, env=env, cwd=project.root)
    assert run.returncode == 2, run
    assert "cannot write there" in run.stderr and "(Read-only file system)" in run.stderr or \
        "(Permission denied)" in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    check = read_only.run(project.root, argv[:-1] + ["check"], env=env, cwd=project.root)
    assert check.returncode == 0, check
