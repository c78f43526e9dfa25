"""mkdocs hook for the runnable snippets (``snippets/*.py``, jupytext percent format).

mkdocs-jupyter executes each snippet at build time and renders it as a page. Three
things are done here, before that plugin runs:

1. **Publish the snippets.** ``snippets/`` lives at the repository root (readers run
   ``python snippets/<name>.py``), outside ``docs_dir``. ``on_files`` adds each snippet
   as ``snippets/<name>.py`` with a priority above the default, so it runs before
   mkdocs-jupyter's own ``on_files`` turns matching files into notebook pages.
2. **Recompute outputs when a kernel changes.** mkdocs-jupyter caches a rendered page
   under a key made from the notebook's bytes and its own options only, so an edited
   kernel would keep serving stale outputs. ``on_config`` points the plugin's
   ``cache_dir`` at a folder named by :func:`cache_key`, a hash over everything a
   snippet's output depends on besides its own text: ``kernels/*.metal``,
   ``kernels/vendor.toml`` and the ``gemmglossary`` package (emulator, runtime, shim
   headers). Any change there selects a fresh, empty folder; older folders are pruned.
3. **Execute with this Python.** ``JUPYTER_PATH`` is prefixed with this interpreter's
   ``share/jupyter`` so the ``python3`` kernelspec installed in the virtual environment
   wins over any per-user one; jupyter_client runs that spec (``argv[0] == "python"``)
   with ``sys.executable``, the interpreter running mkdocs.

The thin file ``docs/.hooks/snippets.py`` re-exports these functions.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import sys
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

from ..paths import project_root

log = logging.getLogger("mkdocs.hooks.snippets")

PLUGIN_NAME = "mkdocs-jupyter"
SNIPPETS_DIR = "snippets"
#: Cache folders are named by the first characters of the key.
KEY_LENGTH = 16
_KEY_DIR = re.compile(rf"^[0-9a-f]{{{KEY_LENGTH}}}$")


def snippet_paths(root: Path | None = None) -> list[Path]:
    """The snippets, in name order; files starting with ``_`` are helpers, not pages."""
    root = project_root() if root is None else root
    folder = root / SNIPPETS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def _package_dir(root: Path) -> Path:
    candidate = root / "src" / "gemmglossary"
    if candidate.is_dir():
        return candidate
    return Path(__file__).resolve().parent


def cache_inputs(root: Path | None = None) -> list[Path]:
    """Every file whose content can change a snippet's output (other than the snippet)."""
    root = project_root() if root is None else root
    kernels = root / "kernels"
    files = sorted(kernels.glob("*.metal"))
    if (kernels / "vendor.toml").is_file():
        files.append(kernels / "vendor.toml")
    pkg = _package_dir(root)
    files.extend(
        sorted(
            p
            for p in pkg.rglob("*")
            if p.is_file()
            and "__pycache__" not in p.parts
            and p.suffix not in {".pyc", ".pyo", ".so", ".o"}
        )
    )
    return files


def cache_key(root: Path | None = None) -> str:
    """SHA-256 over the names and bytes of :func:`cache_inputs`."""
    root = project_root() if root is None else root
    h = hashlib.sha256()
    for path in cache_inputs(root):
        try:
            name = path.relative_to(root).as_posix()
        except ValueError:  # the installed package, outside the root
            name = "pkg/" + path.relative_to(_package_dir(root)).as_posix()
        h.update(name.encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def cache_dir_for(key: str, root: Path | None = None) -> Path:
    root = project_root() if root is None else root
    return root / ".cache" / "mkdocs-jupyter" / key[:KEY_LENGTH]


def _prune(current: Path) -> None:
    parent = current.parent
    if not parent.is_dir():
        return
    for sibling in parent.iterdir():
        if sibling != current and sibling.is_dir() and _KEY_DIR.match(sibling.name):
            shutil.rmtree(sibling, ignore_errors=True)


def _jupyter_plugin(config):
    plugin = config["plugins"].get(PLUGIN_NAME)
    if plugin is None:
        raise RuntimeError(
            f"the snippets hook needs the {PLUGIN_NAME} plugin in mkdocs.yml's plugins"
        )
    return plugin


def on_config(config):
    plugin = _jupyter_plugin(config)
    root = project_root()
    key = cache_key(root)
    folder = cache_dir_for(key, root)
    plugin.config["cache_dir"] = str(folder)
    _prune(folder)
    log.info("snippet outputs cached under %s (kernels+package hash %s)", folder, key[:12])

    here = str(Path(sys.prefix) / "share" / "jupyter")
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if here not in paths:
        os.environ["JUPYTER_PATH"] = os.pathsep.join([here, *paths])

    # `mkdocs serve` rebuilds when a snippet or a kernel changes.
    for folder_name in (SNIPPETS_DIR, "kernels"):
        watched = root / folder_name
        if watched.is_dir() and str(watched) not in config["watch"]:
            config["watch"].append(str(watched))
    return config


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
