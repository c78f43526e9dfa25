"""mkdocs hook for the runnable snippets (``snippets/*.py``, jupytext percent format).

mkdocs-jupyter executes each snippet at build time and renders it as a page. Three
things are done here, before that plugin runs:

1. **Publish the snippets.** ``snippets/`` lives at the repository root (readers run
   ``python snippets/<name>.py``), outside ``docs_dir``. ``on_files`` adds each snippet
   as ``snippets/<name>.py`` with a priority above the default, so it runs before
   mkdocs-jupyter's own ``on_files`` turns matching files into notebook pages.
2. **Re-execute a snippet when, and only when, something it uses changed.**
   mkdocs-jupyter caches a rendered page under a key made from the notebook's bytes and
   its own options only, so an edited kernel would keep serving stale outputs. Each
   snippet gets its own cache folder, ``.cache/mkdocs-jupyter/<name>/<key>/``, named by
   :func:`cache_key`: a hash of the snippet and of its inputs
   (:mod:`.snippet_inputs`: the kernels it reads, the tooling it imports). ``on_pre_page``
   points the plugin's ``cache_dir`` at that folder just before the plugin renders the
   page, so editing one kernel re-executes only the snippets that read it. A cached
   output that cannot be read (a build killed while writing it) is deleted with a
   warning and the snippet re-executed. Older folders are pruned only after a
   successful build, keeping the last few per snippet: a failed build loses no good
   output, and going back to a recent state is a cache hit.
3. **Execute with this Python, quietly.** ``JUPYTER_PATH`` is prefixed with this
   interpreter's ``share/jupyter`` so the ``python3`` kernelspec installed in the virtual
   environment wins over any per-user one; jupyter_client runs that spec
   (``argv[0] == "python"``) with ``sys.executable``, the interpreter running mkdocs.
   Kernels run over IPC (local sockets) instead of TCP: ipykernel prints "Kernel is
   running over TCP without encryption" for every TCP kernel, once per snippet, which
   concerns no reader of the build log; over IPC it has nothing to say, and every other
   warning still shows. mkdocs-jupyter's nbconvert app reads that setting from a
   ``jupyter_nbconvert_config.json`` this process writes into a folder of its own,
   prefixed to ``JUPYTER_CONFIG_PATH``. The sockets' path prefix is absolute (in
   Jupyter's runtime folder, one per process): jupyter_client's default is relative to
   the current folder, and the kernel runs in snippets/, not where the build runs.

The thin file ``docs/.hooks/snippets.py`` re-exports these functions.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

from ..paths import project_root
from .snippet_inputs import snippet_inputs

log = logging.getLogger("mkdocs.hooks.snippets")

PLUGIN_NAME = "mkdocs-jupyter"
SNIPPETS_DIR = "snippets"
CACHE_DIR = Path(".cache") / "mkdocs-jupyter"
#: Cache folders are named by the first characters of the key.
KEY_LENGTH = 16
#: Cache folders kept per snippet after a successful build (the newest ones).
KEEP = 3
_KEY_DIR = re.compile(rf"^[0-9a-f]{{{KEY_LENGTH}}}$")


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


def cache_dir_for(snippet: Path, key: str, root: Path | None = None) -> Path:
    root = project_root() if root is None else root
    return root / CACHE_DIR / snippet.stem / key[:KEY_LENGTH]


def _jupyter_plugin(config):
    plugin = config["plugins"].get(PLUGIN_NAME)
    if plugin is None:
        raise RuntimeError(
            f"the snippets hook needs the {PLUGIN_NAME} plugin in mkdocs.yml's plugins"
        )
    return plugin


#: Cache folder of each snippet page for the current build, by the page's src_uri.
_folders: dict[str, Path] = {}


def on_config(config):
    _jupyter_plugin(config)
    root = project_root()
    _folders.clear()
    for path in snippet_paths(root):
        _folders[f"{SNIPPETS_DIR}/{path.name}"] = cache_dir_for(path, cache_key(path, root), root)

    use_this_python()

    # `mkdocs serve` rebuilds when a snippet or a kernel changes.
    for folder_name in (SNIPPETS_DIR, "kernels"):
        watched = root / folder_name
        if watched.is_dir() and str(watched) not in config["watch"]:
            config["watch"].append(str(watched))
    return config


def _prefix_env(name: str, folder: Path) -> None:
    paths = [p for p in os.environ.get(name, "").split(os.pathsep) if p]
    if str(folder) not in paths:
        os.environ[name] = os.pathsep.join([str(folder), *paths])


@functools.cache
def kernel_ipc_prefix() -> str:
    """Absolute path prefix of this process's kernel sockets (``<prefix>-<n>``)."""
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(jupyter_runtime_dir())
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / f"gemmglossary-{os.getpid()}")


@functools.cache
def _nbconvert_config_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="gemmglossary-jupyter-config-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    settings = {"KernelManager": {"transport": "ipc", "ip": kernel_ipc_prefix()}}
    (folder / "jupyter_nbconvert_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    return folder


def use_this_python() -> None:
    """Notebook kernels of this process: this interpreter's kernelspec, over IPC."""
    _prefix_env("JUPYTER_PATH", Path(sys.prefix) / "share" / "jupyter")
    _prefix_env("JUPYTER_CONFIG_PATH", _nbconvert_config_dir())


def _drop_damaged(folder: Path) -> None:
    """Delete cached outputs that mkdocs-jupyter could not read, saying so."""
    for cached in folder.glob("*.json"):
        try:
            data = json.loads(cached.read_text(encoding="utf-8"))
            ok = isinstance(data, dict) and isinstance(data.get("content"), str) and "toc_tokens" in data
        except (OSError, UnicodeDecodeError, ValueError):
            ok = False
        if not ok:
            # Not a warning: nothing for the writer to fix, and --strict would fail the build.
            log.info("snippet output cache %s cannot be read (a build stopped while writing it?): "
                     "deleted, the snippet is executed again", cached)
            cached.unlink()


@event_priority(50)  # before mkdocs-jupyter (priority 0) renders the page
def on_pre_page(page, config, files):
    folder = _folders.get(page.file.src_uri)
    if folder is not None:
        _jupyter_plugin(config).config["cache_dir"] = str(folder)
        if folder.is_dir():
            _drop_damaged(folder)
            os.utime(folder)  # most recently used: pruned last
    return page


def on_post_build(config):
    """After a successful build: keep the newest :data:`KEEP` folders of each snippet."""
    root = project_root() / CACHE_DIR
    for uri, current in _folders.items():
        folders = [p for p in current.parent.glob("*") if p.is_dir() and _KEY_DIR.match(p.name)]
        folders.sort(key=lambda p: (p == current, p.stat().st_mtime), reverse=True)
        for old in folders[KEEP:]:
            shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob("*") if root.is_dir() else ():
        if stale.is_dir() and _KEY_DIR.match(stale.name):  # the layout before per-snippet folders
            shutil.rmtree(stale, ignore_errors=True)


@event_priority(50)  # before mkdocs-jupyter (priority 0) wraps notebook pages
def on_files(files: Files, config) -> Files:
    root = project_root()
    for path in snippet_paths(root):
        uri = f"{SNIPPETS_DIR}/{path.name}"
        if files.get_file_from_path(uri) is None:
            # A real file whose source directory is the repository root (not a generated
            # one): mkdocs-jupyter wraps it and derives abs_src_path from src_dir.
            files.append(
                File(uri, src_dir=str(root), dest_dir=config["site_dir"],
                     use_directory_urls=config["use_directory_urls"])
            )
    return files


#: A notebook code cell as mkdocs-jupyter renders it: a bare ``<pre>`` in a
#: ``highlight-ipynb`` div, without the ``<code>`` element Material's copy button needs.
_NOTEBOOK_CODE_CELL = re.compile(r'(<div class="highlight-ipynb[^"]*">)<pre>(.*?)</pre>', re.S)


def with_copyable_cells(html: str) -> str:
    """Wrap each notebook code cell in ``<pre><code>`` so Material mounts its copy
    button on it, as it does on every other code block of the site."""
    return _NOTEBOOK_CODE_CELL.sub(r"\1<pre><code>\2</code></pre>", html)


def on_page_content(html: str, page, config, files) -> str:
    if page.file.src_uri.startswith(f"{SNIPPETS_DIR}/") and page.file.src_uri.endswith(".py"):
        return with_copyable_cells(html)
    return html
