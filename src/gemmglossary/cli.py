"""The ``gemmglossary`` command.

Each subcommand lives in the module that does the work and parses its own
arguments; this file only routes, so adding a command never touches another
command's code.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "vendor": ("gemmglossary.vendor", "copy the pinned MLX steel headers into kernels/vendor/"),
    "excerpts": ("gemmglossary.excerpts.cli", "check or update the excerpt lock"),
    "run": ("gemmglossary.run", "run a kernel file with random inputs"),
    "bench": ("gemmglossary.bench", "benchmarks: `bench emulator`, `bench metal`"),
}


def _usage() -> str:
    lines = ["usage: gemmglossary COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"}:
        print(_usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"gemmglossary: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
