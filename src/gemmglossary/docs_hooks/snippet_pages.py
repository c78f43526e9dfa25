"""The project's own step for the snippet pages: each snippet executed once, for any engine.

A snippet (``snippets/<name>.py``, jupytext percent format) is read with jupytext and
executed with nbclient: the ``python3`` kernelspec of this interpreter, over IPC, with
errors not allowed (a cell that raises fails the build, naming the snippet, with the
traceback), and a cell's printed text kept as one output per stream (as it was printed,
not as the kernel happened to flush it). The executed notebook is kept in
``.cache/snippets/<name>/<key>.ipynb``, where ``key`` is :func:`.snippets.cache_key`, a
hash of the snippet and of every kernel and module it uses: editing a kernel re-executes
only the snippets that read it, going back to a recent state is a cache hit, and a
notebook is written only once the whole snippet ran (atomically). After a successful
build the newest :data:`.snippets.KEEP` notebooks of each snippet are kept.

Both engines show the same executed notebook:

- MkDocs: mkdocs-jupyter renders it (``execute: false``; the hook hands it the notebook,
  :mod:`.snippets`);
- Zensical, which has no plugins: :func:`notebook_markdown` writes it as plain Markdown
  (:mod:`.zensical_site` stages it as a page) — markdown cells as they are, code cells as
  ```` ```python ```` blocks, printed output as ```` ```text ```` blocks (stderr inside a
  warning admonition), rich output (the figures of
  :func:`gemmglossary.snippets.show_figure`, with their alt text) as the HTML the snippet
  displayed.

A test run executes each snippet once too. Its ``tests/snippets/test_snippet_runs.py``
(:data:`MEASURED_RUNS`) executes every snippet with :func:`execute`, instrumented when
the session measures the kernels' coverage, and keeps the notebook (:func:`keep`); a
build inside that session waits for those tests instead of executing the snippets again.

Kernels run over IPC (local sockets) rather than TCP, on which ipykernel prints "Kernel
is running over TCP without encryption" once per snippet: nothing a reader of the build
log needs, and every other warning still shows. The socket prefix is absolute, in
Jupyter's runtime folder and one per process and thread (jupyter_client's default is relative to
the current folder, and the kernel runs in snippets/).
"""

from __future__ import annotations

import base64
import concurrent.futures
import functools
import html
import itertools
import logging
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..excerpts.lock import write_text_atomic
from ..file_lock import mark_used
from ..optional import require
from ..paths import project_root

log = logging.getLogger("mkdocs.hooks.snippets")

#: The snippets' folder, at the project root (readers run ``python snippets/<name>.py``).
SNIPPETS_DIR = "snippets"
CACHE_DIR = Path(".cache") / "snippets"
#: Cache entries are named by the first characters of the key.
KEY_LENGTH = 16
#: Executed notebooks kept per snippet after a successful build (the newest ones).
KEEP = 3
KERNEL_NAME = "python3"
#: Seconds one cell may run (the slowest snippet cells compile MLX's kernels).
CELL_TIMEOUT = 900
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class SnippetError(RuntimeError):
    """A snippet that cannot be executed or shown; the message names it."""


# ----------------------------------------------------------------------------- execution

def _prefix_env(name: str, folder: Path) -> None:
    paths = [p for p in os.environ.get(name, "").split(os.pathsep) if p]
    if str(folder) not in paths:
        os.environ[name] = os.pathsep.join([str(folder), *paths])


def use_this_python() -> None:
    """Kernels of this process run this interpreter: its ``share/jupyter`` comes first,
    so the virtual environment's ``python3`` kernelspec wins over any per-user one
    (jupyter_client runs that spec, ``argv[0] == "python"``, with ``sys.executable``)."""
    _prefix_env("JUPYTER_PATH", Path(sys.prefix) / "share" / "jupyter")


#: The longest socket path the prefix may make: a Unix socket's path holds 104 bytes on
#: macOS and 108 on Linux, and jupyter_client appends ``-<n>`` to the prefix.
SOCKET_PATH_MAX = 96


@functools.cache
def kernel_ipc_prefix(thread: int = 0) -> str:
    """Absolute path prefix of the kernel sockets (``<prefix>-<n>``) of this process and
    thread: jupyter_client takes the first free ``<n>`` under a prefix, so kernels started
    at once by two threads must not share one. In Jupyter's runtime folder, or, where that
    is too deep for a socket path (a test's temporary folder), in a private folder of the
    user's in the system's temporary folder."""
    from jupyter_core.paths import jupyter_runtime_dir

    name = f"gemmglossary-{os.getpid()}-{thread}"
    folder = Path(jupyter_runtime_dir())
    if len(str(folder / name)) + 6 > SOCKET_PATH_MAX:
        folder = Path(tempfile.gettempdir()) / f"gemmglossary-ipc-{os.getuid()}"
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.stat().st_uid != os.getuid() or folder.stat().st_mode & 0o077:
            raise SnippetError(f"{folder} (for the snippet kernels' sockets) is not a private folder of this user")
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / name)


_thread_numbers = itertools.count()
_this_thread = threading.local()


def _thread_number() -> int:
    """A small number of the calling thread (a socket path must stay short: about 100
    bytes on Linux and macOS, and the runtime folder may be deep already)."""
    if not hasattr(_this_thread, "number"):
        _this_thread.number = next(_thread_numbers)
    return _this_thread.number


def notebook_path(snippet: Path, key: str, root: Path | None = None) -> Path:
    """Where the executed notebook of ``snippet`` under ``key`` is kept."""
    root = project_root() if root is None else root
    return root / CACHE_DIR / snippet.stem / f"{key[:KEY_LENGTH]}.ipynb"


def execute(snippet: Path, root: Path | None = None, *, startup: Path | None = None):
    """Run one snippet as a notebook and return it executed; SnippetError if a cell raises.

    The kernel sees ``root`` as the project root (``GEMMGLOSSARY_ROOT``). ``startup``: a
    Python file the kernel runs before the first cell (IPython's ``exec_files``, in the
    snippet's namespace; it counts as no cell): the tests' recorder of what a snippet reads."""
    jupytext = require("jupytext", "executing the snippets")
    require("nbclient", "executing the snippets")
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from traitlets.config import Config

    use_this_python()
    nb = jupytext.read(snippet)
    # The client starts (and shuts down) its own kernel, over IPC.
    config = Config({"KernelManager": {"transport": "ipc", "ip": kernel_ipc_prefix(_thread_number())}})
    extra = [f"--IPKernelApp.exec_files={[str(startup)]!r}"] if startup is not None else []
    client = NotebookClient(nb, config=config, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT,
                            allow_errors=False, resources={"metadata": {"path": str(snippet.parent)}},
                            extra_arguments=extra, coalesce_streams=True)
    env = {**os.environ, "GEMMGLOSSARY_ROOT": str(project_root() if root is None else root)}
    try:
        client.execute(env=env)
    except CellExecutionError as exc:
        raise SnippetError(f"snippets/{snippet.name} raised:\n{_ANSI.sub('', str(exc))}") from None
    return nb


def _readable(path: Path) -> bool:
    import nbformat

    try:
        nbformat.read(path, as_version=4)
        return True
    except Exception:  # noqa: BLE001 - any damage means: execute again
        return False


def ensure_executed(snippet: Path, path: Path, root: Path | None = None) -> bool:
    """Make ``path`` hold the executed notebook of ``snippet`` (of the project at ``root``);
    return whether it ran now."""
    if path.is_file():
        if _readable(path):
            mark_used(path)  # most recently used: pruned last
            return False
        # Not a warning: nothing for the writer to fix, and --strict would fail the build.
        log.info("executed snippet %s cannot be read: deleted, the snippet is executed again", path)
        path.unlink()
    _writable(path)  # before minutes of execution, not after
    t0 = time.monotonic()
    keep(path, execute(snippet, root))
    run_seconds[snippet] = time.monotonic() - t0
    return True


#: How long the last execution of each snippet took in this process (seconds), for the log.
run_seconds: dict[Path, float] = {}


def _writable(path: Path) -> None:
    """SnippetError unless an executed notebook can be kept at ``path`` (a read-only
    checkout whose cache lacks it: the page cannot be built from it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=".probe-")
    except OSError as exc:
        why = exc.strerror
    else:
        os.close(fd)
        os.unlink(probe)
        return
    raise SnippetError(f"{path.parent}: cannot keep the executed notebook there ({why}), and its page is built "
                       "from it; build from a checkout you can write, or one whose snippets were executed")


def keep(path: Path, nb) -> None:
    """Keep an executed notebook at ``path`` (:func:`notebook_path`), where the builds look
    for it: written whole or not at all."""
    import nbformat

    _writable(path)
    write_text_atomic(path, nbformat.writes(nb))


#: The test file that, in a test session measuring the quoted kernels' coverage
#: (:mod:`gemmglossary.coverage.session`), executes every snippet as a notebook, instrumented,
#: and keeps each notebook where the builds look for it (:func:`keep`).
MEASURED_RUNS = "tests/snippets/test_snippet_runs.py"


def _await_measured_runs(snippets: list[Path], root: Path) -> None:
    """In a test session that measures coverage, a build of the session's project waits
    for the session's own runs of its snippets instead of executing each a second time (the
    site build starts with the session, while those tests run). Returns at once anywhere
    else; a snippet whose test failed is then executed by the build, which reports it."""
    from ..coverage import collect, session

    measuring = session.Session.active()
    if measuring is None or Path(measuring.meta["root"]).resolve() != root.resolve():
        return
    folder = (root / SNIPPETS_DIR).resolve()
    if not any(s.resolve().parent == folder for s in snippets):
        return
    tests = [t for t in measuring.meta["tests"] if t.startswith(MEASURED_RUNS + "::")]
    if tests:
        log.info("waiting for the test session's runs of the snippets (%s)", MEASURED_RUNS)
        try:
            measuring.wait_for(tests)
        except collect.CoverageRunError as exc:  # the session stopped: say so, as a build error
            raise SnippetError(f"the snippets were left to {MEASURED_RUNS} of this test session: {exc}") from None


def ensure_all_executed(pairs, root: Path | None = None, jobs: int | None = None) -> list[Path]:
    """:func:`ensure_executed` for every ``(snippet, notebook)`` pair, ``jobs`` at a time
    (one per core by default: each runs in a kernel process of its own, and is mostly
    compiling and running kernels). Returns the snippets executed now, in the order given.
    Every pair is tried; then the first failure, in that order, is raised."""
    pairs = list(pairs)
    missing = [snippet for snippet, notebook in pairs if not notebook.is_file()]
    if missing:
        _await_measured_runs(missing, project_root() if root is None else root)
    jobs = max(1, min(len(pairs), jobs or os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="snippet") as pool:
        futures = [pool.submit(ensure_executed, snippet, notebook, root) for snippet, notebook in pairs]
    ran = []
    for (snippet, _), future in zip(pairs, futures):
        if future.result():  # raises the first failure
            ran.append(snippet)
    return ran


def prune(snippet: Path, current: Path) -> None:
    """Keep the newest :data:`KEEP` executed notebooks of a snippet (``current`` always)."""
    found = sorted(current.parent.glob("*.ipynb"), key=lambda p: (p == current, p.stat().st_mtime), reverse=True)
    for old in found[KEEP:]:
        old.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- Markdown

def _fence(text: str, lang: str) -> list[str]:
    longest = max((len(m.group(0)) for m in re.finditer(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text.rstrip("\n"), fence]


def _joined(value) -> str:
    return value if isinstance(value, str) else "".join(value)


def _rich(data: dict, where: str) -> list[str]:
    """One display_data / execute_result output as Markdown lines."""
    if "text/html" in data:
        return ['<div class="snippet-output" markdown="0">', _joined(data["text/html"]).strip("\n"), "</div>"]
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            alt = html.escape(_joined(data.get("text/plain", "")).strip(), quote=True)
            if not alt:
                raise SnippetError(f"{where}: an image without a description (show it with "
                                   "gemmglossary.snippets.show_figure)")
            payload = data[mime] if isinstance(data[mime], str) else base64.b64encode(data[mime]).decode()
            return [f'<p><img alt="{alt}" src="data:{mime};base64,{payload.strip()}"></p>']
    if "image/svg+xml" in data:
        return ['<div class="snippet-output" markdown="0">', _joined(data["image/svg+xml"]).strip("\n"), "</div>"]
    if "text/plain" in data:
        return _fence(_ANSI.sub("", _joined(data["text/plain"])), "text")
    raise SnippetError(f"{where}: an output of type {', '.join(sorted(data))} cannot be shown on a page")


def notebook_markdown(nb, name: str) -> str:
    """An executed notebook as a Markdown page."""
    out: list[str] = []
    for number, cell in enumerate(nb.cells, 1):
        source = _joined(cell.source)
        if cell.cell_type == "markdown":
            out += [source, ""]
            continue
        if cell.cell_type != "code" or not source.strip():
            continue
        out += _fence(source, "python") + [""]
        where = f"snippets/{name}.py, cell {number}"
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind == "stream":
                text = _ANSI.sub("", _joined(output.get("text", "")))
                if output.get("name") == "stderr":
                    out += ['!!! warning "Printed on stderr"', ""]
                    out += ["    " + line if line else "" for line in _fence(text, "text")] + [""]
                else:
                    out += _fence(text, "text") + [""]
            elif kind in ("display_data", "execute_result"):
                out += _rich(output.get("data", {}), where) + [""]
            else:  # errors stop the execution before this point (allow_errors is off)
                raise SnippetError(f"{where}: an output of type {kind!r}")
    return "\n".join(out).rstrip("\n") + "\n"


def markdown_page(path: Path, name: str) -> str:
    """The Markdown page of an executed notebook file."""
    import nbformat

    return notebook_markdown(nbformat.read(path, as_version=4), name)
