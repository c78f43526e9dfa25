"""``gemmglossary coverage``: the line coverage of every excerpt, and the lines missing."""

from __future__ import annotations

import sys

from ..cli import run_command, subparser
from . import collect, gcov
from .excerpts import all_excerpts
from .exemptions import ExemptionError


def register(subparsers) -> None:
    p = subparser(subparsers, "coverage", help="line coverage of the excerpts on the emulator (exit 1 if a line never ran)",
                  description="Print, for every excerpt the pages quote, how many of its executable lines\n"
                  "the coverage run executed, then every line that never ran. Reads the report of\n"
                  "the current sources, making it first (a coverage run: several minutes) if\n"
                  "there is none.")
    p.add_argument("--no-run", action="store_true",
                   help="only read an existing report; exit 1 if the current sources have none, or if "
                        "it is damaged (named; a plain `coverage` makes it again)")
    p.set_defaults(func=_coverage)


def table(rows) -> list[str]:
    """The table's lines: page, excerpt, executed/executable."""
    head = ("page", "excerpt", "executed")
    body = [(r.page, f"{r.file}:{r.start}-{r.end}", _executed(r)) for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(3)]
    fmt = lambda x: "  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip()  # noqa: E731
    return [fmt(head), fmt(tuple("-" * w for w in widths)), *map(fmt, body)]


def _executed(r) -> str:
    if r.executable == 0 and not r.exempt and (r.no_code or r.unmeasured):
        return "no code" if r.no_code else "not measured"  # listed in coverage-exemptions.toml
    return f"{len(r.executed)}/{r.executable}" + (f" (+{len(r.exempt)} exempt)" if r.exempt else "")


def missing_lines(rows) -> list[str]:
    return [f"{r.page}: {r.file}:{n}: never executed" for r in rows for n in r.missing]


def _coverage(args) -> int:
    try:
        report = collect.current(collect=not args.no_run, log=lambda m: print(m, file=sys.stderr))
    except (collect.CoverageRunError, gcov.GcovError) as exc:
        print(f"gemmglossary coverage: {exc}")
        return 1
    if report is None:
        print("gemmglossary coverage: no coverage report for the current sources (run without --no-run)")
        return 1
    try:
        rows = all_excerpts(report)
    except ExemptionError as exc:
        print(f"gemmglossary coverage: {exc}")
        return 1
    print("\n".join(table(rows)))
    missing = missing_lines(rows)
    executed = sum(len(r.executed) for r in rows)
    total = sum(r.executable for r in rows)
    print(f"\n{executed} of {total} executable lines in {len(rows)} excerpts executed "
          f"(coverage run of {str(report.get('commit') or '')[:12] or 'an unknown commit'}"
          f"{' + local changes' if report.get('dirty') else ''}, {report.get('seconds', '?')} s: "
          f"{report.get('pytest', '?')})")
    if missing:
        print("\n".join(["", *missing]))
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command("coverage", argv)
