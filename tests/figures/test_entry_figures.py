"""Every glossary entry and case study asks for at least one generated figure, with a tag
the extension accepts. New pages are covered as they appear (every docs/glossary/*.md but
the index, every docs/case-studies/*.md, and the case study at the top level, How MLX picks
a GEMM); the browser suite checks that the figures show."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmglossary.docs_hooks import figures as ext
from gemmglossary.figures import FIGURES

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(p for p in (DOCS / "glossary").glob("*.md") if p.name != "index.md") + \
    sorted((DOCS / "case-studies").glob("*.md")) + [DOCS / "how-mlx-picks-a-gemm.md"]


def tags(page: Path) -> list[tuple[int, str, dict]]:
    out = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        m = ext.TAG.match(line)
        if m:
            name, args = ext.parse(m["body"])
            out.append((number, name, args))
    return out


def test_there_are_pages():
    assert len(PAGES) >= 17


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).with_suffix("").as_posix() for p in PAGES])
def test_page_has_a_figure(page: Path):
    found = tags(page)
    assert found, f"docs/{page.relative_to(DOCS)} has no {{{{figure ...}}}} tag (issue #17: a figure on every entry)"
    for number, name, args in found:
        assert name in FIGURES, f"docs/{page.relative_to(DOCS)}:{number}: unknown figure {name!r}"
