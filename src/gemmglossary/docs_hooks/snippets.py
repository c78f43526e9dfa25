"""mkdocs hook for the runnable snippets (``snippets/*.py``, jupytext percent format).

Each snippet is executed by the project's own step (:mod:`.snippet_pages`: jupytext and
nbclient, cached per snippet by its inputs), the same executed notebook that the Zensical
build shows; mkdocs-jupyter renders it as the snippet's page (``execute: false``). Here:

1. **Publish the snippets.** ``snippets/`` lives at the repository root (readers run
   ``python snippets/<name>.py``), outside ``docs_dir``. ``on_files`` adds each snippet
   as the page ``snippets/<name>.py`` whose file is its executed notebook
   (``.cache/snippets/<name>/<key>.ipynb``, which mkdocs-jupyter's ``include`` pattern
   matches), with a priority above the default, so it runs before mkdocs-jupyter's own
   ``on_files`` turns matching files into notebook pages; and the snippet itself as
   ``snippets/<name>/<name>.py``, next to its page, for download.
2. **Execute when, and only when, something the snippet uses changed.** The notebook's
   name is :func:`cache_key`: a hash of the snippet and of its inputs
   (:mod:`.snippet_inputs`: the kernels it reads, the tooling it imports).
   ``on_pre_page`` executes it, just before mkdocs-jupyter renders the page, if no
   notebook of that key is kept (a snippet that raises fails the build); so editing one
   kernel re-executes only the snippets that read it. mkdocs-jupyter's own cache of the
   rendered page is keyed by the notebook's bytes, so it follows. A cached page or
   notebook that cannot be read (a build killed while writing it) is deleted, saying
   so, and made again. Old notebooks are pruned only after a successful build, keeping
   the last few per snippet: a failed build loses no good output.
3. **Copyable cells.** ``on_page_content`` gives notebook code cells the ``<code>``
   element Material mounts its copy button on.

The thin file ``docs/.hooks/snippets.py`` re-exports these functions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

from ..paths import project_root
from .snippet_inputs import snippet_inputs
from . import serve, snippet_deferred as deferred
from .snippet_pages import (KEEP, KEY_LENGTH, SNIPPETS_DIR, SnippetError, ensure_all_executed,  # noqa: F401
                            notebook_path, prune, run_seconds)

log = logging.getLogger("mkdocs.hooks.snippets")

PLUGIN_NAME = "mkdocs-jupyter"
#: mkdocs-jupyter's cache of rendered pages (keyed by the executed notebook's bytes).
RENDERED_CACHE = Path(".cache") / "mkdocs-jupyter"


def snippet_paths(root: Path | None = None) -> list[Path]:
    """The snippets, in name order; files starting with ``_`` are helpers, not pages."""
    root = project_root() if root is None else root
    folder = root / SNIPPETS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def package_dir(root: Path) -> Path:
    candidate = root / "src" / "gemmglossary"
    if candidate.is_dir():
        return candidate
    return Path(__file__).resolve().parents[1]


def cache_inputs(snippet: Path, root: Path | None = None) -> list[Path]:
    """The snippet and every file whose content can change its output."""
    root = project_root() if root is None else root
    return [snippet, *snippet_inputs(snippet, root, package_dir(root))]


def cache_key(snippet: Path, root: Path | None = None) -> str:
    """SHA-256 over the names and bytes of :func:`cache_inputs`."""
    root = project_root() if root is None else root
    pkg = package_dir(root)
    h = hashlib.sha256()
    for path in cache_inputs(snippet, root):
        try:
            name = path.relative_to(root).as_posix()
        except ValueError:  # the installed package, outside the root
            name = "pkg/" + path.relative_to(pkg).as_posix()
        h.update(name.encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _jupyter_plugin(config):
    plugin = config["plugins"].get(PLUGIN_NAME)
    if plugin is None:
        raise RuntimeError(
            f"the snippets hook needs the {PLUGIN_NAME} plugin in mkdocs.yml's plugins"
        )
    return plugin


#: The snippet and its executed notebook for the current build, by the page's src_uri.
_notebooks: dict[str, tuple[Path, Path]] = {}
#: Under mkdocs serve, the page of a snippet still being executed: its placeholder notebook.
_pending: dict[str, Path] = {}


#: mkdocs-jupyter's loggers. At INFO they print two or three lines per snippet page on every
#: build ("Converting notebook", "Cache hit: <path>", "Cache miss, writing: <path>", the path
#: being the notebook read, not the page written): nothing a writer acts on. What was
#: executed is said by this hook ("executed snippets/x.py"); their warnings still show.
PLUGIN_LOGGERS = ("mkdocs.plugins.mkdocs_jupyter", "mkdocs.mkdocs-jupyter")


def _quiet_plugin_log() -> None:
    if logging.getLogger("mkdocs").isEnabledFor(logging.DEBUG):
        return  # mkdocs build --verbose: everything
    for name in PLUGIN_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def on_config(config):
    plugin = _jupyter_plugin(config)
    if plugin.config["execute"]:
        raise PluginError(f"{PLUGIN_NAME} must not execute the snippets (execute: false): the "
                          "project executes each once, for MkDocs and Zensical alike (see "
                          "src/gemmglossary/docs_hooks/snippet_pages.py)")
    _quiet_plugin_log()
    root = project_root()
    # Its rendered pages, in the project's cache folder whatever folder mkdocs runs from.
    plugin.config["cache_dir"] = str(root / RENDERED_CACHE)
    _notebooks.clear()
    for path in snippet_paths(root):
        _notebooks[f"{SNIPPETS_DIR}/{path.name}"] = (path, notebook_path(path, cache_key(path, root), root))

    # `mkdocs serve` rebuilds when a snippet or a kernel changes.
    watched = [root / name for name in (SNIPPETS_DIR, "kernels") if (root / name).is_dir()]
    for path in watched:
        if str(path) not in config["watch"]:
            config["watch"].append(str(path))
    return config


def _drop_damaged(folder: Path) -> None:
    """Delete cached pages that mkdocs-jupyter could not read, saying so."""
    for cached in folder.glob("*.json"):
        try:
            data = json.loads(cached.read_text(encoding="utf-8"))
            ok = isinstance(data, dict) and isinstance(data.get("content"), str) and "toc_tokens" in data
        except (OSError, UnicodeDecodeError, ValueError):
            ok = False
        if not ok:
            # Not a warning: nothing for the writer to fix, and --strict would fail the build.
            log.info("snippet page cache %s cannot be read (a build stopped while writing it?): "
                     "deleted, the page is rendered again", cached)
            cached.unlink()


def on_pre_build(config):
    plugin = _jupyter_plugin(config)
    if plugin.config["cache"]:
        _drop_damaged(Path(plugin.config["cache_dir"]))


@event_priority(50)  # before mkdocs-jupyter (priority 0) renders the page
def on_pre_page(page, config, files):
    found = _notebooks.get(page.file.src_uri)
    if found is not None:
        _, notebook = found
        notebook = _pending.get(page.file.src_uri, notebook)
        # Again on the page's file: mkdocs-jupyter's wrapper (NotebookFile) computes its own
        # abs_src_path from the URI, and its on_pre_page decides by that path. (on_files
        # has executed every snippet of the build.)
        page.file.abs_src_path = str(notebook)
    return page


def on_post_build(config):
    """After a successful build: keep the newest notebooks of each snippet (none while some
    are being executed in the background, which may still write theirs)."""
    if _pending:
        deferred.start()  # (the first build of mkdocs serve: its pages are written)
        return
    for snippet, notebook in _notebooks.values():
        if notebook.is_file():
            prune(snippet, notebook)


@event_priority(50)  # before mkdocs-jupyter (priority 0) wraps notebook pages
def on_files(files: Files, config) -> Files:
    for uri, (snippet, notebook) in _notebooks.items():
        if files.get_file_from_path(uri) is None:
            # The page's file is the executed notebook (mkdocs-jupyter reads it, and its
            # include pattern matches it); its URI stays snippets/<name>.py, so the nav and
            # the pages' links name the snippet.
            page = File(uri, src_dir=str(snippet.parent.parent), dest_dir=config["site_dir"],
                        use_directory_urls=config["use_directory_urls"])
            page.abs_src_path = str(notebook)
            files.append(page)
        download = f"{SNIPPETS_DIR}/{snippet.stem}/{snippet.name}"
        if files.get_file_from_path(download) is None:
            files.append(File.generated(config, download, abs_src_path=str(snippet)))
    uri_of = {snippet: uri for uri, (snippet, _) in _notebooks.items()}
    _pending.clear()
    if serve.serving():
        missing = {uri: pair for uri, pair in _notebooks.items() if not pair[1].is_file()}
        if not missing:
            deferred.count_build()
        elif deferred.defer(missing.values()):
            # mkdocs serve's first page does not wait for the snippets: their pages say they
            # are being executed, and the site is rebuilt when they have been
            for uri, (snippet, _) in missing.items():
                _pending[uri] = deferred.placeholder(snippet)
            return files
    # Every snippet page is built: execute the ones not yet executed now, side by side,
    # rather than one by one as their pages come up (on_pre_page then finds them done).
    try:
        for snippet in ensure_all_executed(_notebooks.values()):
            log.info("executed %s in %.1f s", uri_of[snippet], run_seconds.get(snippet, 0.0))
    except SnippetError as exc:
        raise PluginError(str(exc)) from None
    return files


#: A notebook code cell as mkdocs-jupyter renders it: a bare ``<pre>`` in a
#: ``highlight-ipynb`` div, without the ``<code>`` element Material's copy button needs.
_NOTEBOOK_CODE_CELL = re.compile(r'(<div class="highlight-ipynb[^"]*">)<pre>(.*?)</pre>', re.S)


def with_copyable_cells(html: str) -> str:
    """Wrap each notebook code cell in ``<pre><code>`` so Material mounts its copy
    button on it, as it does on every other code block of the site."""
    return _NOTEBOOK_CODE_CELL.sub(r"\1<pre><code>\2</code></pre>", html)


#: What mkdocs-jupyter appends to a page made from an ``.ipynb`` file: the notebook CSS
#: once more, but as a Python list's repr (``<style>['pre { ... }']</style>``), which is no
#: CSS. The same rules are already in the page, inlined by its template.
_CSS_LIST_REPR = re.compile(r"\s*<style>\s*\[(?:'|\")[^<]*\]\s*</style>\s*$", re.S)


def without_css_list_repr(html: str) -> str:
    return _CSS_LIST_REPR.sub("\n", html)


def on_page_content(html: str, page, config, files) -> str:
    if page.file.src_uri.startswith(f"{SNIPPETS_DIR}/") and page.file.src_uri.endswith(".py"):
        return with_copyable_cells(without_css_list_repr(html))
    return html
