"""The entries' word budgets (gemmglossary.docs_hooks.word_budgets), held against the
built site: every technique entry at most 1,200 words of prose, every vocabulary entry
200 to 600; a page outside its budget is named with its count."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmglossary.docs_hooks.word_budgets import built_page, budgeted, violations

REPO = Path(__file__).resolve().parents[2]


def html(words: int) -> str:
    return ('<html><body><nav class="md-nav">Home</nav><article class="md-content__inner md-typeset">'
            f'<h1>Title words</h1><p>{"word " * words}</p><pre><code>{"code " * 5000}</code></pre>'
            '</article></body></html>')


def make(tmp_path: Path, pages: dict[str, int]) -> tuple[Path, Path]:
    docs, site = tmp_path / "docs", tmp_path / "site"
    for page, words in pages.items():
        (docs / page).parent.mkdir(parents=True, exist_ok=True)
        (docs / page).write_text("# page\n")
        if words >= 0:
            built = built_page(site, page)
            built.parent.mkdir(parents=True, exist_ok=True)
            built.write_text(html(words))
    return docs, site


def test_pages_within_their_budgets_pass(tmp_path):
    docs, site = make(tmp_path, {"glossary/index.md": 5000, "glossary/barriers.md": 1200,
                                 "vocabulary/index.md": 10, "vocabulary/lane.md": 200,
                                 "vocabulary/memory/threadgroup.md": 600, "emulator.md": 9000})
    assert [p for p, _ in budgeted(docs)] == ["glossary/barriers.md", "vocabulary/lane.md",
                                              "vocabulary/memory/threadgroup.md"]
    assert violations(docs, site) == []


@pytest.mark.parametrize("page, words, budget", [
    ("glossary/barriers.md", 1201, "glossary's budget of 0 to 1,200"),
    ("vocabulary/lane.md", 199, "vocabulary's budget of 200 to 600"),
    ("vocabulary/memory/threadgroup.md", 1601, "vocabulary's budget of 200 to 600"),
])
def test_a_page_outside_its_budget_is_named_with_its_count(tmp_path, page, words, budget):
    docs, site = make(tmp_path, {page: words})
    assert violations(docs, site) == [f"docs/{page}: {words:,} words of prose, outside {budget}"]


def test_an_entry_that_was_not_built_is_named(tmp_path):
    docs, site = make(tmp_path, {"glossary/split-k.md": -1})
    assert violations(docs, site) == [f"docs/glossary/split-k.md: no built page at "
                                      f"{site / 'glossary/split-k/index.html'}"]


def test_every_entry_of_the_built_site_is_within_its_budget(mkdocs_site):
    assert mkdocs_site.run.returncode == 0, mkdocs_site.log
    assert len([p for p, b in budgeted(REPO / "docs") if b.folder == "glossary"]) >= 14
    found = violations(REPO / "docs", mkdocs_site.site)
    assert not found, "\n".join(found)
