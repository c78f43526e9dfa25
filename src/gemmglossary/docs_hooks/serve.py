"""mkdocs hook for ``mkdocs serve``: an edit shows in seconds (registered by docs/.hooks/serve.py).

``mkdocs serve`` rebuilds the whole site on every change, and most of a rebuild is the same
work again: each page's Markdown converted by every extension (the excerpts checked and
expanded, the facts computed, the figures drawn, the glossary links checked), and Material's
search index parsing every page's HTML. Under ``mkdocs serve`` only (``mkdocs build`` and CI
are untouched, every page converted every time):

- **A page converts again only when something it is made from changed.** The HTML of a
  page's conversion (its table of contents, title and anchors with it) is kept in memory,
  keyed by the page's Markdown and by :func:`inputs_fingerprint`: the size and time of every
  file an extension reads (``kernels/``, the excerpt lock and exemptions, the package's
  code, ``mkdocs.yml``), the coverage reports' folder, the list of pages and every page's
  front matter (where the glossary declares its terms). Editing one page converts that
  page; editing a kernel, the lock, the code or an entry's terms converts them all, as
  before. A kept page is not checked again for links into the pages that changed.
- **The search index reads a page again only when its HTML changed** (Material's
  ``SearchIndex.add_entry_from_context``, its entries kept by the page's URL and HTML).
- **No coverage run holds up a page**: :func:`gemmglossary.coverage.site.serving`.
- **The first page waits for no figure and no snippet.** On a fresh checkout nothing is
  drawn or executed yet (on 2 cores, drawing the figures is most of a first build, and
  executing the snippets a minute more). The first build shows a placeholder for each
  figure not in the figure cache and each snippet not executed (:mod:`.snippet_deferred`);
  once it has written the site, the figures are drawn in a process of their own and the
  snippets executed, both at a lower priority than the server's rebuilds, and the server
  rebuilds when each is done (:func:`rebuild_soon`: it touches :data:`TRIGGER`, which it
  watches). A page that showed a placeholder is never kept.

Snippet pages are mkdocs-jupyter's, which keeps their rendering in its own cache; the
snippets are executed only when what they use changed (:mod:`.snippets`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from mkdocs.plugins import event_priority

from ..paths import project_root

log = logging.getLogger("mkdocs.hooks.serve")

#: What the extensions read besides the page (relative to the project root).
INPUTS = ("kernels", "excerpts.lock.json", "coverage-exemptions.toml", "mkdocs.yml", "src/gemmglossary")

#: The file the server watches, touched when background work is done (under the root).
TRIGGER = Path(".cache") / "serve-rebuild"

_state = {"serving": False, "builds": 0, "figures": None}
#: page src_uri -> (key, what its conversion left on the page)
_rendered: dict[str, tuple[str, dict]] = {}
_fingerprint: dict[str, str] = {}


def serving() -> bool:
    return _state["serving"]


def on_startup(command, dirty):
    _state["serving"] = command == "serve"


def on_config(config):
    if serving():
        from ..coverage import site as coverage_site

        coverage_site.serving(config)
        _keep_search_entries()
        trigger = project_root() / TRIGGER
        trigger.parent.mkdir(parents=True, exist_ok=True)
        trigger.touch()
        if str(trigger) not in config["watch"]:
            config["watch"].append(str(trigger))
    return config


def rebuild_soon() -> None:
    """Background work is done: the server rebuilds (it watches :data:`TRIGGER`)."""
    (project_root() / TRIGGER).touch()


def lower_priority() -> None:
    """The calling thread, the threads it starts and their processes yield to the server's
    rebuilds (Linux gives each thread its own nice value, and a new thread or process
    inherits it; elsewhere nothing changes)."""
    if sys.platform == "linux":
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except OSError:
            pass


def on_pre_build(config):
    if not serving():
        return
    from . import figures

    first = _state["builds"] == 0
    _state["builds"] += 1
    thread = _state["figures"]
    if first or (thread is not None and thread.is_alive()):
        figures.deferred = []  # placeholders for what is not drawn yet
    else:
        figures.deferred = None


def on_post_build(config):
    if not serving():
        return
    from . import figures

    pending = list({json.dumps([n, a], sort_keys=True): (n, a) for n, a in figures.deferred or []}.values())
    if pending and _state["figures"] is None:
        _state["figures"] = threading.Thread(target=_draw, args=(pending,), name="figures-deferred", daemon=True)
        _state["figures"].start()


#: Draws the figures named on stdin (a JSON list of [name, arguments]) into the figure cache.
_DRAW = ("import json, sys\n"
         "from gemmglossary.figures import generate\n"
         "for name, args in json.load(sys.stdin):\n"
         "    generate(name, args)\n")


def _draw(pending) -> None:
    lower_priority()
    log.info("drawing %d figures in the background; their pages show them once they are drawn", len(pending))
    try:
        proc = subprocess.run([sys.executable, "-c", _DRAW], input=json.dumps(pending), text=True,
                              capture_output=True, cwd=project_root(),
                              env={**os.environ, "GEMMGLOSSARY_ROOT": str(project_root())})
        if proc.returncode:  # the next build draws them itself, and fails naming the page
            log.info("drawing the figures in the background failed (the next build says why): %s",
                     (proc.stderr.strip().splitlines() or ["?"])[-1])
        else:
            log.info("drew %d figures", len(pending))
    finally:
        rebuild_soon()


def _stats(root: Path, top: str):
    p = root / top
    if p.is_file():
        st = p.stat()
        yield top, st.st_size, st.st_mtime_ns
        return
    for folder, dirs, names in os.walk(p):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            f = os.path.join(folder, name)
            st = os.stat(f)
            yield os.path.relpath(f, root), st.st_size, st.st_mtime_ns


def inputs_fingerprint(root: Path, pages: dict[str, str], extra: tuple = ()) -> str:
    """A hash of everything a page's conversion reads but the page itself: the files of
    :data:`INPUTS` (by size and time), `extra`, and every page's name and front matter."""
    from .glossary_terms import FRONT_MATTER

    h = hashlib.sha256()
    for top in INPUTS:
        for entry in _stats(root, top):
            h.update(repr(entry).encode())
    h.update(repr(extra).encode())
    for uri in sorted(pages):
        m = FRONT_MATTER.match(pages[uri])
        h.update(f"\0{uri}\0{m.group(0) if m else ''}".encode())
    return h.hexdigest()


def on_files(files, config):
    if serving():
        from ..coverage.collect import reports_dir

        pages = {f.src_uri: f.content_string for f in files.documentation_pages() if f.src_uri.endswith(".md")}
        _fingerprint["now"] = inputs_fingerprint(project_root(), pages, (reports_dir().stat().st_mtime_ns,))
    return files


#: What a page's conversion leaves on it, besides its HTML.
_KEPT = ("content", "toc", "_title_from_render", "present_anchor_ids")


@event_priority(-100)  # after every other hook has changed the page's Markdown
def on_page_markdown(markdown, page, config, files):
    if not serving() or not page.file.src_uri.endswith(".md"):
        return markdown
    key = hashlib.sha256(f"{_fingerprint['now']}\0{markdown}".encode()).hexdigest()
    kept = _rendered.get(page.file.src_uri)
    render = page.render

    def render_or_reuse(config, files):
        from . import figures

        if kept is not None and kept[0] == key:
            for name, value in kept[1].items():
                setattr(page, name, value)
            page.links_to_anchors = None  # checked when it was converted
            return
        placeholders = len(figures.deferred or [])
        render(config, files)
        if len(figures.deferred or []) == placeholders:  # (a page with a placeholder is converted again)
            _rendered[page.file.src_uri] = (key, {name: getattr(page, name) for name in _KEPT})

    page.render = render_or_reuse
    return markdown


#: page URL -> (hash of its HTML, the search entries made from it)
_search_entries: dict[str, tuple[str, list]] = {}


def _keep_search_entries() -> None:
    """Material's search index reads a page's HTML only when it changed."""
    try:
        from material.plugins.search.plugin import SearchIndex
    except ImportError:  # not Material's search plugin: nothing to keep
        return
    if getattr(SearchIndex.add_entry_from_context, "_gemmglossary_kept", False):
        return
    original = SearchIndex.add_entry_from_context

    def add_entry_from_context(self, page):
        digest = hashlib.sha256((page.content or "").encode()).hexdigest()
        found = _search_entries.get(page.url)
        if found is not None and found[0] == digest:
            self.entries.extend(found[1])
            return
        before = len(self.entries)
        original(self, page)
        _search_entries[page.url] = (digest, self.entries[before:])

    add_entry_from_context._gemmglossary_kept = True
    SearchIndex.add_entry_from_context = add_entry_from_context
