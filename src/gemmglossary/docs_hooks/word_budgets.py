"""The entries' word budgets: how many words of prose (``prose_words``) a page may hold.

A technique entry (``docs/glossary/*.md``) is read in one sitting: at most 1,200 words of
prose. A vocabulary entry (``docs/vocabulary/**/*.md``) holds one idea: 200 to 600. The
index page of either folder is a list of entries, not an entry, and has no budget.

Counted from the built page, so a budget holds against what the reader sees, after the
facts are expanded; code, tables, figures and the collapsed project notes are not prose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .prose_words import prose_words


@dataclass(frozen=True)
class Budget:
    """The words of prose allowed on every entry under ``folder`` (of docs/)."""

    folder: str
    pattern: str
    low: int
    high: int


BUDGETS = (
    Budget("glossary", "*.md", 0, 1200),
    Budget("vocabulary", "**/*.md", 200, 600),
)


def built_page(site: Path, page: str) -> Path:
    """The HTML file MkDocs (directory URLs) and Zensical write for ``page`` (docs-relative)."""
    stem = page[:-len(".md")]
    if stem == "index" or stem.endswith("/index"):
        return site / stem[:-len("index")] / "index.html"
    return site / stem / "index.html"


def budgeted(docs: Path) -> list[tuple[str, Budget]]:
    """Every page with a budget, docs-relative, with its budget."""
    pages = []
    for budget in BUDGETS:
        folder = docs / budget.folder
        for path in sorted(folder.glob(budget.pattern)):
            if path.name != "index.md":
                pages.append((path.relative_to(docs).as_posix(), budget))
    return pages


def measure(docs: Path, site: Path) -> dict[str, int]:
    """The prose words of every budgeted page of the built ``site``."""
    return {page: prose_words(built_page(site, page).read_text(encoding="utf-8"))
            for page, _ in budgeted(docs) if built_page(site, page).is_file()}


def violations(docs: Path, site: Path) -> list[str]:
    """One line per page outside its budget (or not built), naming the page and its count."""
    found = []
    words = measure(docs, site)
    for page, budget in budgeted(docs):
        if page not in words:
            found.append(f"docs/{page}: no built page at {built_page(site, page)}")
        elif not budget.low <= words[page] <= budget.high:
            found.append(f"docs/{page}: {words[page]:,} words of prose, outside {budget.folder}'s "
                         f"budget of {budget.low:,} to {budget.high:,}")
    return found
