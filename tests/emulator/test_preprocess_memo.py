"""The preprocessor's output is remembered within a process (emulator/preprocess_memo.py)
only while it would be the same: an edit of any file it read, a header that now shadows
another, or a different source runs the preprocessor again."""

from __future__ import annotations

import pytest

from gemmglossary.emulator import build, preprocess_memo


@pytest.fixture
def runs(monkeypatch):
    """The preprocessor runs made from now on (their file names)."""
    preprocess_memo.forget()
    seen: list[str] = []
    real = build._run_preprocessor

    def counted(args, source, filename):
        seen.append(filename)
        return real(args, source, filename)
    monkeypatch.setattr(build, "_run_preprocessor", counted)
    yield seen
    preprocess_memo.forget()


def _project(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "tile.h").write_text("constant int TILE = 16;\n")
    kernel = tmp_path / "k.metal"
    kernel.write_text('#include "tile.h"\nkernel void k(device int * o [[buffer(0)]]) { o[0] = TILE; }\n')
    return kernel, [str(first), str(second)]


def test_a_second_load_reads_the_memo_and_an_edit_of_a_header_does_not(tmp_path, runs):
    kernel, dirs = _project(tmp_path)
    one = build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    assert build.preprocess(kernel.read_text(), str(kernel), dirs, None) == one
    assert len(runs) == 1
    # the same size, so only the contents tell the edit
    (tmp_path / "second" / "tile.h").write_text("constant int TILE = 32;\n")
    two = build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    assert len(runs) == 2 and "TILE = 32" in two and "TILE = 16" in one


def test_an_edit_of_the_kernel_file_itself_is_seen(tmp_path, runs):
    kernel, dirs = _project(tmp_path)
    build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    kernel.write_text(kernel.read_text().replace("o[0]", "o[1]"))
    assert "o[1]" in build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    assert len(runs) == 2


def test_a_header_that_now_comes_first_on_the_include_path_is_found(tmp_path, runs):
    kernel, dirs = _project(tmp_path)
    assert "TILE = 16" in build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    (tmp_path / "first" / "tile.h").write_text("constant int TILE = 8;\n")
    assert "TILE = 8" in build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    assert len(runs) == 2


def test_other_defines_or_another_source_text_run_it_again(runs):
    src = "kernel void k(device int * o [[buffer(0)]]) { o[0] = N; }\n"
    assert "o[0] = 1;" in build.preprocess(src, "<source>", [], {"N": 1})
    assert "o[0] = 2;" in build.preprocess(src, "<source>", [], {"N": 2})
    assert "o[1] = 2;" in build.preprocess(src.replace("o[0]", "o[1]"), "<source>", [], {"N": 2})
    assert build.preprocess(src, "<source>", [], {"N": 2}) and len(runs) == 3


def test_a_source_that_reads_the_clock_is_never_remembered(tmp_path, runs):
    kernel, dirs = _project(tmp_path)
    (tmp_path / "second" / "tile.h").write_text('constant char WHEN[] = __TIME__;\n')
    build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    assert len(runs) == 2


def test_a_source_text_or_a_define_that_reads_the_clock_is_never_remembered(runs):
    src = "constant char WHEN[] = __TIME__;\n"
    build.preprocess(src, "<source>", [], None)
    build.preprocess(src, "<source>", [], None)
    build.preprocess("constant char WHEN[] = T;\n", "<source>", [], {"T": "__DATE__"})
    build.preprocess("constant char WHEN[] = T;\n", "<source>", [], {"T": "__DATE__"})
    assert len(runs) == 4


def test_a_failed_run_is_not_remembered(tmp_path, runs):
    kernel, dirs = _project(tmp_path)
    (tmp_path / "second" / "tile.h").unlink()
    for _ in range(2):
        with pytest.raises(build.CompileError, match="tile.h"):
            build.preprocess(kernel.read_text(), str(kernel), dirs, None)
    assert len(runs) == 2


def test_only_the_most_recently_used_sources_are_kept(monkeypatch, runs):
    monkeypatch.setattr(preprocess_memo, "MEMO_SIZE", 2)
    src = "kernel void k(device int * o [[buffer(0)]]) { o[0] = N; }\n"
    for n in (1, 2, 1, 3):  # 1 is used again after 2, so 2 is the one that goes
        build.preprocess(src, "<source>", [], {"N": n})
    assert len(runs) == 3
    build.preprocess(src, "<source>", [], {"N": 1})
    assert len(runs) == 3
    build.preprocess(src, "<source>", [], {"N": 2})
    assert len(runs) == 4
