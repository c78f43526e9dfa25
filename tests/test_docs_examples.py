"""Python examples written into pages (not kernel excerpts) run as shown.

Kernel excerpts are locked by hash (tests/excerpts); usage examples in prose are
executed here, so a changed API breaks the test rather than the reader.
"""

from __future__ import annotations

import re

import pytest

from gemmglossary.paths import docs_dir, project_root

PAGES_WITH_EXAMPLES = ["emulator.md"]


def python_blocks(page: str) -> list[str]:
    text = (docs_dir() / page).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def run_examples(page: str) -> None:
    for block in python_blocks(page):
        exec(compile(block, f"docs/{page}", "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES)
def test_page_examples_run(page, monkeypatch):
    assert python_blocks(page), f"docs/{page} has no ```python example"
    monkeypatch.chdir(project_root())  # examples use repository-relative paths
    run_examples(page)


def test_a_broken_example_fails(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "broken.md").write_text("Text.\n\n```python\nassert 1 == 2\n```\n")
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(tmp_path))
    with pytest.raises(AssertionError):
        run_examples("broken.md")
