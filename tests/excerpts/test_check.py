"""Every rule of ``gemmglossary excerpts check``, on a throw-away project."""

from __future__ import annotations

import json

import pytest

from gemmglossary.excerpts import cli
from gemmglossary.excerpts.check import check
from gemmglossary.excerpts.lock import Entry, file_lines, hash_lines, line_hash, lock_path, read_lock, write_lock
from gemmglossary.excerpts.update import update

from .conftest import KERNEL, PAGE


def only(report, kind=None):
    assert len(report.problems) == 1, [str(p) for p in report.problems]
    problem = report.problems[0]
    if kind:
        assert problem.kind == kind, str(problem)
    return problem, str(problem)


@pytest.fixture
def locked(project):
    assert update(project.root).ok
    return project


def test_clean_project_passes(locked):
    report = check()
    assert report.ok
    assert report.summary().startswith("1 excerpts of 1 files on 1 pages")
    [e] = read_lock(lock_path())
    quoted = file_lines(KERNEL)[4:11]
    assert e == Entry("index.md", "kernels/add.metal", 5, 11, hash_lines(quoted),
                      tuple(line_hash(t) for t in quoted))


def test_lock_hash_is_lines_joined_plus_final_newline(locked):
    import hashlib

    text = "\n".join(KERNEL.split("\n")[4:11]) + "\n"
    assert read_lock(lock_path())[0].sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_pure_move_names_page_file_old_and_new_range(locked):
    locked.insert_lines("kernels/add.metal", 3, ["// new", "// lines", "// here"])
    _, msg = only(check(), "moved")
    assert msg.startswith("docs/index.md:6: kernels/add.metal lines 5–11: ")
    assert "moved: now at lines 8–14; run `gemmglossary excerpts update`" in msg
    assert "gemmglossary excerpts update" in msg


def test_move_up_past_the_old_end_reports_the_move(locked):
    lines = locked.read("kernels/add.metal").split("\n")
    locked.write("kernels/add.metal", "\n".join(lines[4:]))  # drop lines 1-4: 8 lines left
    problem, msg = only(check(), "moved")  # no separate "past the end" problem
    assert problem.new_range == (1, 7)
    assert msg.startswith("docs/index.md:6: kernels/add.metal lines 5–11: moved")
    assert "moved: now at lines 1–7;" in msg


def test_move_picks_the_copy_nearest_the_old_range(locked):
    body = locked.read("kernels/add.metal").split("\n")[4:11]
    locked.insert_lines("kernels/add.metal", 1, ["// x"])
    locked.write("kernels/add.metal", locked.read("kernels/add.metal") + "\n".join(body) + "\n")
    problem, _ = only(check(), "moved")
    assert problem.new_range == (6, 12)


def test_changed_line_fails(locked):
    locked.replace_line("kernels/add.metal", 7, "    a[i] += 2.0f;")
    _, msg = only(check(), "changed")
    assert msg.startswith("docs/index.md:6: kernels/add.metal lines 5–11: text changed")
    assert "--accept-changes" in msg


def test_range_past_end_names_the_file_length(locked):
    locked.page("index.md", PAGE.replace(":5:11", ":5:40"))
    problems = {p.kind: str(p) for p in check().problems}
    assert "range past the end of the file, which has 12 lines" in problems["range"]
    assert "kernels/add.metal lines 5–40" in problems["range"]
    assert "unused" in problems  # the 5–11 entry


@pytest.mark.parametrize("rng, where", [("1:4", "ends on a blank line (4)"), ("4:6", "starts on a blank line (4)")])
def test_a_range_with_a_blank_edge_line_is_refused(project, rng, where):
    project.page("index.md", f'```metal\n--8<-- "kernels/add.metal:{rng}"\n```\n')
    problems = [str(q) for q in check().problems if q.kind == "range"]
    assert len(problems) == 1 and where in problems[0], problems


def test_reversed_and_empty_ranges(project):
    project.page("index.md", '```metal\n--8<-- "kernels/add.metal:9:5"\n```\n')
    _, msg = only(check(), "range")
    assert "reversed range" in msg and "docs/index.md:2: kernels/add.metal lines 9–5" in msg
    project.page("index.md", '```metal\n--8<-- "kernels/add.metal:0:5"\n```\n')
    _, msg = only(check(), "range")
    assert "empty range" in msg


def test_missing_file(project):
    project.page("index.md", '```metal\n--8<-- "kernels/nope.metal:1:5"\n```\n')
    _, msg = only(check(), "missing-file")
    assert "docs/index.md:2: kernels/nope.metal lines 1–5: missing file" in msg


def test_path_escaping_the_root(project):
    project.page("index.md", '```metal\n--8<-- "../secret.metal:1:5"\n```\n')
    _, msg = only(check(), "missing-file")
    assert "without `..`" in msg


def test_malformed_snippet_line(project):
    project.page("index.md", '# x\n\n```metal\n--8<-- "kernels/add.metal:5"\n```\n')
    _, msg = only(check(), "malformed")
    assert msg.startswith("docs/index.md:4: ") and "malformed excerpt line" in msg


def test_excerpt_missing_from_lock(locked):
    locked.page("other.md", '```metal\n--8<-- "kernels/add.metal:1:3"\n```\n')
    _, msg = only(check(), "unlocked")
    assert msg.startswith("docs/other.md:2: kernels/add.metal lines 1–3: excerpt missing from excerpts.lock.json")


def test_lock_entry_no_page_uses(locked):
    entries = read_lock(lock_path())
    write_lock(lock_path(), entries + [Entry("gone.md", "kernels/add.metal", 1, 2, "0" * 64)])
    _, msg = only(check(), "unused")
    assert msg.startswith("excerpts.lock.json: docs/gone.md: kernels/add.metal lines 1–2: lock entry that no page uses")
    assert "no such page" in msg


@pytest.mark.parametrize(
    ("info", "needle"),
    [
        ('linenums="1"', 'linenums="1" disagrees with the range, which starts at 5'),
        ('title="add.metal"', 'title="add.metal" disagrees with the range'),
        ('annotate="5 30"', "annotate line 30 outside the quoted range 5–11"),
        ('annotate="5 7" hl_lines="2-3"', "hl_lines lines 2, 3 outside the quoted range 5–11"),
        ('annotate="5 7 9"', "annotate marks 3 line(s) but the ordered list right after the block has 2 item(s)"),
        ('annotate="5 x"', "'x' is not a line number"),
    ],
)
def test_author_attributes(locked, info, needle):
    locked.page("index.md", PAGE.replace('annotate="5 7" hl_lines="7"', info))
    _, msg = only(check(), "attrs")
    assert needle in msg and msg.startswith("docs/index.md:6: kernels/add.metal lines 5–11:")


def test_author_attributes_that_agree_are_fine(locked):
    page = PAGE.replace('hl_lines="7"', 'hl_lines="7" linenums="5" title="kernels/add.metal · lines 5–11"')
    locked.page("index.md", page)
    assert check().ok


def test_cli_check_exit_codes(locked, capsys):
    assert cli.main(["check"]) == 0
    assert "1 excerpts of 1 files on 1 pages match" in capsys.readouterr().out
    locked.replace_line("kernels/add.metal", 7, "changed")
    assert cli.main(["check"]) == 1
    out = capsys.readouterr().out
    assert "docs/index.md:6: kernels/add.metal lines 5–11: text changed" in out
    assert "1 excerpt problem(s)" in out


def test_bad_lock_file_is_reported(locked, capsys):
    lock_path().write_text("{nope")
    assert cli.main(["check"]) == 1
    assert "not valid JSON" in capsys.readouterr().out


def test_lock_format_is_sorted_and_deterministic(locked):
    locked.page("b.md", '```metal\n--8<-- "kernels/add.metal:2:3"\n```\n')
    locked.page("a.md", '```metal\n--8<-- "kernels/add.metal:2:3"\n```\n\n```metal\n--8<-- "kernels/add.metal:1:3"\n```\n')
    assert update().ok
    text = lock_path().read_text()
    assert text.endswith("}\n") and text.startswith('{\n  "version": 1,\n  "excerpts": [\n    {\n      "page"')
    data = json.loads(text)
    keys = [(e["page"], e["file"], e["start"], e["end"]) for e in data["excerpts"]]
    assert keys == sorted(keys) and keys[0] == ("a.md", "kernels/add.metal", 1, 3)
    assert list(data["excerpts"][0]) == ["page", "file", "start", "end", "sha256", "lines"]


# ---------------------------------------------------------------------------
# Issue 13, item 6: an excerpt line nothing expands is reported.

@pytest.mark.parametrize("text, line, where", [
    ('```cpp\n--8<-- "kernels/add.metal:1:3"\n```\n', 4, "in a 'cpp' fence"),
    ('```\n--8<-- "kernels/add.metal:1:3"\n```\n', 4, "in a fence without a language"),
    ('Text.\n\n--8<-- "kernels/add.metal:1:3"\n', 5, "outside any fence"),
    ('1.  A list item:\n\n    --8<-- "kernels/add.metal:1:3"\n', 5, "outside any fence"),
])
def test_a_stray_excerpt_line_is_a_problem(locked, text, line, where):
    locked.page("other.md", "# Other\n\n" + text)
    problem, msg = only(check(), "stray")
    assert msg.startswith(f"docs/other.md:{line}: ")
    assert f"""excerpt line '--8<-- "kernels/add.metal:1:3"' {where} is not quoted""" in msg
    assert "```metal fenced block" in msg


@pytest.mark.parametrize("lang", ["markdown", "text", "md"])
def test_a_fence_that_shows_the_syntax_is_fine(locked, lang):
    locked.page("howto.md", f'# How to quote\n\n````{lang}\n```metal\n--8<-- "kernels/add.metal:1:3"\n```\n````\n')
    assert check().ok, [str(p) for p in check().problems]


def test_a_page_that_is_not_utf8_is_named(locked):
    (locked.root / "docs" / "bad.md").write_bytes(b"# caf\xe9\n")
    problem, msg = only(check(), "malformed")
    assert msg.startswith("docs/bad.md:1: ") and "not UTF-8 text" in msg


# ---------------------------------------------------------------------------
# Issue 13, item 4: an edited vendored header is named as such.

MMA = "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h"


@pytest.fixture
def quotes_mlx(with_mlx):
    with_mlx.page("mlx.md", f'# MLX\n\n```metal\n--8<-- "{MMA}:32:40"\n```\n')
    assert update().ok
    return with_mlx


def test_an_edited_vendored_file_is_reported_with_the_way_back(quotes_mlx, capsys):
    path = quotes_mlx.root / MMA
    lines = path.read_text().split("\n")
    lines[34] = "// my edit"
    path.write_text("\n".join(lines))
    before = lock_path().read_text()
    problem, msg = only(check(), "vendored")
    assert msg.startswith(f"docs/mlx.md:4: {MMA} lines 32–40: differs from its pin in vendor.toml")
    assert "`gemmglossary vendor` restores the pinned copy" in msg and "--accept-changes" not in msg
    # Neither command locks the edit, nor repairs it behind the writer's back.
    assert cli.main(["update", "--accept-changes"]) == 1
    out = capsys.readouterr().out
    assert f"{path}: differs from its pin" in out and "gemmglossary vendor" in out
    assert lock_path().read_text() == before and "// my edit" in path.read_text()
    assert cli.main(["check"]) == 1
    assert "differs from its pin" in capsys.readouterr().out


LLAMA_COMMON = "kernels/vendor/llama.cpp/ggml/src/ggml-common.h"


def test_an_edited_llama_cpp_file_is_reported_as_vendored(with_mlx):
    """llama.cpp's vendored files are checked against their pins exactly as MLX's."""
    with_mlx.page("llama.md", f'# llama.cpp\n\n```metal\n--8<-- "{LLAMA_COMMON}:194:198"\n```\n')
    assert update().ok
    path = with_mlx.root / LLAMA_COMMON
    path.write_text(path.read_text().replace("// delta\n", "// my edit\n", 1))
    problem, msg = only(check(), "vendored")
    assert msg.startswith(f"docs/llama.md:4: {LLAMA_COMMON} lines 194–198: differs from its pin in vendor.toml")
    assert "llama.cpp's files are read, never edited here" in msg


def test_check_on_a_fresh_clone_materializes_the_mlx_files(quotes_mlx, capsys):
    import shutil

    shutil.rmtree(quotes_mlx.root / "kernels" / "vendor")
    assert cli.main(["check"]) == 0, capsys.readouterr().out
    assert "2 excerpts of 2 files on 2 pages match" in capsys.readouterr().out
    assert (quotes_mlx.root / MMA).is_file()
