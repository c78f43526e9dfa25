"""Under ``mkdocs serve``: the first page does not wait for the snippets.

On a fresh checkout every snippet must be executed (about a minute of both cores), and
``mkdocs build`` does that before it writes a page. ``mkdocs serve``'s first build instead
shows each snippet not yet executed as a placeholder page saying so (:func:`placeholder`),
serves the site, and executes those snippets in the background, side by side, exactly as a
build would (:func:`.snippet_pages.ensure_all_executed`), at a lower priority than the
server's rebuilds; when they have run the server
rebuilds (:func:`.serve.rebuild_soon`) and shows them. While they run, a
rebuild (a page edited meanwhile) shows the placeholders too instead of executing the same
snippets a second time. Once they are done, a rebuild executes what is missing before it
writes a page, as ``mkdocs build`` does: a snippet edited shows after its own run. A snippet
that fails in the background fails that next build, with its traceback.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from pathlib import Path

from . import serve
from .snippet_pages import SnippetError, ensure_all_executed, run_seconds

log = logging.getLogger("mkdocs.hooks.snippets")

_lock = threading.Lock()
_state: dict = {"builds": 0, "thread": None, "folder": None}


def running() -> bool:
    thread = _state["thread"]
    return thread is not None and thread.is_alive()


def defer(pairs) -> bool:
    """Whether this build shows `pairs` (snippet, notebook), which have no notebook yet, as
    placeholders: on the server's first build (their execution starts in the background
    once the build has written the site, :func:`start`) and while that execution runs; not
    afterwards."""
    with _lock:
        first = _state["builds"] == 0
        _state["builds"] += 1
        thread = _state["thread"]
        if thread is not None and not thread.ident:  # deferred by a build that failed before its end
            thread.start()
            return True
        if running():
            return True
        if not first:
            return False
        _state["thread"] = threading.Thread(target=_execute, args=(list(pairs),), name="snippets-deferred",
                                            daemon=True)
        return True


def start() -> None:
    """After the first build (its pages written, so they are served at once): the deferred
    snippets' execution starts."""
    with _lock:
        thread = _state["thread"]
        if thread is not None and not thread.ident:
            thread.start()


def count_build() -> None:
    """A build of the server that had nothing to execute (the next one is not its first)."""
    with _lock:
        _state["builds"] += 1


def _execute(pairs) -> None:
    serve.lower_priority()
    log.info("executing %d snippets in the background; their pages show once they have run", len(pairs))
    try:
        for snippet in ensure_all_executed(pairs):
            log.info("executed snippets/%s in %.1f s", snippet.name, run_seconds.get(snippet, 0.0))
    except SnippetError as exc:
        # the next build executes it again, and fails with this
        log.info("a snippet failed in the background (the next build says which): %s", str(exc).splitlines()[0])
    finally:
        serve.rebuild_soon()


PLACEHOLDER = """# {name}

**Being executed.** `mkdocs serve` showed the site before this snippet had run; it is
running now, and this page is rebuilt with its output when it has (the server reloads it).
"""


def placeholder(snippet: Path) -> Path:
    """A one-cell notebook standing for the snippet's page until it has run."""
    import nbformat

    if _state["folder"] is None:
        _state["folder"] = Path(tempfile.mkdtemp(prefix="gemmglossary-pending-"))
    # (named like the executed notebooks, so that mkdocs-jupyter's include pattern takes it)
    path = _state["folder"] / "snippets" / snippet.stem / "pending.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(PLACEHOLDER.format(name=snippet.name))])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path
