"""The fixer of the glossary-link check (python -m gemmglossary.docs_hooks.term_links --fix,
gemmglossary.docs_hooks.term_fix): it writes exactly the links the check asks for, in prose
only, keeps the page's words, leaves a page that already passes unchanged, and refuses to
write a page it cannot make pass."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

import markdown
import pytest
import yaml

from gemmglossary.docs_hooks import term_fix
from gemmglossary.docs_hooks.term_links import Mention, TermLinkError

REPO = Path(__file__).resolve().parents[2]

#: The extensions of the site that decide what is prose, and the check itself.
CONFIG = textwrap.dedent("""\
    docs_dir: docs
    markdown_extensions:
      - admonition
      - attr_list
      - md_in_html
      - tables
      - toc:
          permalink: true
      - pymdownx.details
      - pymdownx.highlight:
          line_spans: __span
          anchor_linenums: true
      - pymdownx.inlinehilite
      - pymdownx.superfences
      - pymdownx.tabbed:
          alternate_style: true
      - gemmglossary.docs_hooks.facts
      - gemmglossary.docs_hooks.figures
      - gemmglossary.docs_hooks.term_links
    """)

ENTRIES = {
    "glossary/barriers.md": "---\nterms: [barrier, barriers, threadgroup barrier]\n---\n\n# Barriers\n\nA barrier.\n",
    "glossary/gemv.md": "---\nterms: [gemv]\n---\n\n# GEMV\n\nA matrix times a vector.\n",
    "vocabulary/threadgroup.md": "---\nterms: [threadgroup, threadgroups]\n---\n\n# Threadgroup\n\nThreads.\n",
}

#: Places the fixer must not write a link into, each before the prose mention it must link.
NOT_PROSE = {
    "front matter": None,  # see test_front_matter_is_left_alone
    "inline code": "Call `threadgroup_barrier` and `barrier()` here.",
    "code block": "```cpp\n// a barrier\nthreadgroup_barrier(mem_flags::mem_threadgroup);\n```",
    "excerpt directive": '```metal\n--8<-- "kernels/barrier.metal:1:2"\n```',
    "heading": "## Why a barrier",
    "table header": "| Barrier | Cost |\n|---|---|\n| one | some |",
    "admonition title": '!!! note "One barrier"\n    Nothing here.',
    "folded summary": '??? note "One barrier"\n    Nothing here.',
    "tab label": '=== "Barrier"\n\n    Nothing here.',
    "another link's text": "[the barrier section](elsewhere.md) of another page.",
    "code annotation": '```cpp\nint a = 1; // (1)!\n```\n\n1.  A barrier, explained in the tooltip.',
    "figure caption": '{{figure memory-hierarchy caption="a barrier"}}',
}


@pytest.fixture
def site(tmp_path):
    (tmp_path / "mkdocs.yml").write_text(CONFIG, encoding="utf-8")
    docs = tmp_path / "docs"
    for page, text in ENTRIES.items():
        (docs / page).parent.mkdir(parents=True, exist_ok=True)
        (docs / page).write_text(text, encoding="utf-8")
    return tmp_path


def write(site: Path, page: str, text: str) -> Path:
    path = site / "docs" / page
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def fix(site: Path, page: str) -> term_fix.PageFix:
    return term_fix.fix_page(term_fix.Converter(site / "docs", site / "mkdocs.yml"), page)


def passes_the_check(site: Path, page: str) -> bool:
    """The page's file converted with the check, as MkDocs would (its relpath names the page)."""
    path = site / "docs" / page
    text = path.read_text(encoding="utf-8")
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
    entries = yaml.safe_load((site / "mkdocs.yml").read_text(encoding="utf-8"))["markdown_extensions"]
    names = [next(iter(e)) if isinstance(e, dict) else e for e in entries]  # the figures too
    configs = {next(iter(e)): next(iter(e.values())) for e in entries if isinstance(e, dict)}
    md = markdown.Markdown(extensions=names, extension_configs=configs)
    file = types.SimpleNamespace(src_uri=page, abs_src_path=str(path))
    md.treeprocessors.register(types.SimpleNamespace(file=file, run=lambda root: None), "relpath", 0)
    try:
        md.convert(body)
    except TermLinkError:
        return False
    return True


def test_first_mentions_are_linked_with_the_page_s_own_words(site):
    path = write(site, "intro.md", "# Intro\n\nTwo Barriers per\nstep, a GEMV, and Threadgroups.\n\nMore barriers.\n")
    assert not passes_the_check(site, "intro.md")
    result = fix(site, "intro.md")
    assert path.read_text(encoding="utf-8") == (
        "# Intro\n\nTwo [Barriers](glossary/barriers.md) per\nstep, a [GEMV](glossary/gemv.md), and "
        "[Threadgroups](vocabulary/threadgroup.md).\n\nMore barriers.\n")
    assert result.links == ["Barriers -> glossary/barriers.md", "GEMV -> glossary/gemv.md",
                            "Threadgroups -> vocabulary/threadgroup.md"]
    assert result.unplaced == [] and passes_the_check(site, "intro.md")


def test_links_are_relative_to_the_page_folder_and_a_phrase_broken_over_lines_stays_broken(site):
    path = write(site, "glossary/split.md", "# Split\n\nEach threadgroup\nbarrier waits.\n")
    fix(site, "glossary/split.md")
    assert path.read_text(encoding="utf-8") == "# Split\n\nEach [threadgroup\nbarrier](barriers.md) waits.\n"
    assert passes_the_check(site, "glossary/split.md")


@pytest.mark.parametrize("place", sorted(k for k, v in NOT_PROSE.items() if v))
def test_nothing_but_prose_is_linked(site, place):
    before = f"# Intro\n\n{NOT_PROSE[place]}\n\n"
    path = write(site, "intro.md", before + "Then a barrier.\n")
    fix(site, "intro.md")
    assert path.read_text(encoding="utf-8") == before + "Then a [barrier](glossary/barriers.md).\n"
    assert passes_the_check(site, "intro.md")


def test_front_matter_is_left_alone(site):
    text = "---\ntitle: a barrier\nterms: [epilogue]\n---\n\n# Intro\n\nA barrier.\n"
    path = write(site, "intro.md", text)
    fix(site, "intro.md")
    assert path.read_text(encoding="utf-8") == text.replace("A barrier.", "A [barrier](glossary/barriers.md).")


def test_a_page_that_passes_is_not_touched_and_a_second_run_changes_nothing(site):
    path = write(site, "intro.md", "# Intro\n\nA [barrier](glossary/barriers.md), then barriers and a GEMV.\n")
    first = fix(site, "intro.md")
    once = path.read_text(encoding="utf-8")
    assert first.links == ["GEMV -> glossary/gemv.md"]
    second = fix(site, "intro.md")
    assert second.links == [] and path.read_text(encoding="utf-8") == once


def test_an_entry_s_own_terms_are_left_on_its_page(site):
    assert fix(site, "glossary/barriers.md").links == []


def test_a_mention_that_cannot_be_placed_is_reported_not_written():
    text = "# Intro\n\nNo such words here.\n"
    out, links, unplaced = term_fix.linked(text, "intro.md", [Mention("glossary/gemv.md", "GEMV", "a ", " b")])
    assert out == text and links == [] and unplaced == [
        "'GEMV': not found in the file outside code, headings and links"]


def test_a_page_the_fix_cannot_make_pass_is_left_as_it_was(site, monkeypatch):
    path = write(site, "intro.md", "# Intro\n\nA barrier here.\n")
    # Places that miss the mention (here: the heading's words) must not be written.
    monkeypatch.setattr(term_fix, "candidates", lambda text, m: iter([(2, 7)]))
    result = fix(site, "intro.md")
    assert path.read_text(encoding="utf-8") == "# Intro\n\nA barrier here.\n"
    assert result.links == [] and result.unplaced == ["'barrier': no place for its link satisfies the check"]


def test_a_place_the_check_does_not_see_gives_way_to_the_next(site):
    # The words around the mention (a table cell's "barrier:") are not found, so the first
    # place tried is the annotation's "barrier", which the check skips; the fix moves on.
    text = ("# Intro\n\n```cpp\nint a = 1; // (1)!\n```\n\n1.  Held in a barrier.\n\n"
            "| Level | Where |\n|---|---|\n| block | barrier: `x` |\n")
    path = write(site, "intro.md", text)
    result = fix(site, "intro.md")
    assert path.read_text(encoding="utf-8") == text.replace("| barrier:", "| [barrier](glossary/barriers.md):")
    assert result.links == ["barrier -> glossary/barriers.md"] and passes_the_check(site, "intro.md")


def test_a_mention_a_fact_writes_is_linked_by_its_tag(site):
    write(site, "vocabulary/simdgroup.md", "---\nterms: [simdgroups]\n---\n\n# Simdgroup\n\nLanes.\n")
    path = write(site, "intro.md", "# Intro\n\nThe tile is {{fact mlx.tile field=label}}, see\n"
                                   "[the source]({{fact mlx.url rule=tile_macro}}).\n")
    result = fix(site, "intro.md")
    assert path.read_text(encoding="utf-8") == (
        "# Intro\n\nThe tile is [{{fact mlx.tile field=label}}](vocabulary/simdgroup.md), see\n"
        "[the source]({{fact mlx.url rule=tile_macro}}).\n")
    assert result.links == ["simdgroups -> vocabulary/simdgroup.md"] and passes_the_check(site, "intro.md")


def test_the_command_lists_then_fixes(site):
    write(site, "intro.md", "# Intro\n\nA barrier and a GEMV.\n")
    run = [sys.executable, "-m", "gemmglossary.docs_hooks.term_links"]
    listed = subprocess.run(run, cwd=site, capture_output=True, text=True)
    assert listed.returncode == 1, listed.stderr
    assert "docs/intro.md: to link barrier -> glossary/barriers.md" in listed.stdout
    assert "A barrier and" in (site / "docs/intro.md").read_text(encoding="utf-8")
    fixed = subprocess.run(run + ["--fix"], cwd=site, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr
    assert "docs/intro.md: linked GEMV -> glossary/gemv.md" in fixed.stdout
    assert passes_the_check(site, "intro.md")
    again = subprocess.run(run, cwd=site, capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout == ""
    bad = subprocess.run(run + ["nowhere.md"], cwd=site, capture_output=True, text=True)
    assert bad.returncode == 2 and "no such page" in bad.stderr
