"""Kernel excerpts, checked against the lock and expanded: a Python-Markdown extension.

Listed under ``markdown_extensions`` in mkdocs.yml (``gemmglossary.docs_hooks.excerpts``),
so MkDocs and Zensical run this same code on every page (issue #21). For each page it:

1. finds the excerpt blocks and stray excerpt lines (:mod:`gemmglossary.excerpts.blocks`);
2. checks each against its file and against the lock entry *of this page*
   (:func:`gemmglossary.excerpts.check.check_page`: range, attributes, moved, changed,
   unlocked, a lock entry of the page no block uses, a stray ``--8<--`` line) and stops
   the build on any problem, naming ``docs/<page>:<line>`` of the page's own file;
3. replaces each block by a titled, line-numbered, annotated code block with a source
   link (:mod:`gemmglossary.excerpts.render`) and the excerpt's line coverage, and marks
   the lines the tests never executed in the page's HTML (:mod:`gemmglossary.coverage.site`).

The lock is keyed by page, so the page must be known: :mod:`.page` reads it from each
engine (MkDocs' ``relpath`` tree processor, Zensical's ``rendering_context``). A
Markdown instance that no engine set up has no page, and a page of it that quotes a
kernel is refused rather than expanded unchecked.

Source links of first-party kernels are relative to the page's *source* file
(``../kernels/x.metal`` from ``glossary/x.md``): both engines turn such a link into a
link relative to the page's URL (checked for both in tests/zensical), and both publish
the kernel at ``kernels/x.metal`` of the site (the MkDocs hook, :mod:`.excerpts_hook`;
the Zensical staging step, :mod:`.zensical_site`). Excerpts of a vendored upstream file
(MLX, llama.cpp: ``kernels/vendor/...``) link that file upstream at the pinned revision.

What needs the whole build, not one page, stays with the MkDocs hook: every page's
problems reported at once before rendering, and lock entries of deleted pages.
``gemmglossary excerpts check`` (and tests/excerpts/test_repo_lock.py) check those for
any engine.
"""

from __future__ import annotations

import functools
import posixpath
from dataclasses import replace

from markdown import Extension
from markdown.postprocessors import Postprocessor
from markdown.preprocessors import Preprocessor

from .. import vendor
from ..coverage import site as _coverage
from ..excerpts.blocks import Block, scan
from ..excerpts.check import VENDOR_PREFIX, FileCache, check_page, display_path, interrupted, load_lock
from ..excerpts.lock import LockError
from ..excerpts.notes import notes_for
from ..excerpts.render import expand, link_text, source_link
from ..paths import project_root
from .page import PageRef, current_page

try:  # MkDocs prints a BuildError as a message, not a traceback; Zensical prints any error.
    from mkdocs.exceptions import PluginError as _BuildError
except ImportError:  # pragma: no cover - mkdocs is a dependency of the package
    _BuildError = RuntimeError  # type: ignore[misc,assignment]

#: Runs before every other preprocessor (facts are 40, whitespace normalisation 30,
#: SuperFences 25), on the page's lines as the engine gives them.
PRIORITY = 45


class ExcerptError(_BuildError):
    """Kernel excerpts that cannot be shown as they are; the message lists each problem."""


def failure(title: str, problems: list) -> ExcerptError:
    listed = "\n".join(f"  {p}" for p in problems)
    return ExcerptError(f"{title}:\n{listed}")


def source_link_for(block: Block, page_src_uri: str, coverage=_coverage.current) -> str:
    """The Markdown source link of one block on one page (`coverage`: what gives the
    build's SiteCoverage)."""
    source = vendor.load_pins().source_of(block.file) if block.file.startswith(VENDOR_PREFIX) else None
    if source is not None:
        url = source.permalink(block.file[len(source.prefix):], block.start, block.end)
        text = link_text(display_path(block.file), block.start, block.end) + f" ({source.label})"
    else:
        url = posixpath.relpath(block.file, posixpath.dirname(page_src_uri) or ".")
        text = link_text(block.file, block.start, block.end)
    try:
        note = _coverage.note_for(page_src_uri, block.file, block.start, block.end, coverage())
    except _coverage.COVERAGE_ERRORS as exc:  # a failed coverage run, a stale exemption
        raise ExcerptError(f"line coverage of the excerpts: {exc}") from None
    return source_link(text, url) + note


def _with_file_lines(page: PageRef, scanned):
    """The blocks and strays with page lines of the page's own file.

    Both engines hand extensions the page without its front matter, so line numbers of
    the converted text are short by the front matter's length; the k-th block of the
    text is the k-th block of the file."""
    blocks, strays = scanned
    try:
        on_disk = scan(page.path.read_text(encoding="utf-8")) if page.path else None
    except (OSError, UnicodeDecodeError):
        on_disk = None
    if on_disk is None or len(on_disk[0]) != len(blocks) or len(on_disk[1]) != len(strays):
        return scanned
    return ([replace(b, line_index=f.line_index) for b, f in zip(blocks, on_disk[0])],
            [replace(s, index=f.index) for s, f in zip(strays, on_disk[1])])


def expand_page(text: str, page: PageRef | None) -> str:
    """Check and expand every excerpt of one page's Markdown; raise ExcerptError on any problem."""
    scanned = scan(text)
    if not scanned[0] and not scanned[1]:
        return text
    if page is None:
        raise ExcerptError(
            "kernel excerpts are expanded only on a page MkDocs or Zensical is building: the "
            "excerpt lock is keyed by page, and this Markdown conversion did not say which page "
            "it is, so the excerpts cannot be checked")
    root = project_root()
    if any(b.file and b.file.startswith(VENDOR_PREFIX) for b in scanned[0]):
        try:
            vendor.ensure()
        except vendor.VendorError as exc:
            raise ExcerptError(f"the upstream files docs/{page.src_uri} quotes: {exc}") from None
    try:
        lock = load_lock(root)
    except LockError as exc:
        raise ExcerptError(str(exc)) from None
    files = FileCache(root)
    _, problems = check_page(page.src_uri, text, files, lock, _with_file_lines(page, scanned))
    problems = interrupted(root) + problems
    if problems:
        raise failure(f"{len(problems)} kernel excerpt problem(s) on docs/{page.src_uri} "
                      "(see src/gemmglossary/excerpts/; `gemmglossary excerpts check` lists them all)",
                      problems)
    coverage = functools.cache(_coverage.current)  # asked once per page, if an excerpt needs it
    return expand(text, lambda f: files.lines(f)[0], lambda b: source_link_for(b, page.src_uri, coverage),
                  notes_for)


class ExcerptsPreprocessor(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        text = "\n".join(lines)
        out = expand_page(text, current_page(self.md))
        return lines if out is text else out.split("\n")


class CoverageMarksPostprocessor(Postprocessor):
    def run(self, text: str) -> str:
        return _coverage.mark_unexecuted(text)


class ExcerptsExtension(Extension):
    def extendMarkdown(self, md):
        md.preprocessors.register(ExcerptsPreprocessor(md), "gemmglossary_excerpts", PRIORITY)
        # after the raw HTML (the highlighted code) is put back, priority 30
        md.postprocessors.register(CoverageMarksPostprocessor(md), "gemmglossary_coverage_marks", 5)


def makeExtension(**kwargs):
    return ExcerptsExtension(**kwargs)

