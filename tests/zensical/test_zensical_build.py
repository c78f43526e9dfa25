"""The site built with Zensical (the pinned version of the test extra), as `gemmglossary zensical` does.

- A plain ``zensical build`` of mkdocs.yml (no staging: no snippet pages, no kernels)
  fails, saying to run ``gemmglossary zensical``.
- A minimal fixture site (the repository's theme and Markdown extensions, one page with a
  first-party and an MLX excerpt under front matter, one snippet) built with both engines:
  every excerpt expanded with the file's own line numbers, a source link that resolves to
  the published kernel, the same pages and the same code under MkDocs; a drifted excerpt
  fails the Zensical build, naming the page's line, and so does a figure that cannot be
  drawn (the figures extension runs under Zensical as under MkDocs).
- The real site built with Zensical once, compared with the session's MkDocs build: the
  same pages, every locked excerpt shown with its lines, every snippet page with its
  outputs (the notebooks executed once for both engines), and every generated figure the
  same as MkDocs draws it.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urljoin

import pytest
import yaml

from gemmglossary import paths, vendor
from gemmglossary.docs_hooks import zensical_site
from gemmglossary.excerpts.update import update

REPO = Path(__file__).resolve().parents[2]

sys.path.insert(0, str(REPO / "tests"))
import mkdocs_cli  # noqa: E402 - MkDocs' command in this process (tests/mkdocs_cli.py)

pytestmark = pytest.mark.slow

if not Path(sys.executable).with_name("zensical").is_file():
    # The test extra pins zensical; a CI run never skips.
    if os.environ.get("CI") == "true":
        raise RuntimeError("zensical is not installed (pip install -e '.[test]'); CI may not skip the Zensical build")
    pytest.skip("zensical is not installed (pip install -e '.[test]')", allow_module_level=True)

KERNEL = "\n".join(f"// line {n}" if n != 3 else "kernel void k(device float* a [[buffer(0)]]) { a[0] = 1.0f; }"
                   for n in range(1, 9)) + "\n"

PAGE = """\
---
search:
  boost: 2
---

# Quoted

```metal annotate="3"
--8<-- "kernels/k.metal:2:4"
```

1.  The kernel.

```metal
--8<-- "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h:32:40"
```

Run it: [k.py](../snippets/k.py).
"""

SNIPPET = '''\
# %% [markdown]
# # A snippet
# Run it with `python snippets/k.py`. Download this snippet: [k.py](k.py).

# %%
print("printed by the snippet", 6 * 7)
'''


def test_the_installed_zensical_is_the_pinned_one():
    """docs_hooks/page.py reads Zensical's page context as the pinned version defines it."""
    import tomllib
    from importlib.metadata import version

    extra = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["test"]
    [pin] = [d for d in extra if d.startswith("zensical")]
    assert pin == f"zensical=={version('zensical')}", f"installed {version('zensical')}, pinned {pin}"


def _fixture_site(root: Path) -> Path:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    config["site_name"] = "Fixture"
    config["nav"] = [{"Home": "index.md"}, {"Quoted": "glossary/quoted.md"}, {"Snippet": "snippets/k.py"}]
    config["hooks"] = [str(REPO / "docs" / ".hooks" / "excerpts.py"), str(REPO / "docs" / ".hooks" / "snippets.py")]
    (root / "docs" / "glossary").mkdir(parents=True)
    (root / "kernels").mkdir()
    (root / "snippets").mkdir()
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "docs" / "index.md").write_text("# Fixture\n\nSee [the quoted page](glossary/quoted.md).\n")
    (root / "docs" / "glossary" / "quoted.md").write_text(PAGE)
    (root / "kernels" / "k.metal").write_text(KERNEL)
    (root / "snippets" / "k.py").write_text(SNIPPET)
    (root / "excerpts.lock.json").write_text('{"version": 1, "excerpts": []}\n')
    shutil.copy(REPO / "kernels" / "vendor.toml", root / "kernels" / "vendor.toml")
    return root


@contextlib.contextmanager
def project_at(root: Path):
    """The tooling pointed at ``root`` (GEMMGLOSSARY_ROOT) inside the block only."""
    saved = os.environ.get("GEMMGLOSSARY_ROOT")
    os.environ["GEMMGLOSSARY_ROOT"] = str(root)
    try:
        assert paths.project_root() == root.resolve()
        yield root
    finally:
        if saved is None:
            os.environ.pop("GEMMGLOSSARY_ROOT", None)
        else:
            os.environ["GEMMGLOSSARY_ROOT"] = saved


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory):
    root = _fixture_site(tmp_path_factory.mktemp("fixture")).resolve()
    with project_at(root):
        vendor.ensure()
        assert update().ok
    return root


def _zensical(root: Path, site: Path) -> subprocess.CompletedProcess:
    with project_at(root):
        return zensical_site.build(site, log=lambda line: None)


def _mkdocs(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GEMMGLOSSARY_ROOT": str(root), "NO_MKDOCS_2_WARNING": "1"}
    return mkdocs_cli.build(["--strict", "-d", site], cwd=root, env=env)


def pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))


def _excerpt_code(page_html: str) -> list[str]:
    """The text of each excerpt's code (line numbers and tags stripped)."""
    blocks = [b for b in re.findall(r"<pre><span></span><code>(.*?)</code></pre>", page_html, re.S)
              if "data-linenos" in b]  # (the numbers are empty spans: pymdownx-inline)
    return [html.unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks]


def excerpt_problems(site: Path, page: str, file: str, start: int, end: int) -> list[str]:
    """The excerpt of ``file`` lines start..end on ``page`` (docs path) is expanded: titled,
    with anchors for each file line start..end, and the source link resolves."""
    url = page[: -len("index.md")] if page.endswith("index.md") else page[: -len(".md")] + "/"
    text = (site / url / "index.html").read_text(encoding="utf-8")
    shown = file.removeprefix("kernels/vendor/")
    span = f"line {start}" if start == end else f"lines {start}–{end}"
    title = f'<span class="filename">{shown} · {span}</span>'
    at = text.find(title)
    if at < 0:
        return [f"{page}: no block titled {shown} · {span}"]
    block = text[at:text.find("</code></pre>", at)]
    numbers = [int(n) for n in re.findall(r'href="#__codelineno-\d+-(\d+)"', block)]
    problems = []
    if numbers != list(range(start, end + 1)):
        problems.append(f"{page}: {shown} · {span} shows line numbers {numbers[:3]}...{numbers[-3:]}")
    links = re.findall(r'<a class="excerpt-source" href="([^"]+)">([^<]+)</a>', text)
    mine = [href for href, label in links if label.startswith(f"{shown}, {span}")]
    if not mine:
        problems.append(f"{page}: no source link for {shown} · {span}")
    for href in mine:
        if href.startswith("https://"):
            continue
        target = urljoin(f"http://site/{url}", href).removeprefix("http://site/")
        if not (site / target).is_file():
            problems.append(f"{page}: source link {href} -> {target} is not in the site")
    return problems


def test_fixture_site_under_both_engines(fixture_root, tmp_path):
    zen, mk = tmp_path / "zensical", tmp_path / "mkdocs"
    run = _zensical(fixture_root, zen)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Kernel is running over TCP" not in run.stdout + run.stderr
    for file, start, end in (("kernels/k.metal", 2, 4),
                             ("kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h", 32, 40)):
        assert not excerpt_problems(zen, "glossary/quoted.md", file, start, end)
    quoted = (zen / "glossary" / "quoted" / "index.html").read_text(encoding="utf-8")
    assert '<a class="excerpt-source" href="../../kernels/k.metal">' in quoted  # rebased on the URL
    assert '// (1)!' in html.unescape(re.sub(r"<[^>]+>", "", quoted))  # the annotation marker
    assert 'href="../../snippets/k/"' in quoted, "links to a snippet lead to its page"
    snippet = (zen / "snippets" / "k" / "index.html").read_text(encoding="utf-8")
    assert "printed by the snippet 42" in snippet and "<h1" in snippet
    assert (zen / "snippets" / "k.py").read_text() == SNIPPET, "the snippet is there for download"

    run = _mkdocs(fixture_root, mk)
    assert run.returncode == 0, run.stdout + run.stderr
    assert pages(zen) == pages(mk)
    mk_quoted = (mk / "glossary" / "quoted" / "index.html").read_text(encoding="utf-8")
    assert _excerpt_code(quoted) == _excerpt_code(mk_quoted) and len(_excerpt_code(quoted)) == 2
    assert "printed by the snippet 42" in (mk / "snippets" / "k" / "index.html").read_text(encoding="utf-8")


def test_a_drifted_excerpt_fails_the_zensical_build(fixture_root, tmp_path):
    kernel = fixture_root / "kernels" / "k.metal"
    kernel.write_text("// new first line\n" + KERNEL)
    try:
        run = _zensical(fixture_root, tmp_path / "site")
        assert run.returncode != 0
        assert ("docs/glossary/quoted.md:9: kernels/k.metal lines 2–4: moved: now at lines 3–5; "
                "run `gemmglossary excerpts update`") in run.stderr
        assert not (tmp_path / "site").exists(), "no site from a failed build"
    finally:
        kernel.write_text(KERNEL)


def test_a_figure_that_cannot_be_drawn_fails_the_zensical_build(fixture_root, tmp_path):
    page = fixture_root / "docs" / "glossary" / "quoted.md"
    page.write_text(PAGE + "\n{{figure no-such-figure}}\n")
    try:
        run = _zensical(fixture_root, tmp_path / "site")
        assert run.returncode != 0
        assert "docs/glossary/quoted.md:20: unknown figure 'no-such-figure'" in run.stdout + run.stderr
        assert not (tmp_path / "site").exists(), "no site from a failed build"
    finally:
        page.write_text(PAGE)


def test_an_unlinked_first_mention_fails_the_zensical_build(fixture_root, tmp_path):
    """The term-link check (docs_hooks/term_links.py) runs under Zensical as under MkDocs."""
    entry = fixture_root / "docs" / "glossary" / "widget.md"
    index = fixture_root / "docs" / "index.md"
    saved = index.read_text()
    entry.write_text("---\nterms: [widget, widgets]\n---\n\n# Widget\n\nA widget.\n")
    index.write_text(saved + "\nTwo widgets, unlinked.\n")
    try:
        run = _zensical(fixture_root, tmp_path / "site")
        assert run.returncode != 0
        assert ("docs/index.md:5: first mention of 'widgets' does not link its entry: write "
                "[widgets](glossary/widget.md)") in run.stdout + run.stderr
    finally:
        entry.unlink()
        index.write_text(saved)


def test_a_plain_zensical_build_says_it_is_incomplete_and_fails(fixture_root):
    """Zensical on the repository's mkdocs.yml, not staged: it would drop the snippet page
    and the quoted kernel without a word, so the engine check stops it."""
    run = subprocess.run(zensical_site.zensical_command() + ["build", "--clean", "--strict"], cwd=fixture_root,
                         env={**os.environ, "GEMMGLOSSARY_ROOT": str(fixture_root)},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "would have no snippet pages" in run.stdout + run.stderr
    assert "build with `gemmglossary zensical`" in run.stdout + run.stderr


# ----------------------------------------------------------------------------- the real site

@pytest.fixture(scope="module")
def zensical_real_site(tmp_path_factory):
    site = tmp_path_factory.mktemp("zensical-real") / "site"
    run = _zensical(REPO, site)
    assert run.returncode == 0, run.stdout + run.stderr
    return site, run


def test_real_site_has_the_pages_of_the_mkdocs_build(zensical_real_site, mkdocs_site):
    site, _ = zensical_real_site
    assert mkdocs_site.run.returncode == 0, mkdocs_site.log
    assert pages(site) == pages(mkdocs_site.site)


def test_real_site_expands_every_locked_excerpt(zensical_real_site):
    site, run = zensical_real_site
    entries = json.loads((REPO / "excerpts.lock.json").read_text(encoding="utf-8"))["excerpts"]
    assert entries
    problems = [q for e in entries for q in excerpt_problems(site, e["page"], e["file"], e["start"], e["end"])]
    assert not problems, "\n".join(problems)
    assert "Kernel is running over TCP" not in run.stdout + run.stderr


def test_real_site_shows_every_snippet_with_its_outputs(zensical_real_site):
    site, _ = zensical_real_site
    for snippet in sorted((REPO / "snippets").glob("[!_]*.py")):
        page = (site / "snippets" / snippet.stem / "index.html").read_text(encoding="utf-8")
        assert page.count("<h1") == 1, snippet.name
        assert "Traceback" not in page and "Printed on stderr" not in page, snippet.name
        assert f"python snippets/{snippet.name}" in page, snippet.name
        outputs = re.findall(r'<code class="language-text"|class="snippet-output"|<div class="language-text', page)
        assert outputs, f"{snippet.name}: no output shown"
        for tag in re.findall(r"<img\b[^>]*>", page):
            alt = re.search(r'\balt="([^"]*)"', tag)
            assert alt and alt.group(1).strip(), f"{snippet.name}: image without alt text"


FIGURE = re.compile(r'<figure class="gg-figure".*?</figure>', re.S)


def test_real_site_draws_every_figure_as_mkdocs_does(zensical_real_site, mkdocs_site):
    site, _ = zensical_real_site
    assert mkdocs_site.run.returncode == 0, mkdocs_site.log
    drawn = 0
    for page in pages(mkdocs_site.site):
        mk = FIGURE.findall((mkdocs_site.site / page).read_text(encoding="utf-8"))
        zen = FIGURE.findall((site / page).read_text(encoding="utf-8"))
        assert zen == mk, f"{page}: {len(zen)} figures under Zensical, {len(mk)} under MkDocs, or drawn differently"
        drawn += len(mk)
    assert drawn, "no generated figure on any page"
    assert (site / "stylesheets" / "figures.css").is_file()
