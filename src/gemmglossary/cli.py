"""The ``gemmglossary`` command: one argparse tree for every subcommand.

Each command lives in the module that does the work, which adds its own subparser with
``register(subparsers)`` and sets ``func`` (called with the parsed arguments); this file
only assembles the tree, so adding a command never touches another command's code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import sys

from .optional import MissingDependency
from .settings import SettingError

#: The modules that register a command, in the order ``--help`` lists them.
COMMAND_MODULES = (
    "gemmglossary.vendor",
    "gemmglossary.excerpts.cli",
    "gemmglossary.run",
    "gemmglossary.bench",
    "gemmglossary.exercises.cli",
    "gemmglossary.docs_hooks.zensical_site",
    "gemmglossary.coverage.cli",
)

EXIT_STATUS = """\
exit status:
  0  success
  1  the command ran and found a problem (a drifted excerpt, a kernel that fails its
     check or reports a diagnostic, a vendored file that differs from its pin)
  2  bad input (unknown command, malformed option, missing or unreadable file, an
     environment variable it does not accept): one line on stderr, naming the file and
     line or the argument and what was expected, never a traceback; nothing is written
   130  interrupted (Ctrl-C); 141  the reader of the output went away (`| head`): quietly
"""


class UsageError(Exception):
    """Bad command-line input; the message is printed on one line and the exit status is 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the command (no usage dump)."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message}")


def subparser(subparsers, name: str, **kwargs) -> Parser:
    """``subparsers.add_parser`` with the tree's conventions (help text kept as written)."""
    kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    if "help" in kwargs and "description" not in kwargs:
        kwargs["description"] = kwargs["help"]
    return subparsers.add_parser(name, **kwargs)


def build_parser() -> Parser:
    parser = Parser(
        prog="gemmglossary",
        description="Tooling of the Metal GEMM Glossary: the upstream sources it quotes, the\n"
                    "excerpt lock of its pages, and running its kernels.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


_NEGATIVE = re.compile(r"^-\d")


def _join_negative_values(argv: list[str]) -> list[str]:
    """``--shape -1,64,64`` -> ``--shape=-1,64,64``: argparse would take ``-1,64,64`` for
    an option and say "expected one argument" instead of what is wrong with the value."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE.match(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _run(argv)
        sys.stdout.flush()  # here, so that a closed pipe is seen while it can still be handled
        return status
    except BrokenPipeError:
        return _reader_left()
    except KeyboardInterrupt:
        print("gemmglossary: interrupted", file=sys.stderr)
        return 130


def _run(argv: list[str]) -> int:
    try:
        parser = build_parser()
        if not argv:
            parser.print_help(sys.stderr)
            return 2
        try:
            args = parser.parse_args(_join_negative_values(argv))
        except SystemExit as exc:  # --help and --version print and "exit"
            return int(exc.code or 0)
        try:
            return int(args.func(args) or 0)
        except MissingDependency as exc:  # a site command on an install without the site: one line
            print(f"gemmglossary {args.command}: {exc}", file=sys.stderr)
            return 2
    except UsageError as exc:  # the user's input: one line, never a traceback
        print(exc, file=sys.stderr)
        return 2
    except SettingError as exc:
        print(f"gemmglossary: {exc}", file=sys.stderr)
        return 2


def _reader_left() -> int:
    """The reader of our output went away (``| head -1``): stop quietly, as a command killed
    by SIGPIPE does (status 141), with nothing left to flush into the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


def run_command(name: str, argv: list[str] | None) -> int:
    """``gemmglossary NAME ARGV...``: what each command module's ``main(argv)`` calls."""
    return main([*name.split(), *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
