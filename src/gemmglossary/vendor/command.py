"""``gemmglossary vendor``: materialize the pinned files, restoring any that differ."""

from __future__ import annotations

from ..cli import run_command, subparser
from ..paths import vendor_dir
from .distfiles import downloads_dir
from .manifest import VendorError, load_pins
from .materialize import restore, status


def register(subparsers) -> None:
    p = subparser(subparsers, "vendor", help="materialize the pinned MLX and llama.cpp files into kernels/vendor/",
                  description="Materialize the upstream files pinned in kernels/vendor.toml (MLX's Metal\n"
                  "headers from the mlx-cpu wheel, llama.cpp's Metal sources from the llama-cpp-python\n"
                  "sdist) into kernels/vendor/ (git-ignored). Each distribution file is downloaded once\n"
                  "with pip into the cache (~/.cache/gemmglossary/vendor/, GEMMGLOSSARY_CACHE_DIR)\n"
                  "and checked by sha256, as is every file taken from it. A copy that differs from\n"
                  "its pin is restored, and the edited copy kept under .cache/vendor-edits/. Builds\n"
                  "and tests materialize missing files by themselves but never overwrite an edited\n"
                  "one.")
    p.add_argument("--check", action="store_true", help="only report (exit 1 on any problem); write nothing")
    p.set_defaults(func=_run)


def _run(args) -> int:
    try:
        pins = load_pins()
        if args.check:
            problems = status(pins)
            for problem in problems:
                print(problem)
            print("vendored files match the pins" if not problems else f"{len(problems)} problem(s)")
            return 1 if problems else 0
        for line in restore(pins):
            print(line)
    except VendorError as exc:
        print(f"gemmglossary vendor: {exc}")
        return 1
    for source in pins.sources:
        print(f"{len(source.files)} {source.label} files in {vendor_dir() / source.vendor_root} "
              f"(from {downloads_dir() / source.archive})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary vendor ARGV...``."""
    return run_command("vendor", argv)
