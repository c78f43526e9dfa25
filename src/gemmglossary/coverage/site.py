"""What the site shows of line coverage: per excerpt "N of M lines executed" beside its
source link, and each line that never ran marked in the code.

The figures come from the coverage report of the sources being built
(:func:`.collect.current`: read, or made by a coverage run when there is none), never
from the page. ``GEMMGLOSSARY_SITE_COVERAGE=off`` (for a quick ``mkdocs serve`` while
editing kernels) builds without it, and every excerpt then says that coverage was not
measured. So does a build in an environment without the test dependencies, which a
coverage run needs (the log says why). A project without the coverage run's test
modules (the tests' tiny sites, made from a few files) has no coverage to show, and its
excerpts get no note.
"""

from __future__ import annotations

import html
import logging
import re

from . import collect
from .. import paths, settings
from .excerpts import all_excerpts
from .exemptions import ExemptionError
from .gcov import GcovError

#: What stops a build that cannot show its excerpts' coverage.
COVERAGE_ERRORS = (collect.CoverageRunError, GcovError, ExemptionError)

ENV = "GEMMGLOSSARY_SITE_COVERAGE"
_log = logging.getLogger("mkdocs.plugins.gemmglossary.coverage")
SECTION = "emulator.md#line-coverage"  # the docs/emulator.md section that explains the figures
UNEXECUTED_CLASS = "excerpt-unexecuted"


#: Whether a build may start a coverage run when there is no report (minutes). Not under
#: ``mkdocs serve`` (:func:`serving`): its pages come first; they show the report once
#: ``pytest`` or ``gemmglossary coverage`` has made it.
may_run = True
SERVE_NOTE = ("not measured yet (mkdocs serve starts no coverage run: `pytest` or `gemmglossary coverage` "
              "makes the report, and the served pages then show it)")


def serving(config) -> None:
    """Under ``mkdocs serve``: no coverage run, and a rebuild when a report appears."""
    global may_run
    may_run = False
    folder = str(collect.reports_dir())
    if folder not in config["watch"]:
        config["watch"].append(folder)


class SiteCoverage:
    """The coverage of this build's excerpts, by (page, file, start, end)."""

    def __init__(self, rows: dict | None, why_not: str = ""):
        self.rows = rows
        self.why_not = why_not

    @classmethod
    def for_build(cls, log=None) -> "SiteCoverage":
        if settings.value(ENV) == "off":
            return cls(None, f"not measured in this build ({ENV}=off)")
        if not collect.available():
            return cls(None)
        try:
            report = collect.current(collect=may_run, log=log)
        except collect.CoverageUnavailable as exc:
            # `pip install -e '.[site]' && mkdocs serve` (the README's first line) has no test
            # runner. The site is still built (mkdocs.yml is strict, so a warning would stop
            # it): the log says why once, and every excerpt says it was not measured.
            _log.info("line coverage of the excerpts is not shown: %s", exc)
            return cls(None, "not measured in this build (the test dependencies are not installed)")
        if report is None:
            return cls(None, SERVE_NOTE)
        return cls({(r.page, r.file, r.start, r.end): r for r in all_excerpts(report)})

    def note(self, page: str, file: str, start: int, end: int, href_to_docs: str) -> str:
        """Markdown to put after the excerpt's source link (same paragraph)."""
        href = href_to_docs + SECTION
        if self.rows is None and not self.why_not:
            return ""
        if self.rows is None:
            return f" · [line coverage {self.why_not}]({href}){{ .excerpt-coverage }}"
        r = self.rows.get((page, file, start, end))
        if r is None:  # the excerpt is in no lock entry: the excerpt check has failed the build already
            raise KeyError(f"docs/{page}: {file}:{start}-{end} is not in the excerpt lock")
        unexecuted = sorted({*r.missing, *r.exempt})  # an exempted line did not run either
        data = f' data-unexecuted="{" ".join(map(str, unexecuted))}"' if unexecuted else ""
        return f" · [{r.summary}]({href}){{ .excerpt-coverage{data} }}"


_memo: dict = {}


def _fingerprint() -> tuple:
    """A cheap stand-in for the inputs' key (the sizes and times of the files it hashes), so
    that each excerpt does not hash the sources again; any change to them gives a new one,
    as does a report saved meanwhile (the reports' folder changed)."""
    out = [str(paths.project_root()), settings.value(ENV), collect.reports_dir().stat().st_mtime_ns]
    for rel, f in collect.input_files():
        st = f.stat()
        out.append((rel, st.st_size, st.st_mtime_ns))
    return tuple(out)


def current() -> SiteCoverage:
    """The SiteCoverage of the sources as they are now, made once per state of them.
    (Telling that state walks every input file: a page asks once, for all its excerpts.)"""
    key = _fingerprint()
    if key not in _memo:
        _memo.clear()
        _memo[key] = SiteCoverage.for_build()
    return _memo[key]


def note_for(page: str, file: str, start: int, end: int, coverage: SiteCoverage | None = None) -> str:
    """The note of one excerpt of this build (`coverage`: :func:`current`'s, by default)."""
    return (coverage or current()).note(page, file, start, end, "../" * page.count("/"))


_NOTE = re.compile(r'<a\b[^>]*\bclass="excerpt-coverage"[^>]*>')
_CODE_END = "</code>"


def mark_unexecuted(page_html: str) -> str:
    """Give the line spans (pymdownx.highlight ``line_spans``) of unexecuted lines the
    class ``excerpt-unexecuted``, in the code block that follows each coverage note."""
    out, pos = [], 0
    for m in _NOTE.finditer(page_html):
        dm = re.search(r'data-unexecuted="([\d ]+)"', m.group(0))
        if not dm:
            continue
        lines = set(dm.group(1).split())
        start = page_html.find("<code", m.end())
        end = page_html.find(_CODE_END, start)
        if start < pos or end < 0:
            continue
        out.append(page_html[pos:start])
        block = page_html[start:end]
        found = set()

        def mark(sm):
            if sm.group(2) not in lines:
                return sm.group(0)
            found.add(sm.group(2))
            title = html.escape("never executed by the tests (on the emulator)")
            return f'<span id="__span-{sm.group(1)}-{sm.group(2)}" class="{UNEXECUTED_CLASS}" title="{title}">'
        out.append(re.sub(r'<span id="__span-(\d+)-(\d+)">', mark, block))
        if found != lines:
            raise ValueError(f"coverage marks: lines {sorted(lines - found, key=int)} not found in the code block "
                             "after their note (is pymdownx.highlight's line_spans still __span?)")
        pos = end
    out.append(page_html[pos:])
    return "".join(out)
