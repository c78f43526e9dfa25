"""The tokenizer every reader of Metal source shares."""

from __future__ import annotations

import pytest

from gemmglossary import paths
from gemmglossary.emulator.build import SHIM_DIR
from gemmglossary.msl.lexer import assign_lines, join, tokenize

FILES = sorted([*paths.kernels_dir().glob("*.metal"), *paths.vendor_dir().rglob("*.h"),
                *(p for p in SHIM_DIR.rglob("*") if p.is_file())])


def test_every_kernel_header_and_shim_file_is_reproduced_exactly():
    assert len(FILES) > 30
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        assert join(tokenize(text)) == text, path


@pytest.mark.parametrize("source, kinds", [
    ('#define X(a) \\\n  a+1 // c\nint y;', ["pp", "nl", "id", "ws", "id", "punct"]),
    ('R"x(a)" b)x" u8"s" \'c\'', ["str", "ws", "str", "ws", "chr"]),
    ("a /* b\nc */ >>= 1'000", ["id", "ws", "comment", "ws", "punct", "ws", "num"]),
])
def test_token_kinds(source, kinds):
    assert [t.kind for t in tokenize(source)] == kinds


def test_lines_follow_linemarkers():
    toks = tokenize('a\n# 10 "x.h"\nb\n')
    assign_lines(toks, "main.metal")
    b = next(t for t in toks if t.text == "b")
    assert (b.file, b.line) == ("x.h", 10)
