"""The first mention of a glossary term on a page links to its entry
(gemmglossary.docs_hooks.term_links, with the terms of gemmglossary.docs_hooks.glossary_terms).

Each page is converted as MkDocs converts it (its ``relpath`` tree processor names the
page) with the Markdown extensions the site uses around a mention: what counts as a
mention, what is a link to the entry, the line named, the terms refused, and one strict
MkDocs build of a small site that fails naming the page's line. (The Zensical build of
the same rule is in tests/zensical.)
"""

from __future__ import annotations

import os
import sys
import textwrap
import types
from pathlib import Path

import markdown
import pytest

from gemmglossary.docs_hooks import glossary_terms
from gemmglossary.docs_hooks.glossary_terms import TermsError
from gemmglossary.docs_hooks.term_links import TermLinkError, link_targets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mkdocs_cli  # noqa: E402 - MkDocs' command in this process (tests/mkdocs_cli.py)

REPO = Path(__file__).resolve().parents[2]

EXTENSIONS = ["admonition", "attr_list", "md_in_html", "tables", "toc", "pymdownx.details",
              "pymdownx.highlight", "pymdownx.inlinehilite", "pymdownx.superfences", "pymdownx.tabbed",
              "gemmglossary.docs_hooks.term_links"]
CONFIG = {"pymdownx.highlight": {"line_spans": "__span", "anchor_linenums": True}}

ENTRIES = {
    "glossary/barriers.md": "---\nterms: [barrier, barriers, threadgroup barrier]\n---\n\n# Barriers\n\nA barrier.\n",
    "glossary/gemv.md": "---\nterms: [gemv]\n---\n\n# GEMV\n\nA matrix times a vector.\n",
    "glossary/quantized.md": "---\nterms: [quantized gemv]\n---\n\n# Quantized\n\nFewer bits.\n",
    "glossary/threadgroup.md": "---\nterms: [threadgroup]\n---\n\n# Threadgroup\n\nThreads together.\n",
}


@pytest.fixture
def docs(tmp_path):
    root = tmp_path / "docs"
    for page, text in ENTRIES.items():
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text(text, encoding="utf-8")
    return root


def convert(docs: Path, page: str, text: str) -> str:
    """``text`` written as ``page`` and converted as MkDocs converts it (front matter off)."""
    path = docs / page
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
    md = markdown.Markdown(extensions=EXTENSIONS, extension_configs=CONFIG)
    file = types.SimpleNamespace(src_uri=page, abs_src_path=str(path))
    md.treeprocessors.register(types.SimpleNamespace(file=file, run=lambda root: None), "relpath", 0)
    return md.convert(body)


def problems(docs: Path, page: str, text: str) -> list[str]:
    """The lines of the error the page raises ([] when it passes)."""
    try:
        convert(docs, page, text)
    except TermLinkError as exc:
        return [line.strip() for line in str(exc).splitlines()[1:]]
    return []


# ----------------------------------------------------------------------------- the rule


def test_an_unlinked_first_mention_fails_naming_page_line_phrase_and_link(docs):
    found = problems(docs, "intro.md", "# Intro\n\nSome text.\n\nTwo Barriers per\nstep, and a GEMV.\n")
    assert found == [
        "docs/intro.md:5: first mention of 'Barriers' does not link its entry: write "
        "[Barriers](glossary/barriers.md)",
        "docs/intro.md:6: first mention of 'GEMV' does not link its entry: write [GEMV](glossary/gemv.md)",
    ]


def test_a_linked_first_mention_passes_and_later_mentions_are_free(docs):
    assert problems(docs, "intro.md", "# Intro\n\nTwo [barriers](glossary/barriers.md) per step.\n\n"
                                      "Every barrier after it needs no link.\n") == []


@pytest.mark.parametrize("link", ["[the second one](glossary/barriers.md#b2)", "[it](glossary/barriers/)",
                                  "[it](./glossary/../glossary/barriers.md)", "[**it**](glossary/barriers.md)"])
def test_any_link_to_the_entry_counts(docs, link):
    assert problems(docs, "intro.md", f"# Intro\n\nSee {link}; a barrier.\n") == []


def test_links_are_resolved_from_the_page_folder(docs):
    assert problems(docs, "case-studies/one.md", "# One\n\nA [barrier](../glossary/barriers.md).\n") == []
    # the same link written as if from docs/ leads elsewhere: its text is no mention, the next one is
    assert problems(docs, "case-studies/one.md", "# One\n\nA [barrier](glossary/barriers.md), a barrier.\n") == [
        "docs/case-studies/one.md:3: first mention of 'barrier' does not link its entry: write "
        "[barrier](../glossary/barriers.md)"]


def test_link_targets():
    assert link_targets("barriers.md#x", "glossary/gemv.md") == ("glossary/barriers.md",)
    assert link_targets("../index.md", "glossary/gemv.md") == ("index.md",)
    assert link_targets("../split-k/", "glossary/gemv/index.md") == ("glossary/split-k.md", "glossary/split-k/index.md")
    assert link_targets("https://example.com/glossary/barriers.md", "index.md") == ()
    assert link_targets("#anchor", "index.md") == ()
    assert link_targets("../kernels/x.metal", "glossary/gemv.md") == ()


#: Places that are not a mention. Each is followed by a prose mention, which must still be
#: the one reported: a place that is skipped neither passes nor consumes the entry's event.
NOT_MENTIONS = {
    "inline code": "Call `threadgroup_barrier` and `barrier()` here.",
    "code block": "```cpp\n// a barrier\nthreadgroup_barrier(mem_flags::mem_threadgroup);\n```",
    "heading": "## Why a barrier",
    "table header": "| Barrier | Cost |\n|---|---|\n| one | some |",
    "admonition title": '!!! note "One barrier"\n    Nothing here.',
    "folded summary": '??? note "One barrier"\n    Nothing here.',
    "tab label": '=== "Barrier"\n\n    Nothing here.',
    "another link's text": "[the barrier section](elsewhere.md) of another page.",
    "code annotation": '```cpp\nint a = 1; // (1)!\n```\n\n1.  A barrier, explained in the tooltip.',
    "part of a longer word": "A threadgroup_barrier, a non-barrier and barriers-free code.",
    "run-in label": "**Barriers.** Two per step, said below.",
    "run-in label of a list item": "- **Barrier:** said below.",
}


@pytest.mark.parametrize("place", sorted(NOT_MENTIONS))
def test_what_is_not_a_mention(docs, place):
    text = f"# Intro\n\n{NOT_MENTIONS[place]}\n\nThen a barrier.\n"
    line = text.split("\n").index("Then a barrier.") + 1
    assert problems(docs, "intro.md", text) == [
        f"docs/intro.md:{line}: first mention of 'barrier' does not link its entry: write "
        "[barrier](glossary/barriers.md)"]


def test_a_link_inside_an_annotation_does_not_count(docs):
    text = ('# Intro\n\n```cpp\nint a = 1; // (1)!\n```\n\n1.  See [barriers](glossary/barriers.md).\n\n'
            "Then a barrier.\n")
    assert problems(docs, "intro.md", text) == [
        "docs/intro.md:9: first mention of 'barrier' does not link its entry: write [barrier](glossary/barriers.md)"]


def test_a_numbered_list_after_a_plain_code_block_is_prose(docs):
    text = "# Intro\n\n```cpp\nint a = f(1);\n```\n\n1.  A barrier.\n"
    assert problems(docs, "intro.md", text) == [
        "docs/intro.md:7: first mention of 'barrier' does not link its entry: write [barrier](glossary/barriers.md)"]


@pytest.mark.parametrize("place, text", [
    ("list item", "- a barrier"),
    ("table cell", "| Kernel | Has |\n|---|---|\n| k | a barrier |"),
    ("admonition body", '!!! note "Note"\n    One barrier.'),
    ("folded body", '??? note "Note"\n    One barrier.'),
    ("block quote", "> One barrier."),
    ("emphasis", "One *barrier*."),
    ("bold inside a sentence", "One **barrier** per step."),
    ("bold opening a sentence, no label", "**A barrier** per step."),
    ("upper case", "One BARRIER."),
])
def test_prose_everywhere_is_a_mention(docs, place, text):
    found = problems(docs, "intro.md", f"# Intro\n\n{text}\n")
    assert len(found) == 1 and "first mention of" in found[0] and "glossary/barriers.md" in found[0], found


def test_the_longest_term_is_the_mention(docs):
    # "quantized GEMV" is the quantized entry's term: a mention of it, not of GEMV
    assert problems(docs, "intro.md", "# Intro\n\nA [quantized GEMV](glossary/quantized.md).\n") == []
    assert problems(docs, "intro.md", "# Intro\n\nA quantized GEMV.\n") == [
        "docs/intro.md:3: first mention of 'quantized GEMV' does not link its entry: write "
        "[quantized GEMV](glossary/quantized.md)"]
    # two terms starting at one word: "threadgroup barrier" is the barrier entry's
    assert problems(docs, "intro.md", "# Intro\n\nOne threadgroup barrier.\n") == [
        "docs/intro.md:3: first mention of 'threadgroup barrier' does not link its entry: write "
        "[threadgroup barrier](glossary/barriers.md)"]


def test_an_entry_may_mention_its_own_terms(docs):
    text = "---\nterms: [barrier, barriers]\n---\n\n# Barriers\n\nA barrier, then a GEMV.\n"
    assert problems(docs, "glossary/barriers.md", text) == [
        "docs/glossary/barriers.md:7: first mention of 'GEMV' does not link its entry: write [GEMV](gemv.md)"]


def test_snippet_pages_are_not_checked(docs):
    (docs / "snippets").mkdir()
    (docs / "snippets" / "k.py").write_text("# %%\n")
    assert problems(docs, "snippets/k.md", "# Snippet\n\nA barrier.\n") == []
    assert problems(docs, "snippets/index.md", "# Run it\n\nA barrier.\n") != []


def test_a_page_no_engine_names_is_not_checked():
    assert "barrier" in markdown.markdown("A barrier.", extensions=["gemmglossary.docs_hooks.term_links"])


def test_the_terms_are_read_again_when_an_entry_changes(docs):
    assert problems(docs, "intro.md", "# Intro\n\nA fence.\n") == []
    (docs / "glossary" / "barriers.md").write_text("---\nterms: [barrier, fence]\n---\n\n# Barriers\n")
    assert problems(docs, "intro.md", "# Intro\n\nA fence.\n") == [
        "docs/intro.md:3: first mention of 'fence' does not link its entry: write [fence](glossary/barriers.md)"]


# ----------------------------------------------------------------------------- the terms


@pytest.mark.parametrize("front, message", [
    ("terms: Barrier", "must be a list of phrases"),
    ("terms: []", "must be a list of phrases"),
    ("terms: [Barrier]", "'Barrier' must be lower case"),
    ("terms: ['two  spaces']", "with single spaces"),
    ("terms: [3]", "3 is not a phrase"),
    ("terms: [barrier", "front matter is not YAML"),
])
def test_bad_terms_are_refused_naming_the_file(docs, front, message):
    (docs / "glossary" / "bad.md").write_text(f"---\n{front}\n---\n\n# Bad\n")
    with pytest.raises(TermsError, match="docs/glossary/bad.md: ") as info:
        convert(docs, "intro.md", "# Intro\n")
    assert message in str(info.value)


def test_a_term_of_two_entries_is_refused_naming_both(docs):
    (docs / "glossary" / "fence.md").write_text("---\nterms: [fence, barrier]\n---\n\n# Fence\n")
    with pytest.raises(TermsError) as info:
        convert(docs, "intro.md", "# Intro\n")
    assert "'barrier' is a term of docs/glossary/barriers.md and of docs/glossary/fence.md" in str(info.value)


def test_every_entry_of_the_site_declares_its_terms():
    """Each glossary entry names the phrases that must link to it, and the site's terms
    lead to one entry each (the index builds)."""
    docs = REPO / "docs"
    entries = sorted(p for p in (docs / "glossary").glob("*.md") if p.name != "index.md")
    assert len(entries) >= 14
    for path in entries:
        assert glossary_terms.page_terms(path.read_text(encoding="utf-8"), path.name), f"{path.name}: no terms:"
    index = glossary_terms.load_index(docs)
    assert index.entry_of("Split-K") == "glossary/split-k.md"
    assert index.entry_of("threadgroup  barrier") == "glossary/barriers.md"


# ----------------------------------------------------------------------------- a strict build

SITE = {
    "mkdocs.yml": """\
        site_name: Links
        theme: {name: material, font: false}
        markdown_extensions: [admonition, gemmglossary.docs_hooks.term_links]
        nav: [index.md, glossary/barriers.md]
        """,
    "docs/index.md": "# Links\n\nThe [barriers](glossary/barriers.md) page.\n",
    "docs/glossary/barriers.md": "---\nterms: [barrier, barriers]\n---\n\n# Barriers\n\nA barrier.\n",
}


def test_a_strict_build_fails_on_an_unlinked_first_mention(tmp_path):
    for name, text in SITE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")

    def build():
        return mkdocs_cli.build(["--strict", "-d", tmp_path / "site"], cwd=tmp_path,
                                env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    run = build()
    assert run.returncode == 0, run.stdout + run.stderr
    (tmp_path / "docs" / "index.md").write_text("# Links\n\nTwo barriers, then\nthe [page](glossary/barriers.md).\n")
    run = build()
    assert run.returncode != 0
    assert ("docs/index.md:3: first mention of 'barriers' does not link its entry: write "
            "[barriers](glossary/barriers.md)") in run.stdout + run.stderr
