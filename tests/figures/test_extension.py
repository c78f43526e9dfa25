"""The figures Markdown extension (gemmglossary.docs_hooks.figures): syntax, output, errors
with the page's own line, and a real mkdocs build that fails on a figure it cannot make."""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import markdown
import pytest

from gemmglossary.docs_hooks import figures as ext
from gemmglossary.figures import FigureError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mkdocs_cli  # noqa: E402 - MkDocs' command in this process (tests/mkdocs_cli.py)


def convert(text: str, page: Path | None = None) -> str:
    md = markdown.Markdown(extensions=["gemmglossary.docs_hooks.facts", "gemmglossary.docs_hooks.figures",
                                       "pymdownx.superfences", "admonition", "attr_list", "md_in_html"])
    if page is not None:
        file = types.SimpleNamespace(src_uri=page.name, abs_src_path=str(page))
        md.treeprocessors.register(types.SimpleNamespace(file=file, run=lambda root: None), "relpath", 0)
    return md.convert(text)


@pytest.mark.parametrize("body,expected", [
    ("tile-pyramid", ("tile-pyramid", {})),
    (" tile-pyramid M=3 ", ("tile-pyramid", {"M": "3"})),
    ('tile-pyramid caption="a `b` c" N=4', ("tile-pyramid", {"caption": "a `b` c", "N": "4"})),
])
def test_parse(body, expected):
    assert ext.parse(body) == expected


@pytest.mark.parametrize("body,message", [
    ("", "needs a name"),
    ("Tile", "not a figure name"),
    ("tile-pyramid M", "'M' is not key=value"),
    ("tile-pyramid M=1 M=2", "given twice"),
    ('tile-pyramid caption="open', "is not key=value"),
])
def test_parse_errors(body, message):
    with pytest.raises(FigureError, match=message):
        ext.parse(body)


def test_a_figure_becomes_a_figure_element_with_caption_and_source():
    html = convert('# T\n\n{{figure tile-pyramid M=100 caption="The `tiled_gemm` pyramid."}}\n\n'
                   "!!! note\n    {{figure tile-pyramid}}\n")
    figs = re.findall(r'<figure class="gg-figure" id="([^"]+)" data-figure="tile-pyramid"><svg.*?</svg>'
                      r"<figcaption>(.*?)</figcaption></figure>", html, re.S)
    assert [f[0] for f in figs] == ["figure-tile-pyramid", "figure-tile-pyramid-2"]
    assert figs[0][1].startswith("The <code>tiled_gemm</code> pyramid. <span class=\"gg-source\">")
    assert "(M = 100, N = 260)" in figs[0][1]
    assert 'aria-labelledby="figure-tile-pyramid-2-title figure-tile-pyramid-2-desc"' in html
    assert '<div class="admonition note">' in html and "<p><figure" not in html


def test_syntax_shown_in_code_is_left_alone():
    html = convert("Write `{{figure NAME}}` on its own line:\n\n```markdown\n{{figure nothing}}\n```\n")
    assert "<figure" not in html and "{{figure nothing}}" in html and "<code>{{figure NAME}}</code>" in html


def test_errors_name_the_page_and_its_own_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("---\ntitle: x\n---\n\n# Page\n\n{{figure tile-pyramid}}\n\n{{figure tile-pyramid kernel=nope}}\n")
    with pytest.raises(FigureError, match=r"^docs/page\.md:9: figure tile-pyramid: argument kernel= must be one of .*mlx-steel, mlx-nax, got 'nope'"):
        convert("# Page\n\n{{figure tile-pyramid}}\n\n{{figure tile-pyramid kernel=nope}}\n", page)


def test_a_figure_the_kernel_cannot_give_is_an_error():
    # matmul_tiled has one TILE constant, no pyramid of WM, WN, TM, TN
    with pytest.raises(FigureError, match=r"<markdown>:1: kernels/matmul_tiled.metal declares no constant WM"):
        convert("{{figure tile-pyramid kernel=matmul_tiled}}\n")
    with pytest.raises(FigureError, match="unknown figure 'nope'"):
        convert("{{figure nope}}\n")
    with pytest.raises(FigureError, match="has no argument 'Q'"):
        convert("{{figure tile-pyramid Q=1}}\n")
    with pytest.raises(FigureError, match="M= must be an integer"):
        convert("{{figure tile-pyramid M=x}}\n")


def test_a_tag_inside_a_paragraph_is_an_error():
    with pytest.raises(FigureError, match="<markdown>:3: a figure tag must be alone on its line"):
        convert("a\n\ntext {{figure tile-pyramid}} more\n")


@pytest.mark.slow
def test_mkdocs_build_draws_figures_and_fails_on_one_it_cannot_make(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Figures\nstrict: true\nmarkdown_extensions:\n  - gemmglossary.docs_hooks.figures\n")
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n{{figure tile-pyramid kernel=matmul_simd_blocked}}\n")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}

    def build():
        return mkdocs_cli.build(["--strict", "-d", tmp_path / "site"], cwd=tmp_path, env=env)

    run = build()
    assert run.returncode == 0, run.stderr
    html = (tmp_path / "site" / "index.html").read_text()
    assert '<figure class="gg-figure" id="figure-tile-pyramid"' in html and "matmul_simd_blocked.metal" in html

    (tmp_path / "docs" / "bad.md").write_text("---\nsearch:\n  boost: 2\n---\n# Bad\n\n"
                                              "{{figure register-blocks kernel=matmul_tiled}}\n")
    run = build()
    assert run.returncode != 0
    assert "docs/bad.md:7: kernels/matmul_tiled.metal declares no constant BM" in run.stdout + run.stderr
