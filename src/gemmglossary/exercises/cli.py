"""``gemmglossary exercise list|start|show|check``.

Exit status of ``check``: 0 the kernel passes every case; 1 it does not (the report says
why, with a hint); 2 bad input (unknown exercise, missing file, unusable backend), one
line on stderr. ``register`` adds the command to the ``gemmglossary`` tree.
"""

from __future__ import annotations

import re
import sys
import warnings

from . import hints, spec, workspace
from .checker import CheckError, check

EPILOG = """\
exit status of check: 0 solved; 1 a problem (the report says which); 2 bad input: an
unknown exercise, a file that is missing, a folder, empty or not UTF-8, an exercises
folder ($GEMMGLOSSARY_EXERCISES_DIR) that is a file, a status.json of the wrong shape
(kept as it is: delete it to forget what was checked): one line on stderr.
A check's outcome is recorded in status.json, except (said after the report, the exit
status unchanged) for a file inside the repository, a failing check of another file than
the one that solved the exercise, and a folder that cannot be written.
"""

STATES = {"solved": "solved", "failing": "failing", "changed": "changed", "unchecked": "started", "not started": "-"}


def register(subparsers) -> None:
    """Add ``exercise`` to the ``gemmglossary`` command tree (see :mod:`gemmglossary.cli`)."""
    from ..cli import subparser

    p = subparser(subparsers, "exercise", help="exercises: write the kernel yourself, checked against numpy",
                  epilog=EPILOG)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = subparser(sub, "list", help="every exercise, in order, and which you solved")
    ls.add_argument("--check", action="store_true", help="re-check every started exercise first")
    st = subparser(sub, "start", help="copy an exercise's skeleton into your exercises folder")
    st.add_argument("name")
    st.add_argument("--body", action="store_true", help="the mx.fast.metal_kernel form (a body only)")
    st.add_argument("--force", action="store_true", help="overwrite your copy with the skeleton")
    sh = subparser(sub, "show", help="print the statement and hints")
    sh.add_argument("name")
    ck = subparser(sub, "check", help="run your kernel against numpy and explain what is wrong")
    ck.add_argument("name")
    ck.add_argument("file", nargs="?", help=f"kernel or body to check (default: your copy in "
                                            f"${workspace.ENV_VAR} or ~/gemmglossary-exercises)")
    ck.add_argument("--backend", choices=["metal", "emulator"], help="default: automatic / $GEMMGLOSSARY_BACKEND")
    p.set_defaults(func=_run)


def statement_text(exercise: spec.Exercise) -> str:
    """The statement for a terminal: admonitions become labelled paragraphs, links their text,
    the exercise's place in the sequence its value."""
    out = []
    for line in spec.with_places(exercise.statement()).splitlines():
        m = re.match(r'^(\?\?\?\+?|!!!)\s+\w+\s+"([^"]*)"\s*$', line)
        if m:
            out.append(f"{m.group(2)}:")
        elif line.startswith("    "):
            out.append("  " + line[4:])
        else:
            out.append(line)
    text = "\n".join(out).strip() + "\n"
    return re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)  # links: their text only


def _check_one(exercise, path, backend) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        report = check(exercise, path, backend_name=backend)
    print(report.text())
    _record(exercise, path, report)
    return 0 if report.passed else 1


def _record(exercise, path, report) -> None:
    """Record a check's outcome, or say why it was not: a pass that cannot be recorded is
    still a pass (exit 0), said, never a traceback after "Solved."."""
    try:
        workspace.record(exercise, path, report.passed, report.backend)
    except workspace.WorkspaceError as exc:
        print(f"(not recorded: {exc})")


def _run(args) -> int:
    try:
        return run(args)
    except (CheckError, spec.SpecError, workspace.WorkspaceError) as exc:
        print(f"gemmglossary exercise: {exc}", file=sys.stderr)
        return 2


def run(args) -> int:
    if args.action == "list":
        rows = []
        for e in spec.all_exercises():
            if args.check:
                mine = workspace.learner_file(e)
                if mine is not None:
                    _record(e, mine, check(e, mine))
            s = workspace.status(e)
            rows.append((e.name, STATES[s.state], e.title, ", ".join(e.entries)))
        width = max(len(r[0]) for r in rows)
        print(f"{'exercise':<{width}}  {'status':<8}  title")
        for name, state, title, _entries in rows:
            print(f"{name:<{width}}  {state:<8}  {title}")
        print(f"\nYour copies and results: {workspace.folder()}. Start one with "
              "`gemmglossary exercise start NAME`.")
        return 0
    exercise = spec.find(args.name)
    if args.action == "show":
        print(f"Exercise {exercise.name}: {exercise.title}\n")
        print(statement_text(exercise), end="")
        print(f"\nStart: gemmglossary exercise start {exercise.name}"
              + ("   (or --body for the mx.fast.metal_kernel form)" if exercise.body else ""))
        print(f"Check: gemmglossary exercise check {exercise.name}")
        return 0
    if args.action == "start":
        target = workspace.start(exercise, body=args.body, force=args.force)
        print(f"Copied {hints.shown(exercise.body.skeleton if args.body else exercise.skeleton)} to {target}")
        print(f"Read the statement:  gemmglossary exercise show {exercise.name}")
        print(f"Check your kernel:   gemmglossary exercise check {exercise.name}")
        return 0
    path = args.file
    if path is None:
        path = workspace.learner_file(exercise)
        if path is None:
            raise CheckError(f"you have no copy of {exercise.name} yet: run `gemmglossary exercise start "
                             f"{exercise.name}`, or give the file to check")
    return _check_one(exercise, path, args.backend)


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary exercise ARGV...``."""
    from ..cli import run_command

    return run_command("exercise", argv)


if __name__ == "__main__":
    raise SystemExit(main())
