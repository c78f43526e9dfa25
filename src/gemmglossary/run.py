"""``gemmglossary run KERNEL.metal --name N ...``: try a GEMM kernel from the shell.

The kernel file is compiled as it is (with ``--define``s) on the active backend, fed
random float32 matrices, and its C is compared with numpy.  Buffers and dispatch come
from the table in :mod:`gemmglossary.kernels`, keyed by the kernel's function name, so an
edited copy of a first-party kernel runs the same way.

Exit status: 0 PASS; 1 FAIL or a diagnostic from the emulator / the GPU (printed);
2 bad input (missing file, unknown kernel, malformed option, a shape above the limits),
one line on stderr.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import warnings
from pathlib import Path

from .cli import run_command, subparser
from .emulator import EmulatorError
from .emulator.launch_checks import UINT32_MAX
from .kernels import KERNELS, run_gemm
from .metal.backend import MetalError
from .msl.signature import find_kernel
from .msl.tokens import SourceError

#: Largest matrix accepted, in elements (256 MiB of float32 each for A, B and C).
MAX_ELEMENTS = 2 ** 26
#: Largest M*N*K accepted on the emulator (2048^3, seconds to a minute at its 1-3 GFLOP/s).
EMULATOR_MAX_WORK = 2 ** 33

LIMITS = (f"limits: A, B and C of at most {MAX_ELEMENTS:,} elements each (256 MiB of float32);\n"
          f"on the emulator M*N*K of at most 2^33 = {EMULATOR_MAX_WORK:,} (2048^3)")


EXIT_STATUS = """\
exit status: 0 PASS; 1 FAIL or a diagnostic of the kernel (printed); 2 bad input, one line
on stderr and nothing run: a missing or non-UTF-8 file, an unknown kernel name, a malformed
option or one out of range (a shape above the limits, a size above UINT32_MAX, a seed
below 0, a NaN or infinite --alpha/--beta), a GEMMGLOSSARY_* variable it does not accept"""


class BadInput(Exception):
    pass


def _readable(text: str) -> str:
    """Messages name files by absolute path; show them relative to where the user stands."""
    return text.replace(str(Path.cwd()) + os.sep, "")


def _ints(text: str) -> list[int]:
    parts = [p for p in re.split(r"[,x ]", text.strip()) if p]
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected x,y,z integers, got {text!r}") from None


def _triple(text: str) -> tuple[int, int, int]:
    """A grid or threadgroup size: 1 to 3 positive integers up to UINT32_MAX, missing ones are 1."""
    values = _ints(text)
    if not 1 <= len(values) <= 3 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected 1 to 3 positive integers, got {text!r}")
    if max(values) > UINT32_MAX:
        raise argparse.ArgumentTypeError(f"{max(values)} is above UINT32_MAX ({UINT32_MAX}), the largest size a "
                                         "kernel's 32-bit grid attributes can express")
    return tuple(values + [1] * (3 - len(values)))


def _shape(text: str) -> tuple[int, int, int]:
    """M,N,K: exactly three positive integers (no dimension is implied)."""
    values = _ints(text)
    if len(values) != 3 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected M,N,K (three positive integers), got {text!r}")
    return tuple(values)


def _define(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_]\w*", key) or value == "":
        raise argparse.ArgumentTypeError(f"malformed --define {text!r}: expected NAME=VALUE")
    return key, value


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def seed(text: str) -> int:
    """What numpy's random generator takes as a seed: an integer >= 0."""
    if not re.fullmatch(r"\+?\d+", text.strip()):
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return int(text)


def finite(text: str) -> float:
    """A finite number: NaN or an infinity as alpha or beta can only make the check FAIL."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def register(subparsers) -> None:
    p = subparser(subparsers, "run", help="run a kernel file with random inputs, checked against numpy",
                  description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                  epilog=LIMITS + "\n\n" + EXIT_STATUS)
    p.add_argument("kernel_file", help="path to a .metal file")
    p.add_argument("--name", required=True, help=f"kernel function: {', '.join(KERNELS)}")
    p.add_argument("--define", "-D", action="append", type=_define, default=[], metavar="NAME=VALUE",
                   help="preprocessor macro (repeatable), e.g. --define TM=2")
    p.add_argument("--M", type=positive, help="rows of A and C (default 64)")
    p.add_argument("--N", type=positive, help="columns of B and C (default 64)")
    p.add_argument("--K", type=positive, help="reduction depth (default 64)")
    p.add_argument("--shape", type=_shape, metavar="M,N,K", help="M, N and K at once")
    grid = p.add_mutually_exclusive_group()
    grid.add_argument("--threads", type=_triple, metavar="X,Y,Z",
                      help="dispatchThreads grid (overrides the table)")
    grid.add_argument("--threadgroups", type=_triple, metavar="X,Y,Z",
                      help="dispatchThreadgroups grid (overrides the table)")
    p.add_argument("--tpg", type=_triple, metavar="X,Y,Z", help="threads per threadgroup (overrides the table)")
    p.add_argument("--alpha", type=finite, default=1.0, help="C = alpha*A*B + beta*C (tiled_gemm only)")
    p.add_argument("--beta", type=finite, default=0.0, help="tiled_gemm only")
    p.add_argument("--seed", type=seed, default=0, help="of the random inputs (default 0)")
    p.add_argument("--backend", choices=["metal", "emulator"], help="default: automatic / $GEMMGLOSSARY_BACKEND")
    p.set_defaults(func=_run)


def check_shape(M: int, N: int, K: int, backend: str | None = None) -> None:
    """BadInput for a shape above the limits (:data:`LIMITS`), on ``backend`` when it is the
    emulator; what ``run`` and ``bench`` check before allocating anything."""
    for name, rows, cols in (("A", M, K), ("B", K, N), ("C", M, N)):
        if rows * cols > MAX_ELEMENTS:
            raise BadInput(f"M={M} N={N} K={K}: {name} would have {rows * cols:,} elements, above the "
                           f"limit of {MAX_ELEMENTS:,} (256 MiB of float32)")
    if backend == "emulator" and M * N * K > EMULATOR_MAX_WORK:
        raise BadInput(f"M={M} N={N} K={K}: M*N*K = {M * N * K:,} is above the emulator's limit of "
                       f"{EMULATOR_MAX_WORK:,} (2048^3); use a smaller shape, or the metal backend on a Mac")


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary run ARGV...``."""
    return run_command("run", argv)


def _inputs(args) -> tuple[Path, tuple[int, int, int], dict]:
    """Check what can be checked before compiling: (kernel file, shape, defines)."""
    path = Path(args.kernel_file)
    if not path.is_file():
        raise BadInput(f"{path} is a folder, not a kernel file" if path.is_dir() else f"no such file: {path}")
    if args.name not in KERNELS:
        raise BadInput(f"unknown kernel {args.name!r}: `run` knows how to bind {', '.join(KERNELS)}")
    try:
        declared = find_kernel(path.read_text(encoding="utf-8"), args.name, str(path))
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except SourceError as exc:
        raise BadInput(_readable(str(exc))) from None
    if declared is None:
        raise BadInput(f"{path} has no kernel named {args.name!r}")
    if args.shape and any(v is not None for v in (args.M, args.N, args.K)):
        raise BadInput("give either --shape or --M/--N/--K, not both")
    shape = args.shape or (args.M or 64, args.N or 64, args.K or 64)
    check_shape(*shape)
    try:
        KERNELS[args.name].dispatch(*shape, dict(args.define))
    except KeyError as exc:  # e.g. -DTM=two: the table cannot size the dispatch
        raise BadInput(exc.args[0]) from None
    if not KERNELS[args.name].alpha_beta and (args.alpha != 1.0 or args.beta != 0.0):
        raise BadInput(f"--alpha/--beta apply to tiled_gemm only ({args.name} computes C = A*B)")
    return path, shape, dict(args.define)


def _run(args) -> int:
    from .runtime import BackendUnavailable, backend, load_kernel

    try:
        path, (M, N, K), defines = _inputs(args)
        chosen = backend(args.backend)
        check_shape(M, N, K, chosen)
    except (BadInput, BackendUnavailable) as exc:
        print(f"gemmglossary run: {exc}", file=sys.stderr)
        return 2
    spec = KERNELS[args.name]
    try:
        # Warnings (e.g. the emulator's PortabilityWarning) are part of what a reader came
        # to see: print them as lines of the report, not in Python's warning format.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel = load_kernel(str(path), args.name, defines=defines or None, backend_name=chosen)
            run = run_gemm(kernel, spec, M, N, K, defines=defines, seed=args.seed, alpha=args.alpha,
                           beta=args.beta, threads=args.threads, threadgroups=args.threadgroups,
                           threads_per_threadgroup=args.tpg)
        for w in caught:
            print(_readable(f"{w.category.__name__}: {w.message}"))
    except (EmulatorError, MetalError) as exc:  # what the kernel did: the report
        print(_readable(str(exc)))
        return 1
    except (ValueError, KeyError) as exc:  # e.g. a -D value that is not a number
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"gemmglossary run: {_readable(str(message))}", file=sys.stderr)
        return 2

    d = run.dispatch
    grid = f"threads {tuple(args.threads)}" if args.threads else f"threadgroups {tuple(args.threadgroups or d.threadgroups)}"
    print(f"{args.name} on {chosen}: M={M} N={N} K={K}, {grid} x {tuple(args.tpg or d.threads_per_threadgroup)}"
          + (f", {' '.join(f'-D{k}={v}' for k, v in defines.items())}" if defines else ""))
    if run.gpu_time is not None and chosen == "metal":
        print(f"GPU time {run.gpu_time * 1e3:.3f} ms ({2 * M * N * K / run.gpu_time / 1e12:.3f} TFLOPS)")
    print(f"max |C - numpy| = {run.max_error:.3e} (tolerance {run.tolerance:.1e})")
    print("PASS" if run.passed else "FAIL")
    return 0 if run.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
