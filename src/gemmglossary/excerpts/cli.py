"""``gemmglossary excerpts check|update``.

Both first materialize the pinned MLX files (as the site build and the tests do), so a
fresh clone checks its MLX excerpts instead of reporting them missing.
"""

from __future__ import annotations

import sys

from .. import vendor
from ..cli import run_command, subparser
from .check import check
from .lock import LockError
from .update import update


def register(subparsers) -> None:
    p = subparser(subparsers, "excerpts", help="check or update the excerpt lock (excerpts.lock.json)",
                  description="Keep the kernel excerpts quoted by docs/ in step with the kernel files\n"
                  "and excerpts.lock.json.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = subparser(sub, "check", help="report every drifted or invalid excerpt (exit 1 if any)")
    c.set_defaults(func=_check)
    u = subparser(sub, "update", help="re-anchor moved excerpts, add new ones to the lock, drop unused "
                  "entries (exit 1 if problems remain)")
    u.add_argument("--accept-changes", action="store_true",
                   help="also relock excerpts whose text changed (review those pages first)")
    u.set_defaults(func=_update)


def _prepare() -> bool:
    """Materialize missing MLX files, if the project pins any; False when it cannot."""
    if not vendor.manifest_path().exists():
        return True  # nothing pinned: a quoted kernels/vendor/ file is reported missing by the check
    try:
        vendor.ensure()
    except vendor.VendorError as exc:
        print(f"gemmglossary excerpts: the MLX files the pages quote: {exc}")
        return False
    return True


def _check(args) -> int:
    if not _prepare():
        return 1
    try:
        report = check()
    except LockError as exc:
        print(f"gemmglossary excerpts: {exc}")
        return 1
    for problem in report.problems:
        print(problem)
    if report.problems:
        print(f"{len(report.problems)} excerpt problem(s)")
        return 1
    print(report.summary())
    return 0


def _update(args) -> int:
    if not _prepare():
        return 1
    try:
        result = update(accept_changes=args.accept_changes)
    except LockError as exc:
        print(f"gemmglossary excerpts: {exc}")
        return 1
    except KeyboardInterrupt:
        # The pages and the lock are written together or not at all (see .transaction).
        print("gemmglossary excerpts: interrupted; the pages and the lock are consistent "
              "(an interrupted write is finished by the next `excerpts update`)", file=sys.stderr)
        return 130
    for action in result.actions:
        print(action)
    for refusal in result.refused:
        print(refusal)
    report = result.report
    remaining = report.problems if report else []
    for problem in remaining:
        print(problem)
    if remaining:
        print(f"{len(remaining)} excerpt problem(s) remain")
        return 1
    if result.refused:
        return 1
    if not result.actions:
        print("nothing to update")
    print(report.summary())
    return 0


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary excerpts ARGV...``."""
    return run_command("excerpts", argv)
