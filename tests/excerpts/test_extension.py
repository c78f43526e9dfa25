"""The excerpts Markdown extension, set up as each engine sets up a page's Markdown.

MkDocs registers its ``relpath`` tree processor (``_RelativePathTreeprocessor``) on the
page's Markdown instance; Zensical puts its ``rendering_context`` extension first. Both
are used here as the pinned engines define them, so a change of either in a new version
fails here, not silently on the site.
"""

from __future__ import annotations

import markdown
import pytest
import yaml
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import _RelativePathTreeprocessor

from gemmglossary.docs_hooks.excerpts import ExcerptError
from gemmglossary.excerpts.update import update

from .conftest import PAGE, REPO

zensical_context = pytest.importorskip(
    "zensical.extensions.context", reason="zensical (the test extra pins it) is not installed")

EXTENSIONS = ["gemmglossary.docs_hooks.excerpts", "attr_list", "pymdownx.superfences", "pymdownx.highlight"]


def mkdocs_convert(project, src_uri: str) -> str:
    """Convert docs/<src_uri> as MkDocs 1.6's Page.render does (front matter stripped)."""
    text = project.read(f"docs/{src_uri}")
    body = text.split("---\n", 2)[2] if text.startswith("---\n") else text
    md = markdown.Markdown(extensions=EXTENSIONS)
    file = File(src_uri, str(project.root / "docs"), str(project.root / "site"), use_directory_urls=True)
    kernel = File("kernels/add.metal", str(project.root), str(project.root / "site"), use_directory_urls=True)
    _RelativePathTreeprocessor(file, Files([file, kernel]), _mkdocs_config())._register(md)
    return md.convert(body)


def _mkdocs_config():
    from mkdocs.config.defaults import MkDocsConfig

    config = MkDocsConfig()
    config.load_dict({"site_name": "t"})
    config.validate()
    return config


def zensical_convert(project, src_uri: str, monkeypatch) -> str:
    """Convert docs/<src_uri> as Zensical's render() does: its context extension first."""
    monkeypatch.chdir(project.root)  # zensical runs in the project folder
    text = project.read(f"docs/{src_uri}")
    body = text.split("---\n", 2)[2] if text.startswith("---\n") else text
    page = zensical_context.Page(url=src_uri.removesuffix(".md") + "/", path=src_uri)
    context = zensical_context.ContextExtension(page=page, config={"docs_dir": "docs"})
    return markdown.Markdown(extensions=[context, *EXTENSIONS]).convert(body)


@pytest.fixture(params=["mkdocs", "zensical"])
def convert(request, monkeypatch):
    if request.param == "mkdocs":
        def with_relpath(project, src):
            return mkdocs_convert(project, src)
        return with_relpath
    return lambda project, src: zensical_convert(project, src, monkeypatch)


def test_both_engines_expand_a_locked_excerpt(project, convert):
    project.page("glossary/add.md", PAGE)
    assert update().ok
    html = convert(project, "glossary/add.md")
    assert "kernels/add.metal · lines 5–11" in html
    # Written relative to the source file: MkDocs rebases it on the page's URL here,
    # Zensical in its Rust stage (tests/zensical checks the built link).
    expected = "../../kernels/add.metal" if "relpath" in convert.__name__ else "../kernels/add.metal"
    assert f'<a class="excerpt-source" href="{expected}">kernels/add.metal, lines 5–11</a>' in html


def test_the_lock_entry_of_the_page_is_the_one_checked(project, convert):
    """The same block on another page is not covered by the first page's entry."""
    assert update().ok  # locks docs/index.md
    project.page("other.md", PAGE)
    with pytest.raises(ExcerptError, match=r"docs/other.md:6: kernels/add.metal lines 5–11: excerpt missing from excerpts.lock.json"):
        convert(project, "other.md")


def test_a_drift_fails_with_the_line_of_the_page_file(project, convert):
    """Engines strip the front matter; the message still names the file's own line."""
    project.page("glossary/add.md", "---\nsearch:\n  boost: 2\n---\n\n" + PAGE)
    assert update().ok
    project.insert_lines("kernels/add.metal", 3, ["// a", "// b"])
    with pytest.raises(ExcerptError) as err:
        convert(project, "glossary/add.md")
    assert ("docs/glossary/add.md:11: kernels/add.metal lines 5–11: moved: now at lines 7–13; "
            "run `gemmglossary excerpts update`") in str(err.value)


def test_a_dropped_excerpt_leaves_an_unused_entry_of_the_page(project, convert):
    assert update().ok
    project.page("index.md", '# Adding one\n\n```metal\n--8<-- "kernels/add.metal:1:3"\n```\n')
    with pytest.raises(ExcerptError) as err:
        convert(project, "index.md")
    text = str(err.value)
    assert "docs/index.md:4: kernels/add.metal lines 1–3: excerpt missing from excerpts.lock.json" in text
    assert "docs/index.md: kernels/add.metal lines 5–11: lock entry that no page uses" in text


def test_a_stray_excerpt_line_fails(project, convert):
    assert update().ok
    project.page("index.md", PAGE + '\n```cpp\n--8<-- "kernels/add.metal:1:3"\n```\n')
    with pytest.raises(ExcerptError, match=r"docs/index.md:\d+: excerpt line .* in a 'cpp' fence is not quoted"):
        convert(project, "index.md")


def test_without_an_engine_there_is_no_page_and_no_expansion(project):
    assert update().ok
    with pytest.raises(ExcerptError, match="did not say which page it is"):
        markdown.markdown(PAGE, extensions=EXTENSIONS)
    # A page with no excerpt needs no page.
    assert "<h1>" in markdown.markdown("# Plain\n\n```metal\nint x;\n```\n", extensions=EXTENSIONS)


def test_the_repository_config_lists_the_extension():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    names = [e if isinstance(e, str) else next(iter(e)) for e in config["markdown_extensions"]]
    assert "gemmglossary.docs_hooks.excerpts" in names
