"""The site's coverage note and the marks on unexecuted lines, through the same
Markdown extensions as the site (mkdocs.yml's pymdownx.highlight settings)."""

from __future__ import annotations

import markdown
import pytest
import yaml

from gemmglossary import paths
from gemmglossary.coverage.excerpts import ExcerptCoverage
from gemmglossary.coverage.site import UNEXECUTED_CLASS, SiteCoverage, mark_unexecuted


def highlight_config() -> dict:
    class Loader(yaml.SafeLoader):
        pass
    Loader.add_multi_constructor("tag:", lambda loader, suffix, node: None)  # !!python/name: tags
    config = yaml.load((paths.project_root() / "mkdocs.yml").read_text(), Loader=Loader)
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict) and "pymdownx.highlight" in ext:
            return ext["pymdownx.highlight"]
    raise AssertionError("mkdocs.yml has no pymdownx.highlight settings")


def render(note: str) -> str:
    md = markdown.Markdown(extensions=["attr_list", "pymdownx.superfences", "pymdownx.highlight"],
                           extension_configs={"pymdownx.highlight": highlight_config()})
    return md.convert(f"Source: [k.metal](k.metal){{ .excerpt-source }}{note}\n\n"
                      '```metal linenums="10"\nint a;\nif (x) y();\nz();\nw();\n```\n')


def coverage(missing) -> SiteCoverage:
    executed = tuple(n for n in range(10, 14) if n not in missing)
    row = ExcerptCoverage("p/q.md", "kernels/k.metal", 10, 13, executed, tuple(missing))
    return SiteCoverage({("p/q.md", "kernels/k.metal", 10, 13): row})


def test_unexecuted_lines_are_marked_and_only_they():
    html = mark_unexecuted(render(coverage([11]).note("p/q.md", "kernels/k.metal", 10, 13, "../")))
    assert 'href="../emulator.md#line-coverage"' in html and "lines executed" in html
    assert f'<span id="__span-0-11" class="{UNEXECUTED_CLASS}"' in html
    assert html.count(UNEXECUTED_CLASS) == 1


def test_a_fully_executed_excerpt_has_no_marks():
    html = mark_unexecuted(render(coverage([]).note("p/q.md", "kernels/k.metal", 10, 13, "../")))
    assert "lines executed" in html and UNEXECUTED_CLASS not in html


def test_a_mark_that_finds_no_line_is_an_error():
    html = render(' · [x](e.md){ .excerpt-coverage data-unexecuted="99" }')
    with pytest.raises(ValueError, match="99"):
        mark_unexecuted(html)


def test_a_build_without_coverage_says_so():
    note = SiteCoverage(None, "not measured in this build").note("p.md", "k", 1, 2, "")
    assert "not measured" in note


def test_without_the_test_dependencies_the_site_builds_and_says_why(monkeypatch, caplog):
    # README's first line installs no test runner; a coverage run is then impossible, which
    # must neither stop `mkdocs serve` (mkdocs.yml is strict) nor pass unnoticed
    from gemmglossary.coverage import collect, session

    monkeypatch.setattr(collect, "RUN_REQUIRES", {"no_such_module_for_this_test": "no-such-dist"})
    monkeypatch.setattr(collect, "load", lambda key: None)  # no report made before
    monkeypatch.delenv(session.ENV, raising=False)  # nor any made by the test session under way
    monkeypatch.delenv("GEMMGLOSSARY_SITE_COVERAGE", raising=False)
    with pytest.raises(collect.CoverageUnavailable, match=r"no-such-dist.*pip install -e '\.\[test\]'"):
        collect.current()
    with caplog.at_level("INFO", logger="mkdocs"):
        built = SiteCoverage.for_build()
    assert built.rows is None
    assert "test dependencies are not installed" in built.note("p.md", "k", 1, 2, "")
    assert any("no-such-dist" in r.getMessage() and r.levelname == "INFO" for r in caplog.records)


def test_an_exempted_line_is_marked_too():
    row = ExcerptCoverage("p.md", "kernels/k.metal", 10, 13, (10, 11, 12), (), {13: "why"})
    html = mark_unexecuted(render(SiteCoverage({("p.md", "kernels/k.metal", 10, 13): row})
                                  .note("p.md", "kernels/k.metal", 10, 13, "")))
    assert "3 of 3 lines executed (1 exempted)" in html
    assert f'<span id="__span-0-13" class="{UNEXECUTED_CLASS}"' in html


def test_a_project_without_a_coverage_run_gets_no_note():
    assert SiteCoverage(None).note("p.md", "k", 1, 2, "") == ""


def test_the_excerpts_extension_marks_the_lines_under_either_engine():
    # the marks are a postprocessor of the excerpts extension, so Zensical, which runs no
    # MkDocs hook, gets them too
    from gemmglossary.docs_hooks.excerpts import ExcerptsExtension
    md = markdown.Markdown(extensions=["attr_list", "pymdownx.superfences", "pymdownx.highlight", ExcerptsExtension()],
                           extension_configs={"pymdownx.highlight": highlight_config()})
    html = md.convert('Source: [k](k.metal){ .excerpt-source } · [x](e.md){ .excerpt-coverage data-unexecuted="11" }'
                      '\n\n```metal linenums="10"\nint a;\nif (x) y();\n```\n')
    assert f'<span id="__span-0-11" class="{UNEXECUTED_CLASS}"' in html
