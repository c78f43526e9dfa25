"""The mkdocs hook (registered by docs/.hooks/excerpts.py).

- ``on_config``: materialize the pinned MLX files (``gemmglossary.vendor.ensure``), so a
  fresh checkout builds without a separate step; a vendored file that differs from its
  pin stops the build with its name (it is never silently restored).
- ``on_files``: check every excerpt of the pages being built against the lock and fail
  the build (``PluginError``, also without ``--strict``) on any problem; publish each
  quoted first-party kernel as a static file at its repository path (``kernels/x.metal``).
- ``on_page_markdown``: expand each excerpt block into a titled, line-numbered,
  annotated code block with a source link (see :mod:`.render`).
"""

from __future__ import annotations

import mimetypes
import posixpath
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from .. import vendor
from ..paths import project_root
from ..excerpts.blocks import Block, find_blocks
from ..excerpts.lock import LockError, lock_path
from ..excerpts.check import VENDOR_PREFIX, FileCache, check, check_excerpt, display_path
from ..excerpts.render import expand, link_text, source_link

MLX_PREFIX = VENDOR_PREFIX + vendor.MLX_KERNELS_SUBPATH + "/"


def _fail(title: str, problems: list) -> PluginError:
    listed = "\n".join(f"  {p}" for p in problems)
    return PluginError(f"{title}:\n{listed}")


def on_config(config):
    try:
        vendor.ensure()
    except vendor.VendorError as exc:
        raise PluginError(f"the MLX files the pages quote: {exc}") from None
    # `mkdocs serve` shows published kernels as text instead of offering a download.
    mimetypes.add_type("text/plain", ".metal")
    # `mkdocs serve` rebuilds when a kernel or the lock changes, not only the pages.
    config.watch.extend(str(p) for p in (project_root() / "kernels", lock_path()) if p.exists())
    return config


def on_files(files: Files, config) -> Files:
    root = project_root()
    # The lock covers Markdown pages (notebook pages such as snippets/*.py quote no excerpts).
    pages = {f.src_uri: f.content_string for f in files.documentation_pages() if f.src_uri.endswith(".md")}
    try:
        report = check(root, docs_dir=Path(config.docs_dir), pages=pages)
    except LockError as exc:
        raise PluginError(str(exc)) from None
    docs_dir = Path(config.docs_dir)
    # Lock entries of pages that exist but are not built (exclude_docs) are not this build's business.
    problems = [q for q in report.problems
                if not (q.kind == "unused" and q.page not in pages and (docs_dir / q.page).is_file())]
    if problems:
        raise _fail(f"{len(problems)} kernel excerpt problem(s) "
                    "(see src/gemmglossary/excerpts/)", problems)
    published = {f.src_uri for f in files}
    for ex in report.excerpts:
        file = ex.block.file
        if file.startswith(VENDOR_PREFIX) or file in published:
            continue
        files.append(File.generated(config, file, abs_src_path=str(root / file)))
        published.add(file)
    return files


def _link(block: Block, page_src_uri: str) -> str:
    if block.file.startswith(MLX_PREFIX):
        pins = vendor.load_pins()
        rel = block.file[len(MLX_PREFIX):]
        url = pins.permalink(rel, block.start, block.end)
        text = link_text(display_path(block.file), block.start, block.end) + f" (MLX v{pins.version})"
    else:
        url = posixpath.relpath(block.file, posixpath.dirname(page_src_uri) or ".")
        text = link_text(block.file, block.start, block.end)
    return source_link(text, url)


def on_page_markdown(markdown: str, page, config, files) -> str:
    src_uri = page.file.src_uri
    blocks = find_blocks(markdown)
    if not blocks:
        return markdown
    cache = FileCache(project_root())
    problems = [
        q for b in blocks for q in check_excerpt(src_uri, b, cache, None).problems
        if q.kind in {"malformed", "missing-file", "vendored", "range"}
    ]
    if problems:
        raise _fail(f"cannot expand the kernel excerpts of docs/{src_uri}", problems)
    return expand(markdown, lambda f: cache.lines(f)[0], lambda b: _link(b, src_uri))
