"""Which page a Python-Markdown instance is converting, under MkDocs and under Zensical.

Python-Markdown itself knows nothing of pages; each engine tells its extensions in its
own way, and both were read in their pinned versions (mkdocs 1.6, zensical 0.0.73):

- **MkDocs** registers a ``relpath`` tree processor on the Markdown instance of each
  page before converting it; it holds the page's ``File`` (``src_uri``, relative to
  docs_dir, and ``abs_src_path``).
- **Zensical** puts a ``rendering_context`` preprocessor at the front of every page's
  Markdown instance (``zensical.extensions.context``); its ``page.path`` is the page's
  path relative to docs_dir, the same string as MkDocs' ``src_uri``, and its ``config``
  holds ``docs_dir`` as written in mkdocs.yml (relative to the folder Zensical was run
  from, or to the project root).

Both are looked up when a processor runs, not when the extension is registered.
Anything else (a bare ``markdown.markdown(...)`` call) has no page: :func:`current_page`
returns None and each extension decides what that means (the excerpts extension refuses
to expand, since it cannot check a block against the lock without the page).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..paths import project_root


@dataclass(frozen=True)
class PageRef:
    src_uri: str  # relative to docs_dir, with "/" (the excerpt lock's page key)
    path: Path | None  # the page's Markdown file, when it can be found
    engine: str  # "mkdocs" or "zensical"

    @property
    def label(self) -> str:
        return f"docs/{self.src_uri}"


def _mkdocs_page(md) -> PageRef | None:
    try:
        proc = md.treeprocessors["relpath"]
    except (KeyError, AttributeError):
        return None
    file = getattr(proc, "file", None)
    src, path = getattr(file, "src_uri", None), getattr(file, "abs_src_path", None)
    if not src:
        return None
    return PageRef(src, Path(path) if path else None, "mkdocs")


def _zensical_page(md) -> PageRef | None:
    try:
        proc = md.preprocessors["rendering_context"]
    except (KeyError, AttributeError):
        return None
    src = getattr(getattr(proc, "page", None), "path", None)
    if not src:
        return None
    docs_dir = Path(str((getattr(proc, "config", None) or {}).get("docs_dir") or "docs"))
    # Zensical keeps docs_dir as written; the page file is under the folder it was run
    # from (where mkdocs.yml is) or, failing that, under the project root.
    found = None
    for base in (Path.cwd(), project_root()):
        candidate = (docs_dir if docs_dir.is_absolute() else base / docs_dir) / src
        if candidate.is_file():
            found = candidate
            break
    return PageRef(src.replace("\\", "/"), found, "zensical")


def current_page(md) -> PageRef | None:
    """The page ``md`` is converting, or None when no engine said."""
    return _mkdocs_page(md) or _zensical_page(md)
