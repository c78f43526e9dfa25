"""``gemmglossary excerpts check|update``."""

from __future__ import annotations

import argparse

from .check import check
from .lock import LockError
from .update import update


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="gemmglossary excerpts",
        description="Keep the kernel excerpts quoted by docs/ in step with the kernel files "
        "and excerpts.lock.json.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", help="report every drifted or invalid excerpt (exit 1 if any)")
    up = sub.add_parser(
        "update",
        help="re-anchor moved excerpts, add new ones to the lock, drop unused entries",
    )
    up.add_argument(
        "--accept-changes",
        action="store_true",
        help="also relock excerpts whose text changed (review those pages first)",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            report = check()
            for problem in report.problems:
                print(problem)
            if report.problems:
                print(f"{len(report.problems)} excerpt problem(s)")
                return 1
            print(report.summary())
            return 0
        result = update(accept_changes=args.accept_changes)
    except LockError as exc:
        print(f"gemmglossary excerpts: {exc}")
        return 1
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
    if not result.actions:
        print("nothing to update")
    print(report.summary())
    return 0
