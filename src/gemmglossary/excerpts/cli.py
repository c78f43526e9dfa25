"""``gemmglossary excerpts check|update``.

Both first materialize the pinned upstream files (MLX, llama.cpp) (as the site build and the tests do), so a
fresh clone checks its MLX excerpts instead of reporting them missing.
"""

from __future__ import annotations

import sys

from .. import vendor
from ..cli import run_command, subparser
from .check import check
from ..paths import project_root
from .lock import CheckoutNotWritable, LockError
from .update import update


BAD_INPUT = """\
exit status: 0 every excerpt matches; 1 a problem (each printed with its page line, file and
range: drifted, missing or edited file, malformed block, damaged lock); 2 bad input, one line:
the root (GEMMGLOSSARY_ROOT) has no docs/ folder, or update cannot write in the checkout.
"""

UPDATE_KEEPS = """
update never drops the lock entry of an excerpt a page still quotes: while its file is
missing, edited or unreadable, or its block cannot be parsed, the entry is kept, and the
file's return with changed text is refused like any change (--accept-changes relocks it).
"""


def register(subparsers) -> None:
    p = subparser(subparsers, "excerpts", help="check or update the excerpt lock (excerpts.lock.json)",
                  description="Keep the kernel excerpts quoted by docs/ in step with the kernel files\n"
                  "and excerpts.lock.json.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = subparser(sub, "check", help="report every drifted or invalid excerpt (exit 1 if any)",
                  epilog=BAD_INPUT)
    c.set_defaults(func=_check)
    u = subparser(sub, "update", help="re-anchor moved excerpts, add new ones to the lock, drop unused "
                  "entries (exit 1 if problems remain)", epilog=BAD_INPUT + UPDATE_KEEPS)
    u.add_argument("--accept-changes", action="store_true",
                   help="also relock excerpts whose text changed (review those pages first)")
    u.set_defaults(func=_update)


class NotAProject(Exception):
    """The root has no docs/ folder: nothing to check, which must not read as "all match"."""


def _prepare() -> bool:
    """Materialize missing upstream files, if the project pins any; False when it cannot."""
    root = project_root()
    if not (root / "docs").is_dir():
        raise NotAProject(f"{root} has no docs/ folder, so it has no pages to check; is it a checkout of the "
                          "project (GEMMGLOSSARY_ROOT)?")
    if not vendor.manifest_path().exists():
        return True  # nothing pinned: a quoted kernels/vendor/ file is reported missing by the check
    try:
        vendor.ensure()
    except vendor.VendorError as exc:
        print(f"gemmglossary excerpts: the upstream files the pages quote: {exc}")
        return False
    return True


def _one_line(run):
    """The command's bad input (not a project; a checkout it cannot write) as one line, exit 2."""
    def command(args) -> int:
        try:
            return run(args)
        except (NotAProject, CheckoutNotWritable) as exc:
            print(f"gemmglossary excerpts: {exc}", file=sys.stderr)
            return 2
    return command


@_one_line
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


@_one_line
def _update(args) -> int:
    if not _prepare():
        return 1
    try:
        result = update(accept_changes=args.accept_changes)
    except CheckoutNotWritable:
        raise
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
