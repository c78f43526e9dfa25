"""The runnable snippets (snippets/*.py) and the mkdocs plumbing that renders them.

- (every snippet runs to completion as the site executes it, as a notebook:
  test_snippet_runs.py); it runs as a script too, the way a reader runs it (no IPython
  syntax, and the one path that differs, a figure's, run as a script);
- every snippet has the shape the site relies on (a markdown H1 first, the command);
- a snippet that raises fails a script run and an mkdocs build with the site's own
  mkdocs-jupyter configuration (allow_errors off);
- each snippet's output is cached under a key of its own inputs (the kernels it reads,
  the tooling it imports), checked against what the snippet really reads: editing a
  kernel re-executes the snippets that read it and no other; a failed build keeps the
  good outputs; a damaged cached output is replaced, with a warning;
- figures carry alt text and the notebook kernel is the Python running mkdocs.
"""

from __future__ import annotations

import ast
import html
import posixpath
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePath

import jupytext
import pytest
import yaml

from gemmglossary.docs_hooks import snippets as snippets_hook
from snippet_scripts import run_script, script_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mkdocs_cli  # noqa: E402 - MkDocs' command in this process (tests/mkdocs_cli.py)

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = snippets_hook.snippet_paths(ROOT)
HOOK = ROOT / "docs" / ".hooks" / "snippets.py"
EXPECTED = {
    "cooperative_load", "register_blocking", "simdgroup_matrix", "barriers",
    "epilogue_fusion", "max_total_threads", "tiled_gemm", "tiled_to_simdgroup", "neural_accelerators",
    "gemv", "quantized_matmul", "simdgroup_reductions",
    "double_buffering", "threadgroup_swizzle", "split_k", "half_precision", "how_mlx_picks",
}


def test_every_glossary_entry_and_case_study_has_a_snippet():
    assert {p.stem for p in SNIPPETS} >= EXPECTED


@pytest.mark.parametrize("path", SNIPPETS, ids=[p.stem for p in SNIPPETS])
def test_snippet_shape(path: Path):
    nb = jupytext.read(path)
    first = nb.cells[0]
    assert first.cell_type == "markdown", "a snippet starts with a markdown cell"
    h1 = [line for line in first.source.splitlines() if line.startswith("# ")]
    assert len(h1) == 1, "the first cell has exactly one H1 title"
    assert f"python snippets/{path.name}" in first.source, "the first cell shows the command"
    text = path.read_text(encoding="utf-8")
    assert "Break it" in text, "every snippet has a 'Break it' cell"
    assert "assert_allclose" in text, "every snippet checks its kernel against numpy"
    # It runs as a script as it runs as a notebook (test_snippet_runs.py runs the notebook):
    # no IPython syntax (jupytext keeps a magic as a comment in the script), and no name
    # that exists in only one of the two.
    for cell in nb.cells:
        if cell.cell_type == "code":
            ipython = [line for line in cell.source.splitlines() if line.lstrip().startswith(("%", "!"))]
            assert not ipython, f"IPython syntax, which a script run skips: {ipython}"
    names = {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    only_one = sorted(names & {"__file__", "get_ipython", "display", "In", "Out"})
    assert not only_one, f"names that a script run and a notebook run do not both have: {only_one}"


BROKEN = '''\
# %% [markdown]
# # Broken on purpose
# Run it with `python snippets/broken.py`.

# %%
print("before the error")

# %%
raise RuntimeError("this snippet is broken on purpose")
'''


def test_snippet_with_a_figure_runs_as_a_script(tmp_path: Path):
    """The one path a script run takes that a notebook run does not: show_figure prints the
    figure's alt text instead of displaying it, and saves it as a PNG where
    GEMMGLOSSARY_FIGURES says (the only run that draws one)."""
    root = _tiny_site(tmp_path / "site-src", {"good.py": GOOD})
    figures = tmp_path / "figures"
    proc = run_script(root / "snippets" / "good.py", GEMMGLOSSARY_ROOT=str(root), GEMMGLOSSARY_FIGURES=str(figures))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "KERNEL // version 1" in proc.stdout
    assert "[figure] A falling line, drawn to check alt text" in proc.stdout
    (png,) = figures.glob("*.png")
    assert png.name == "a-falling-line-drawn-to-check-alt-text.png"
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and png.stat().st_size > 1000


def test_broken_snippet_fails_as_a_script(tmp_path: Path):
    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    proc = run_script(path)
    assert proc.returncode != 0
    assert "broken on purpose" in proc.stderr


# ---------------------------------------------------------------------------
# mkdocs plumbing, on a tiny site that uses the real hook and plugin configuration.

GOOD = '''\
# %% [markdown]
# # Tiny snippet
# Run it with `python snippets/good.py`.

# %%
import sys
from pathlib import Path
from gemmglossary.paths import kernels_dir, project_root
with open(Path(project_root(), "executions.log"), "a") as log:
    print("good", file=log)
print("EXECUTABLE", sys.executable)
first = Path(kernels_dir(), "k.metal").read_text().splitlines()[0]
assert "break" not in first, "the kernel says break"
print("KERNEL", first)

# %%
from matplotlib.figure import Figure
from gemmglossary.snippets import show_figure
fig = Figure(figsize=(2, 2))
fig.add_subplot().plot([0, 1], [1, 0])
show_figure(fig, "A falling line, drawn to check alt text")
'''


def _site_plugin_config() -> dict:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    for entry in config["plugins"]:
        if isinstance(entry, dict) and snippets_hook.PLUGIN_NAME in entry:
            return entry[snippets_hook.PLUGIN_NAME]
    raise AssertionError("mkdocs.yml has no mkdocs-jupyter plugin entry")


def _tiny_site(root: Path, snippets: dict[str, str]) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Tiny\n")
    (root / "kernels").mkdir()
    (root / "kernels" / "k.metal").write_text("// version 1\n")
    (root / "snippets").mkdir()
    for name, text in snippets.items():
        (root / "snippets" / name).write_text(text)
    config = {
        "site_name": "tiny",
        "docs_dir": "docs",
        "strict": True,
        "hooks": [str(HOOK)],
        "plugins": [{snippets_hook.PLUGIN_NAME: _site_plugin_config()}],
        "nav": ["index.md", *[f"snippets/{name}" for name in snippets]],
    }
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return root


def _decoy_kernelspec(folder: Path) -> Path:
    """A per-user ``python3`` kernelspec that cannot run: the build must not pick it."""
    spec = folder / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        '{"argv": ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],'
        ' "display_name": "decoy", "language": "python"}'
    )
    return folder


def _build(root: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the tiny site, run by MkDocs' command in this process
    (tests/mkdocs_cli.py), with what the snippets' kernels print in its stderr."""
    decoy = root.parent / "user-jupyter"
    if not decoy.exists():
        _decoy_kernelspec(decoy)
    return mkdocs_cli.build(
        ["--strict", "-f", root / "mkdocs.yml", "-d", root / "site"], cwd=root, children=True,
        env=script_env(GEMMGLOSSARY_ROOT=str(root), JUPYTER_DATA_DIR=str(decoy), NO_MKDOCS_2_WARNING="1"),
    )


def test_site_config_renders_the_notebooks_the_project_executed(tmp_path: Path):
    """mkdocs-jupyter does not execute: it renders the notebook the project executed (once,
    for MkDocs and Zensical), which its include pattern must match."""
    from gemmglossary.docs_hooks.snippet_pages import notebook_path

    plugin = _site_plugin_config()
    assert plugin["execute"] is False
    notebook = notebook_path(ROOT / "snippets" / "barriers.py", "0" * 64, tmp_path)
    assert any(PurePath(notebook).match(pattern) for pattern in plugin["include"])
    assert not any(PurePath(ROOT / "snippets" / "barriers.py").match(p) for p in plugin["include"])


def test_cache_key_follows_what_the_snippet_uses(tmp_path: Path, monkeypatch):
    root = tmp_path
    (root / "kernels").mkdir()
    (root / "kernels" / "a.metal").write_text("kernel void a() {}\n")
    (root / "kernels" / "b.metal").write_text('#include "x.h"\nkernel void b() {}\n')
    (root / "kernels" / "vendor.toml").write_text("mlx = '0.32.4'\n")
    pkg = root / "src" / "gemmglossary"
    (pkg / "emu" / "shim").mkdir(parents=True)
    (pkg / "__init__.py").write_text("def load(): from .emu import run\n")
    (pkg / "emu" / "__init__.py").write_text("from .core import run\n")
    (pkg / "emu" / "core.py").write_text("def run(): pass\n")
    (pkg / "emu" / "shim" / "lib.h").write_text("// shim\n")
    (pkg / "other.py").write_text("X = 1\n")
    (root / "snippets").mkdir()
    uses_a = root / "snippets" / "uses_a.py"
    uses_a.write_text('import gemmglossary as gg\nfrom gemmglossary.snippets_x import y\nk = "a.metal"\n')
    uses_b = root / "snippets" / "uses_b.py"
    uses_b.write_text('from gemmglossary import other\nKERNEL = "b"\n')
    builds = root / "snippets" / "builds_names.py"
    builds.write_text('import gemmglossary\nname = "a"\npath = f"{name}.metal"\n')
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(root))

    rel = lambda paths: sorted(p.relative_to(root).as_posix() for p in paths)  # noqa: E731
    assert rel(snippets_hook.cache_inputs(uses_a)) == [
        "kernels/a.metal", "snippets/uses_a.py", "src/gemmglossary/__init__.py",
        "src/gemmglossary/emu/__init__.py", "src/gemmglossary/emu/core.py", "src/gemmglossary/emu/shim/lib.h"]
    assert rel(snippets_hook.cache_inputs(uses_b)) == [
        "kernels/b.metal", "kernels/vendor.toml", "snippets/uses_b.py", "src/gemmglossary/__init__.py",
        "src/gemmglossary/emu/__init__.py", "src/gemmglossary/emu/core.py", "src/gemmglossary/emu/shim/lib.h",
        "src/gemmglossary/other.py"]
    assert {"kernels/a.metal", "kernels/b.metal"} <= set(rel(snippets_hook.cache_inputs(builds)))

    keys = {p.name: snippets_hook.cache_key(p) for p in (uses_a, uses_b)}
    assert keys == {p.name: snippets_hook.cache_key(p) for p in (uses_a, uses_b)}, "deterministic"
    (root / "kernels" / "a.metal").write_text("kernel void a() { /* edited */ }\n")
    assert snippets_hook.cache_key(uses_a) != keys["uses_a.py"], "editing a kernel it reads changes the key"
    assert snippets_hook.cache_key(uses_b) == keys["uses_b.py"], "... and only the key of snippets reading it"
    (pkg / "other.py").write_text("X = 2\n")
    assert snippets_hook.cache_key(uses_b) != keys["uses_b.py"], "so does the tooling it imports"
    assert snippets_hook.cache_key(uses_a) != keys["uses_a.py"]
    (pkg / "emu" / "shim" / "lib.h").write_text("// shim 2\n")
    second = snippets_hook.cache_key(uses_a)
    (root / "kernels" / "vendor.toml").write_text("mlx = '0.32.5'\n")
    assert snippets_hook.cache_key(uses_a) == second and snippets_hook.cache_key(uses_b) != keys["uses_b.py"]
    from gemmglossary.docs_hooks.snippet_pages import notebook_path
    assert notebook_path(uses_a, second).is_relative_to(root / ".cache" / "snippets" / "uses_a")


ALONE = '''\
# %% [markdown]
# # Reads no kernel
# Run it with `python snippets/alone.py`.

# %%
from pathlib import Path
from gemmglossary.paths import project_root
with open(Path(project_root(), "executions.log"), "a") as log:
    print("alone", file=log)
'''


def _executions(root: Path) -> list[str]:
    log = root / "executions.log"
    return log.read_text().split() if log.exists() else []


@pytest.mark.slow
def test_tiny_site_renders_and_re_executes_only_what_changed(tmp_path: Path):
    root = _tiny_site(tmp_path / "site-src", {"good.py": GOOD, "alone.py": ALONE})
    proc = _build(root)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert sorted(_executions(root)) == ["alone", "good"]
    # Kernels run over IPC: no "Kernel is running over TCP without encryption" per snippet,
    # and their sockets live in Jupyter's runtime folder, not in the site's folders.
    assert "without encryption" not in proc.stdout + proc.stderr
    assert "[IPKernelApp] WARNING" not in proc.stdout + proc.stderr
    assert not [p for p in root.rglob("*") if "ipc" in p.name], "kernel sockets left in the project"
    page = root / "site" / "snippets" / "good" / "index.html"
    body = html.unescape(page.read_text())

    # Executed, by the interpreter running mkdocs (the venv's kernelspec), even with a
    # per-user python3 kernelspec that points elsewhere.
    assert "KERNEL // version 1" in body
    m = re.search(r"EXECUTABLE (\S+)", body)
    assert m and Path(m.group(1)).resolve() == Path(sys.executable).resolve(), m and m.group(1)

    # The snippet is published next to its page for download.
    assert (page.parent / "good.py").read_text() == GOOD

    # Every image has a non-empty alt text.
    imgs = re.findall(r"<img\b[^>]*>", page.read_text())
    assert imgs, "the figure is rendered"
    for tag in imgs:
        alt = re.search(r'\balt="([^"]*)"', tag)
        assert alt and alt.group(1).strip(), f"image without alt text: {tag[:120]}"

    # Editing the kernel re-executes the snippet that reads it, and no other.
    (root / "kernels" / "k.metal").write_text("// version 2\n")
    proc = _build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(_executions(root)) == ["alone", "good", "good"]
    assert "KERNEL // version 2" in html.unescape(page.read_text())

    # A failed build keeps the good output: going back is a cache hit. A damaged executed
    # notebook or rendered page (a build killed while writing it) is replaced, saying so.
    (root / "kernels" / "k.metal").write_text("// break\n")
    assert _build(root).returncode != 0, "the snippet raises: the build fails"
    (root / "kernels" / "k.metal").write_text("// version 2\n")
    [notebook] = (root / ".cache" / "snippets" / "alone").glob("*.ipynb")
    notebook.write_text(notebook.read_text()[:100])
    rendered = sorted((root / ".cache" / "mkdocs-jupyter").glob("*.json"))
    assert rendered, "mkdocs-jupyter keeps its rendered pages"
    rendered[0].write_text(rendered[0].read_text()[:100])
    proc = _build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(_executions(root)) == ["alone", "alone", "good", "good", "good"], "good: no re-execution"
    assert "KERNEL // version 2" in html.unescape(page.read_text())
    assert f"executed snippet {notebook} cannot be read" in proc.stderr and "Traceback" not in proc.stderr
    assert f"snippet page cache {rendered[0]} cannot be read" in proc.stderr
    assert len(list((root / ".cache" / "snippets" / "good").glob("*.ipynb"))) <= snippets_hook.KEEP


def test_kernel_sockets_fit_a_socket_path_however_deep_the_runtime_folder(monkeypatch, tmp_path):
    from gemmglossary.docs_hooks import snippet_pages

    deep = tmp_path / ("d" * 60) / "runtime"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(deep))
    snippet_pages.kernel_ipc_prefix.cache_clear()
    try:
        prefix = snippet_pages.kernel_ipc_prefix(3)
    finally:
        snippet_pages.kernel_ipc_prefix.cache_clear()
    assert len(prefix) + len("-99999") <= snippet_pages.SOCKET_PATH_MAX, prefix
    assert not prefix.startswith(str(deep)) and prefix.endswith("-3")
    assert Path(prefix).parent.stat().st_mode & 0o077 == 0  # only this user's


def test_snippets_are_executed_side_by_side_and_every_failure_waits_for_the_rest(monkeypatch):
    import threading

    from gemmglossary.docs_hooks import snippet_pages

    both_running = threading.Barrier(2, timeout=30)  # breaks unless two run at once
    tried = []

    def fake(snippet, notebook, root=None):
        both_running.wait()
        tried.append(snippet)
        if snippet.name in ("b.py", "c.py"):
            raise snippet_pages.SnippetError(f"snippets/{snippet.name} raised")
        return snippet.name != "d.py"  # d.py: already executed

    monkeypatch.setattr(snippet_pages, "ensure_executed", fake)
    pairs = [(Path(f"{n}.py"), Path(f"{n}.ipynb")) for n in "abcd"]
    with pytest.raises(snippet_pages.SnippetError, match="b.py"):  # the first, in the order given
        snippet_pages.ensure_all_executed(pairs, jobs=2)
    assert sorted(p.name for p in tried) == ["a.py", "b.py", "c.py", "d.py"]
    tried.clear()
    assert snippet_pages.ensure_all_executed(pairs[:1] + pairs[3:], jobs=2) == [Path("a.py")]


@pytest.mark.slow
def test_tiny_site_build_fails_on_a_broken_snippet(tmp_path: Path):
    # beside a snippet that runs (the one that draws no figure: a kernel without matplotlib)
    root = _tiny_site(tmp_path / "site-src", {"alone.py": ALONE, "broken.py": BROKEN})
    proc = _build(root)
    assert proc.returncode != 0, "a snippet that raises must fail the build"
    assert "broken on purpose" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_real_snippet_whose_diagnostic_escapes_fails_script_and_build(tmp_path: Path):
    """A copy of snippets/barriers.py that stops catching the emulator's DataRaceError."""
    text = (ROOT / "snippets" / "barriers.py").read_text()
    caught = "    except expected as err:\n"
    assert text.count(caught) == 1, "barriers.py changed; update this test"
    broken = text.replace(caught, "    except ZeroDivisionError as err:  # no longer catches\n")

    root = _tiny_site(tmp_path / "site-src", {"barriers.py": broken})
    shutil.copy(ROOT / "kernels" / "matmul_tiled.metal", root / "kernels")

    proc = run_script(root / "snippets" / "barriers.py", GEMMGLOSSARY_ROOT=str(root))
    assert proc.returncode != 0
    assert "DataRaceError" in proc.stderr

    proc = _build(root)
    assert proc.returncode != 0, "the escaped diagnostic must fail the build"
    assert "DataRaceError" in proc.stdout + proc.stderr


def test_run_it_index_lists_every_snippet():
    index = (ROOT / "docs" / "snippets" / "index.md").read_text()
    for path in SNIPPETS:
        assert f"[{path.name}]({path.name})" in index, f"docs/snippets/index.md misses {path.name}"
    # The sidebar lists the index only; the snippet pages are built without a sidebar entry
    # (mkdocs.yml's not_in_nav) and reached from the index and from their entries.
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert {"Run it": "snippets/index.md"} in config["nav"]
    assert "/snippets/*.py" in config["not_in_nav"].split()
    assert not [p.name for p in SNIPPETS if f"snippets/{p.name}" in str(config["nav"])], "a snippet in the sidebar"


#: Each glossary entry and case study, and its snippet.
PAGES = {
    "glossary/cooperative-load.md": "cooperative_load",
    "glossary/register-blocking.md": "register_blocking",
    "glossary/simdgroup-matrix.md": "simdgroup_matrix",
    "glossary/barriers.md": "barriers",
    "glossary/epilogue-fusion.md": "epilogue_fusion",
    "glossary/max-total-threads.md": "max_total_threads",
    "glossary/neural-accelerators.md": "neural_accelerators",
    "case-studies/tiled-gemm.md": "tiled_gemm",
    "case-studies/tiled-to-simdgroup.md": "tiled_to_simdgroup",
    "glossary/gemv.md": "gemv",
    "glossary/quantized-matmul.md": "quantized_matmul",
    "glossary/simdgroup-reductions.md": "simdgroup_reductions",
    "glossary/double-buffering.md": "double_buffering",
    "glossary/threadgroup-swizzle.md": "threadgroup_swizzle",
    "glossary/split-k.md": "split_k",
    "glossary/half-precision.md": "half_precision",
    "how-mlx-picks-a-gemm.md": "how_mlx_picks",
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_links_its_snippet_and_shows_the_command(page: str):
    name = PAGES[page]
    text = (ROOT / "docs" / page).read_text()
    assert "\n## Run it\n" in text, f"{page}: no 'Run it' section"
    section = text.split("\n## Run it\n", 1)[1]
    link = posixpath.relpath(f"snippets/{name}.py", posixpath.dirname(page) or ".")  # from the page's folder
    assert f"]({link})" in section, f"{page}: no link to snippets/{name}.py"
    assert f"\npython snippets/{name}.py\n" in section, f"{page}: no command line"
    assert (ROOT / "snippets" / f"{name}.py").is_file()


def test_notebook_code_cells_get_a_code_element_for_the_copy_button():
    from gemmglossary.docs_hooks.snippets import with_copyable_cells

    cell = '<div class="highlight-ipynb hl-python"><pre><span></span><span class="kn">import</span> x\n</pre></div>'
    output = '<div class="output_area"><pre>printed text</pre></div>'
    html = with_copyable_cells(cell + output)
    assert '<div class="highlight-ipynb hl-python"><pre><code><span></span>' in html
    assert html.count("<code>") == 1, "output cells are not code: no copy button there"


def test_an_edited_header_keeps_its_folder_from_run_to_run(tmp_path, monkeypatch):
    """The same edit gives the same include folder (so a second run of the snippet finds
    its kernel compiled), another edit another folder; the header path stays relative."""
    from gemmglossary.snippets import patched_include_dir

    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(tmp_path))
    header = "mlx/backend/metal/kernels/x.h"
    first = patched_include_dir(header, "// broken\n")
    assert (first / header).read_text() == "// broken\n" and first.is_relative_to(tmp_path)
    assert patched_include_dir(header, "// broken\n") == first
    other = patched_include_dir(header, "// broken otherwise\n")
    assert other != first and (first / header).read_text() == "// broken\n"
    (first / header).write_text("// changed by hand\n")  # a copy someone edited is written again
    assert (patched_include_dir(header, "// broken\n") / header).read_text() == "// broken\n"
    for bad in ("/abs/x.h", "../x.h"):
        with pytest.raises(ValueError, match="inside an include directory"):
            patched_include_dir(bad, "")
