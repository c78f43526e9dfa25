"""``gemmglossary excerpts update``: re-anchoring, relocking, idempotence."""

from __future__ import annotations

import json

import pytest

from gemmglossary.excerpts import cli
from gemmglossary.excerpts.check import check
from gemmglossary.excerpts.lock import Entry, lock_path, read_lock, write_lock
from gemmglossary.excerpts.update import update

from .conftest import PAGE


@pytest.fixture
def locked(project):
    assert update(project.root).ok
    return project


def test_first_update_adds_new_excerpts(project, capsys):
    assert cli.main(["update"]) == 0
    out = capsys.readouterr().out
    assert "added docs/index.md:6: kernels/add.metal lines 5–11" in out
    assert "wrote excerpts.lock.json (1 excerpts)" in out
    assert check().ok


def test_update_is_idempotent(locked, capsys):
    before = lock_path().read_text()
    assert cli.main(["update"]) == 0
    assert "nothing to update" in capsys.readouterr().out
    assert lock_path().read_text() == before


def test_update_reanchors_a_pure_move(locked, capsys):
    locked.insert_lines("kernels/add.metal", 3, ["// new", "// lines", "// here"])
    assert not check().ok
    assert cli.main(["update"]) == 0
    out = capsys.readouterr().out
    assert "re-anchored docs/index.md:6: kernels/add.metal lines 5–11 → lines 8–14" in out
    assert "added" not in out and "dropped" not in out
    page = locked.read("docs/index.md")
    assert '```metal annotate="8 10" hl_lines="10"\n--8<-- "kernels/add.metal:8:14"\n```' in page
    assert page == PAGE.replace('annotate="5 7" hl_lines="7"', 'annotate="8 10" hl_lines="10"').replace(":5:11", ":8:14")
    [e] = read_lock(lock_path())
    assert (e.start, e.end) == (8, 14)
    assert check().ok


def test_update_reanchors_author_linenums_title_and_hl_ranges(locked):
    page = PAGE.replace('hl_lines="7"', 'hl_lines="6-7" linenums="5" title="kernels/add.metal · lines 5–11"')
    locked.page("index.md", page)
    assert update().ok
    locked.insert_lines("kernels/add.metal", 1, ["//"] * 2)
    assert update().ok
    text = locked.read("docs/index.md")
    assert 'annotate="7 9" hl_lines="8-9" linenums="7" title="kernels/add.metal · lines 7–13"' in text


def test_update_refuses_changed_text_without_the_flag(locked, capsys):
    locked.replace_line("kernels/add.metal", 7, "    a[i] += 2.0f;")
    before = lock_path().read_text()
    assert cli.main(["update"]) == 1
    out = capsys.readouterr().out
    assert "docs/index.md:6: kernels/add.metal lines 5–11: text changed; not relocked without --accept-changes" in out
    assert "1 excerpt problem(s) remain" in out
    assert lock_path().read_text() == before
    assert cli.main(["update", "--accept-changes"]) == 0
    out = capsys.readouterr().out
    assert "accepted changed text of docs/index.md:6: kernels/add.metal lines 5–11" in out
    assert lock_path().read_text() != before
    assert check().ok


def test_update_drops_unused_entries(locked, capsys):
    write_lock(lock_path(), read_lock(lock_path()) + [Entry("gone.md", "kernels/add.metal", 1, 2, "0" * 64)])
    assert cli.main(["update"]) == 0
    assert "dropped unused lock entry docs/gone.md: kernels/add.metal lines 1–2" in capsys.readouterr().out
    assert len(read_lock(lock_path())) == 1


def test_update_keeps_entries_of_broken_excerpts_and_fails(locked, capsys):
    locked.kernel("add.metal", "// short\n")
    before = lock_path().read_text()
    assert cli.main(["update"]) == 1
    out = capsys.readouterr().out
    assert "range past the end of the file, which has 1 lines" in out
    assert lock_path().read_text() == before  # the entry is kept until the page is fixed


def test_update_leaves_unrelated_pages_byte_identical(locked):
    other = "# Other\n\n```metal\nint x;\n```\n\nno trailing newline"
    locked.page("other.md", other)
    locked.insert_lines("kernels/add.metal", 1, ["//"])
    assert update().ok
    assert locked.read("docs/other.md") == other


def test_two_pages_quoting_the_same_range(locked):
    locked.page("twin.md", PAGE)
    assert update().ok
    assert len(read_lock(lock_path())) == 2
    locked.insert_lines("kernels/add.metal", 1, ["//"])
    result = update()
    assert result.ok
    assert sum(a.startswith("re-anchored") for a in result.actions) == 2


def test_a_page_edited_during_the_update_is_not_overwritten(locked, monkeypatch):
    from gemmglossary.excerpts import update as update_module

    locked.insert_lines("kernels/add.metal", 1, ["//"])
    real_check = update_module.check
    edited = PAGE + "\nA writer's new paragraph.\n"

    def check_then_edit(*args, **kwargs):
        report = real_check(*args, **kwargs)
        if kwargs.get("pages") is not None:  # the per-page pass: someone saves the page now
            locked.page("index.md", edited)
        return report

    monkeypatch.setattr(update_module, "check", check_then_edit)
    result = update()
    assert "docs/index.md: changed while updating; nothing written, run the update again" in result.refused
    assert locked.read("docs/index.md") == edited  # the writer's edit survives
    monkeypatch.setattr(update_module, "check", real_check)
    assert update().ok  # and the next run re-anchors it
    assert ":6:12" in locked.read("docs/index.md")


def test_writes_leave_no_temporary_files(locked):
    locked.insert_lines("kernels/add.metal", 1, ["//"])
    assert update().ok
    leftovers = [p.name for p in locked.root.rglob("*.tmp")]
    assert leftovers == []


def test_the_gemmglossary_command_routes_to_excerpts(locked, capsys):
    from gemmglossary import cli as top

    assert top.main(["excerpts", "check"]) == 0
    assert "match excerpts.lock.json" in capsys.readouterr().out


# ---------------------------------------------------------------------------
# Issue 13, item 3: a block that both moved and changed.

def test_moved_and_changed_is_found_by_its_surviving_lines(locked, capsys):
    locked.insert_lines("kernels/add.metal", 1, ["// a new first line"])
    locked.replace_line("kernels/add.metal", 8, "    a[i] += 2.0f;")  # was line 7
    problem = next(p for p in check().problems if p.kind == "moved-changed")
    assert problem.new_range == (6, 12)
    assert "moved and changed: the block now seems to stand at lines 6–12 (6 of 7 lines unchanged)" in str(problem)
    before = lock_path().read_text()

    # Even with the flag, the run only re-anchors (the writer sees the new range) ...
    assert cli.main(["update", "--accept-changes"]) == 1
    out = capsys.readouterr().out
    assert "re-anchored docs/index.md:6: kernels/add.metal lines 5–11 → lines 6–12" in out
    assert "moved and changed; re-anchored but not relocked" in out
    assert ":6:12" in locked.read("docs/index.md")
    [e] = read_lock(lock_path())
    assert (e.start, e.end) == (6, 12) and e.sha256 == json.loads(before)["excerpts"][0]["sha256"]
    assert "docs/index.md:6: kernels/add.metal lines 6–12: text changed" in out

    # ... and a plain update relocks nothing; the next --accept-changes does.
    assert cli.main(["update"]) == 1
    capsys.readouterr()
    assert cli.main(["update", "--accept-changes"]) == 0
    assert "accepted changed text of docs/index.md:6: kernels/add.metal lines 6–12" in capsys.readouterr().out
    assert check().ok


def test_moved_and_grown_block_takes_its_new_lines(locked):
    locked.insert_lines("kernels/add.metal", 2, ["// one", "// two"])  # 5–11 -> 7–13
    locked.insert_lines("kernels/add.metal", 10, ["    a[i] *= 2.0f;"])  # inside the block
    problem = next(p for p in check().problems if p.kind == "moved-changed")
    assert problem.new_range == (7, 14)


def test_a_block_mostly_rewritten_is_changed_not_moved(locked):
    for n in range(5, 10):
        locked.replace_line("kernels/add.metal", n, f"// rewritten {n}")
    locked.insert_lines("kernels/add.metal", 1, ["//"])
    kinds = {p.kind for p in check().problems}
    assert "moved-changed" not in kinds and "changed" in kinds


def test_a_lock_without_line_hashes_still_reports_changed(locked):
    data = json.loads(lock_path().read_text())
    del data["excerpts"][0]["lines"]
    lock_path().write_text(json.dumps(data))
    locked.replace_line("kernels/add.metal", 7, "    a[i] += 2.0f;")
    assert [p.kind for p in check().problems] == ["changed"]


# ---------------------------------------------------------------------------
# Issue 13, item 6: a missing lock relocks nothing without the flag.

def test_without_a_lock_nothing_is_locked_without_the_flag(locked, capsys):
    locked.replace_line("kernels/add.metal", 7, "    a[i] += 2.0f;")
    lock_path().unlink()
    problems = check().problems
    assert [p.kind for p in problems] == ["no-lock"]
    assert str(problems[0]).startswith("excerpts.lock.json: missing: nothing to check the 1 excerpts against")
    assert cli.main(["update"]) == 1
    out = capsys.readouterr().out
    assert "missing, so every excerpt would be locked as it is now; nothing written" in out
    assert "git checkout -- excerpts.lock.json" in out
    assert not lock_path().exists()
    assert cli.main(["update", "--accept-changes"]) == 0
    assert check().ok


@pytest.mark.parametrize("damage", ["latin-1", "directory", "json", "shape"])
def test_a_damaged_lock_is_one_message_and_exit_1(locked, capsys, damage):
    path = lock_path()
    if damage == "latin-1":
        path.write_bytes(b'{"version": 1, "excerpts": [{"page": "caf\xe9"}]}')
    elif damage == "directory":
        path.unlink()
        path.mkdir()
    elif damage == "json":
        path.write_text("{nope")
    else:
        path.write_text('{"version": 1, "excerpts": {}}')
    for command in (["check"], ["update"], ["update", "--accept-changes"]):
        assert cli.main(command) == 1
        out = capsys.readouterr().out
        assert out.startswith(f"gemmglossary excerpts: {path}: ") and out.count("\n") == 1, out
        assert "git checkout -- excerpts.lock.json" in out
    assert path.is_dir() == (damage == "directory")


# ---------------------------------------------------------------------------
# Issue 13, item 6: an interrupted update leaves pages and lock in step.

def test_an_update_killed_while_writing_is_finished_by_the_next(locked, monkeypatch):
    from gemmglossary.excerpts import transaction

    locked.insert_lines("kernels/add.metal", 1, ["//"])
    real_replace = transaction.os.replace
    calls = []

    def killed_after_the_first_rename(src, dst):
        calls.append(dst)
        if len(calls) == 3:  # the journal, then the page: the process dies before the lock
            raise SystemExit("killed")
        real_replace(src, dst)

    monkeypatch.setattr(transaction.os, "replace", killed_after_the_first_rename)
    with pytest.raises(SystemExit):
        update()
    monkeypatch.setattr(transaction.os, "replace", real_replace)
    assert ":6:12" in locked.read("docs/index.md")  # the page is written, the lock is not
    problem = check().problems[0]
    assert problem.kind == "interrupted" and "run `gemmglossary excerpts update` to finish it" in str(problem)
    result = update()
    assert any(a.startswith("finished an interrupted update") for a in result.actions)
    assert result.ok and check().ok
    assert [(e.start, e.end) for e in read_lock(lock_path())] == [(6, 12)]
    assert not list(locked.root.rglob("*.tmp"))


def test_ctrl_c_during_the_writes_is_held_until_both_are_written(locked, monkeypatch, capsys):
    import signal

    from gemmglossary.excerpts import transaction

    locked.insert_lines("kernels/add.metal", 1, ["//"])
    real_apply = transaction._apply

    def interrupted(pairs):
        signal.raise_signal(signal.SIGINT)  # the user presses Ctrl-C now
        real_apply(pairs)

    monkeypatch.setattr(transaction, "_apply", interrupted)
    # Ctrl-C as a terminal delivers it: Python's own handler, whatever an earlier test or a
    # library of the session installed (in a full run something leaves another in place)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert cli.main(["update"]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    err = capsys.readouterr().err
    assert "interrupted; the pages and the lock are consistent" in err and "Traceback" not in err
    assert ":6:12" in locked.read("docs/index.md")
    assert [(e.start, e.end) for e in read_lock(lock_path())] == [(6, 12)]
    assert check().ok


def test_ctrl_c_before_the_writes_changes_nothing(locked, monkeypatch, capsys):
    from gemmglossary.excerpts import update as update_module

    locked.insert_lines("kernels/add.metal", 1, ["//"])
    page, lock = locked.read("docs/index.md"), lock_path().read_text()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(update_module, "_plan", interrupted)
    assert cli.main(["update"]) == 130
    assert locked.read("docs/index.md") == page and lock_path().read_text() == lock
