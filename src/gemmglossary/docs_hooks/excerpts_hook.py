"""The MkDocs hook for kernel excerpts (registered by docs/.hooks/excerpts.py).

Checking and expanding excerpts is the Markdown extension's job
(:mod:`.excerpts`, under both MkDocs and Zensical). This hook keeps what needs MkDocs:

- ``on_config``: materialize the pinned upstream files (MLX, llama.cpp) (``gemmglossary.vendor.ensure``), so a
  fresh checkout builds without a separate step and every page's excerpts can be read
  before any page renders; a vendored file that differs from its pin stops the build
  with its name (it is never silently restored). ``mkdocs serve`` shows published
  kernels as text. (What the server watches, kernels/ and the lock, is mkdocs.yml's
  ``watch:``, which Zensical reads too.)
- ``on_files``: with MkDocs' list of the pages being built, report every excerpt problem
  of every page at once, before rendering (the extension stops at the first page it
  renders), including lock entries of pages that no longer exist; then publish each
  quoted first-party kernel as a static file at its repository path (``kernels/x.metal``),
  where the source links point.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from .. import vendor
from ..excerpts.check import VENDOR_PREFIX, check
from ..excerpts.lock import LockError
from ..paths import project_root
from .excerpts import failure


def on_config(config):
    try:
        vendor.ensure()
    except vendor.VendorError as exc:
        raise PluginError(f"the upstream files the pages quote: {exc}") from None
    # `mkdocs serve` shows published kernels as text instead of offering a download.
    mimetypes.add_type("text/plain", ".metal")
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
        raise failure(f"{len(problems)} kernel excerpt problem(s) "
                      "(see src/gemmglossary/excerpts/)", problems)
    published = {f.src_uri for f in files}
    for file in published_kernels(report):
        if file not in published:
            files.append(File.generated(config, file, abs_src_path=str(root / file)))
            published.add(file)
    return files


def published_kernels(report) -> list[str]:
    """The first-party files the checked pages quote (vendored ones are linked upstream)."""
    return sorted({ex.block.file for ex in report.excerpts if not ex.block.file.startswith(VENDOR_PREFIX)})
