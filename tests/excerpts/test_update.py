"""``gemmglossary excerpts update``: re-anchoring, relocking, idempotence."""

from __future__ import annotations

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
    assert "docs/index.md: changed while updating; run the update again" in result.refused
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
