"""The project's own snippet renderer: a snippet executed into a Markdown page.

Under MkDocs the snippet pages are mkdocs-jupyter's (:mod:`.snippets`). Zensical has no
plugins, so for it each snippet is read with jupytext, executed with nbclient (the
``python3`` kernelspec of this interpreter, over IPC, a cell that raises fails the
render) and written as plain Markdown that any Python-Markdown engine shows natively:

- markdown cells as they are;
- code cells as ```` ```python ```` blocks (with Material's copy button, like every code block);
- printed output as ```` ```text ```` blocks, output on stderr inside a warning
  admonition (the snippets print their diagnostics; tests/snippets fails a snippet that
  leaks to stderr);
- rich output (the figures of :func:`gemmglossary.snippets.show_figure`, with their alt
  text) as the HTML the snippet displayed, images as data URIs.

Rendered pages are cached per snippet under ``.cache/snippet-pages/<name>/<key>.md``,
keyed by :func:`.snippets.cache_key` (the snippet and every kernel and module it uses),
the same key as the MkDocs build's cache, so editing a kernel re-executes only the
snippets that read it. A page is written only after the whole snippet ran, atomically;
older pages are pruned after a successful render, keeping the newest few.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from ..excerpts.lock import write_text_atomic
from ..paths import project_root
from .snippets import KEEP, KEY_LENGTH, cache_key, kernel_ipc_prefix, use_this_python

CACHE_DIR = Path(".cache") / "snippet-pages"
KERNEL_NAME = "python3"
#: Seconds one cell may run (the slowest snippet cell compiles MLX's steel GEMM).
CELL_TIMEOUT = 900
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class SnippetError(RuntimeError):
    """A snippet that cannot be rendered (it raised, or its output cannot be shown)."""


def _fence(text: str, lang: str) -> list[str]:
    longest = max((len(m.group(0)) for m in re.finditer(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text.rstrip("\n"), fence]


def _rich(data: dict, where: str) -> list[str]:
    """One display_data / execute_result output as Markdown lines."""
    if "text/html" in data:
        body = data["text/html"]
        body = body if isinstance(body, str) else "".join(body)
        return ['<div class="snippet-output" markdown="0">', body.strip("\n"), "</div>"]
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            alt = html.escape(str(data.get("text/plain", "")).strip(), quote=True)
            if not alt:
                raise SnippetError(f"{where}: an image without a description (use gemmglossary.snippets.show_figure)")
            payload = data[mime] if isinstance(data[mime], str) else base64.b64encode(data[mime]).decode()
            return [f'<p><img alt="{alt}" src="data:{mime};base64,{payload.strip()}"></p>']
    if "image/svg+xml" in data:
        return ['<div class="snippet-output" markdown="0">', str(data["image/svg+xml"]).strip("\n"), "</div>"]
    if "text/plain" in data:
        return _fence(_ANSI.sub("", str(data["text/plain"])), "text")
    raise SnippetError(f"{where}: output of type {', '.join(sorted(data))} cannot be shown on a page")


def notebook_markdown(nb, name: str) -> str:
    """An executed notebook as a Markdown page."""
    out: list[str] = []
    for number, cell in enumerate(nb.cells, 1):
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
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
                text = _ANSI.sub("", "".join(output.get("text", "")))
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


def execute(snippet: Path) -> str:
    """Run one snippet as a notebook and return its Markdown page; SnippetError if a cell raises."""
    import jupytext
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from traitlets.config import Config

    use_this_python()
    nb = jupytext.read(snippet)
    # The client starts (and shuts down) its own kernel, over IPC (see .snippets).
    config = Config({"KernelManager": {"transport": "ipc", "ip": kernel_ipc_prefix()}})
    client = NotebookClient(nb, config=config, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT,
                            allow_errors=False, resources={"metadata": {"path": str(snippet.parent)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        raise SnippetError(f"snippets/{snippet.name} raised:\n{_ANSI.sub('', str(exc))}") from None
    return notebook_markdown(nb, snippet.stem)


def cached_page(snippet: Path, root: Path | None = None) -> tuple[str, bool]:
    """(the snippet's Markdown page, whether it was executed now rather than read from the cache)."""
    root = project_root() if root is None else root
    key = cache_key(snippet, root)[:KEY_LENGTH]
    folder = root / CACHE_DIR / snippet.stem
    cached = folder / f"{key}.md"
    if cached.is_file():
        cached.touch()  # most recently used: pruned last
        return cached.read_text(encoding="utf-8"), False
    page = execute(snippet)
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(cached, page)
    for old in sorted(folder.glob("*.md"), key=lambda p: p.stat().st_mtime, reverse=True)[KEEP:]:
        old.unlink()
    return page, True
