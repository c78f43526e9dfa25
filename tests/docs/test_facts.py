"""The facts Markdown extension (gemmglossary.docs_hooks.facts) on its own, and in a build.

Values are the ones worked out from MLX's matmul.cpp in tests/mlx/test_matmul.py; here
the point is the syntax, the errors and where they point.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import markdown
import pytest

from gemmglossary.docs_hooks import facts
from gemmglossary.mlx import matmul as mm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mkdocs_cli  # noqa: E402 - MkDocs' command in this process (tests/mkdocs_cli.py)

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("body,value", [
    ("mlx.tile", "64×64×16"),
    ("mlx.tile field=block", "4×4"),
    ("mlx.tile field=threadgroup", "(32, 2, 2)"),
    ("mlx.tile device=d M=512 N=512 K=256 field=label", "64×32×32, 2×2 simdgroups"),
    ("mlx.tile dtype=complex64 tb=true field=simdgroups", "4×1"),
    ("mlx.nax_tile device=s M=4096 N=4096 K=4096", "64×128×256"),
    ("mlx.route M=4096 N=4096 K=4096 gen=17 field=threads", "512"),
    ("mlx.route M=4096 N=4096 K=4096 gen=17 tf32=false field=kernel", "fused"),
    ("mlx.route M=64 N=64 K=4096 field=partitions", "32"),
    ("mlx.route M=1 N=4096 K=4096 field=kernel_name", "gemv_t_float32_bm1_bn16_sm8_sn4_tm4_tn4_nc0_axpby0"),
    ("mlx.configs field=threads", "128 or 64"),
    ("mlx.configs field=simdgroups", "2×2, 4×1 or 1×2"),
    ("mlx.configs kind=nax field=threads", "512 or 256"),
    ("mlx.loader", "8"),
    ("mlx.loader operand=b field=tcols", "8"),
    ("mlx.loader config=32x32x16x2x2 field=n_reads", "4"),
    ("mlx.loader field=bytes", "32"),
    ("mlx.threadgroup_memory unit=KiB", "9.25"),
    ("mlx.host field=version", mm.MLX_VERSION),
    ("mlx.tile M=64 N=64 K=4096 routed=false field=ctile", "64×64"),
    ("mlx.nax_tile device=s M=4096 N=4096 K=10000 field=bk", "64"),
    ("mlx.host", f"v{mm.MLX_VERSION}"),
    ("llama.pins", "0c1e57098bba43ac29e6e3b677cdceebdd22334f"),
    ("mlx.const name=large_matmul", "2^20"),
    ("mlx.const name=splitk_min_k", "128"),
    ("mlx.const name=gemv_wide_max_rows", "15"),
    ("mlx.url rule=tile_macro", mm.source_url(90, 171)),
    ("mlx.url path=mlx/utils.h start=214 end=217", mm.source_url(214, 217, path="mlx/utils.h")),
    ("emulator.tg_fill", "0xFF"),
    ("emulator.tg_fill as_type=bfloat", "NaN"),
    ("emulator.tg_fill as_type=half", "NaN"),
    ("emulator.tg_fill as_type=int", "-1"),
    ("emulator.tg_fill as_type=uchar", "255"),
])
def test_fact_values(body, value):
    assert facts.evaluate(body) == value


def test_an_exercise_s_position_counts_every_exercise_in_order():
    count = len(list((REPO / "exercises").glob("*/exercise.toml")))
    assert count >= 14
    assert facts.evaluate("exercise name=scale_add") == f"Exercise 1 of {count}"
    assert facts.evaluate("exercise name=simdgroup_reductions field=number") == str(count)
    assert facts.evaluate("exercise name=barriers field=count") == str(count)
    with pytest.raises(facts.FactError, match="no exercise 'nope'; there are scale_add, cooperative_load"):
        facts.evaluate("exercise name=nope")


def test_every_registered_fact_has_a_value_with_its_defaults_or_needs_arguments():
    for name, func in facts.FACTS.items():
        try:
            assert facts.evaluate(name)
        except facts.FactError as exc:
            assert "needs" in str(exc), (name, exc)


@pytest.mark.parametrize("body,message", [
    ("", "needs a name"),
    ("mlx.nope", "unknown fact 'mlx.nope'"),
    ("Mlx.tile", "not a fact name"),
    ("mlx.tile foo=1", "has no argument 'foo'"),
    ("mlx.tile M=x", "M= must be an integer"),
    ("mlx.tile ta=yes", "ta= must be true or false"),
    ("mlx.tile field=zz", "field= must be one of"),
    ("mlx.tile M=2 M=3", "given twice"),
    ("mlx.tile M", "'M' is not key=value"),
    ("mlx.route M=4", "needs N=, K="),
    ("mlx.tile dtype=int8", "dtype must be one of"),
    ("mlx.tile M=0", "argument M= must be 1 to 2147483647, got 0"),
    ("mlx.route M=1 N=1 K=8 field=tile", "goes to dot_product"),
    # a tile shown for a product that never uses it (issue #32, 3 and 15)
    ("mlx.tile M=256 N=256 K=256", "to splitk, not to the fused kernel"),
    ("mlx.nax_tile device=s M=256 N=256 K=16384", "to splitk_nax, not to the NAX fused kernel"),
    ("mlx.url rule=nope", "rule must be one of"),
    ("mlx.loader config=64x64", "config must be BMxBNxBKxWMxWN"),
])
def test_bad_facts_are_errors(body, message):
    with pytest.raises(facts.FactError, match=message.replace("(", r"\(").replace(")", r"\)")):
        facts.evaluate(body)


def test_a_line_with_several_facts_and_a_malformed_one():
    assert facts.expand_line("a {{fact mlx.tile field=bm}}, b {{fact mlx.tile field=wm}}.") == "a 64, b 2."
    for bad in ("x {{fact mlx.tile field=bm} y", "{{ fact mlx.tile}}", "{{fact mlx.tile", "{{factmlx}}"):
        if bad == "{{factmlx}}":
            assert facts.expand_line(bad) == bad  # not the word "fact": ordinary text
            continue
        with pytest.raises(facts.FactError, match="malformed fact at column"):
            facts.expand_line(bad)


def convert(text: str, page: Path | None = None) -> str:
    md = markdown.Markdown(extensions=["gemmglossary.docs_hooks.facts", "pymdownx.superfences", "attr_list"])
    if page is not None:
        # What MkDocs does before converting a page: register a tree processor that holds its File.
        file = types.SimpleNamespace(src_uri=page.name, abs_src_path=str(page))
        proc = types.SimpleNamespace(file=file, run=lambda root: None)
        md.treeprocessors.register(proc, "relpath", 0)
    return md.convert(text)


def test_facts_expand_in_prose_code_spans_fences_and_links():
    html = convert("BM is {{fact mlx.tile field=bm}}, `WM = {{fact mlx.tile field=wm}}`, "
                   "[the macro]({{fact mlx.url rule=tile_macro}}).\n\n"
                   "```text\nthreads: {{fact mlx.tile field=threads}}\n```\n")
    assert "BM is 64" in html and "<code>WM = 2</code>" in html
    assert f'<a href="{mm.rule_url("tile_macro")}">the macro</a>' in html
    assert "threads: 128" in html and "{{fact" not in html


def test_an_error_names_the_page_and_its_own_line(tmp_path):
    page = tmp_path / "page.md"
    # Front matter and an expanded excerpt change the text Markdown sees; the error still
    # names the line of the page's file.
    source = "---\ntitle: x\n---\n\n# Page\n\nFirst {{fact mlx.tile}}.\n\nThen {{fact mlx.tile M=none}}.\n"
    page.write_text(source)
    seen_by_markdown = "# Page\n\nan excerpt\nof three\nlines\n\nFirst {{fact mlx.tile}}.\n\nThen {{fact mlx.tile M=none}}.\n"
    with pytest.raises(facts.FactError, match=r"^docs/page\.md:9: fact mlx.tile: argument M= must be an integer"):
        convert(seen_by_markdown, page)


def test_without_a_page_the_error_names_the_converted_line():
    with pytest.raises(facts.FactError, match=r"^<markdown>:3: unknown fact"):
        convert("a\n\n{{fact mlx.nope}}\n")


@pytest.mark.slow
def test_mkdocs_build_expands_facts_and_fails_on_a_bad_one(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Facts\nstrict: true\nmarkdown_extensions:\n  - gemmglossary.docs_hooks.facts\n")
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nThreads: {{fact mlx.tile field=threads}}.\n")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}

    def build():
        return mkdocs_cli.build(["--strict", "-d", tmp_path / "site"], cwd=tmp_path, env=env)

    run = build()
    assert run.returncode == 0, run.stderr
    assert "Threads: 128." in (tmp_path / "site" / "index.html").read_text()

    (tmp_path / "docs" / "bad.md").write_text("---\nsearch:\n  boost: 2\n---\n# Bad\n\n{{fact mlx.tile field=nope}}\n")
    run = build()
    assert run.returncode != 0
    assert "docs/bad.md:7: fact mlx.tile: argument field= must be one of" in run.stdout + run.stderr
    assert "Traceback" not in run.stderr  # a page's mistake is its message (issue 36)


def test_every_fact_on_the_site_evaluates():
    """The pages' facts, checked line by line with the page's own line numbers (the site
    build checks them too, more slowly)."""
    pages = sorted((REPO / "docs").rglob("*.md"))
    count = 0
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            try:
                facts.expand_line(line)
            except facts.FactError as exc:
                pytest.fail(f"docs/{page.relative_to(REPO / 'docs')}:{number}: {exc}")
            count += len(facts.OPENER.findall(line))
    assert count > 0, "no page uses a fact"


def test_the_swizzle_figure_s_tile_is_not_one_mlx_picks():
    """glossary/threadgroup-swizzle.md says the figure's 32 × 32 tile is never MLX's choice."""
    from gemmglossary.mlx import steel

    assert mm.TileConfig(*steel.CONFIGS[0]) not in set(mm.regular_configs())
    assert "never picks" in (REPO / "docs/glossary/threadgroup-swizzle.md").read_text(encoding="utf-8")
