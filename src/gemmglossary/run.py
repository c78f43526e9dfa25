"""``gemmglossary run KERNEL.metal --name N ...``: try a GEMM kernel from the shell.

The kernel file is compiled as it is (with ``--define``s) on the active backend, fed
random float32 matrices, and its C is compared with numpy.  Buffers and dispatch come
from the table in :mod:`gemmglossary.kernels`, keyed by the kernel's function name, so an
edited copy of a first-party kernel runs the same way.

Exit status: 0 PASS; 1 FAIL or a diagnostic from the emulator / the GPU (printed);
2 bad input (missing file, unknown kernel, malformed option), one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from pathlib import Path

from .kernels import KERNELS, run_gemm


class BadInput(Exception):
    pass


def _readable(text: str) -> str:
    """Messages name files by absolute path; show them relative to where the user stands."""
    return text.replace(str(Path.cwd()) + os.sep, "")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise BadInput(message)


def _triple(text: str) -> tuple[int, int, int]:
    parts = [p for p in re.split(r"[,x ]", text.strip()) if p]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected x,y,z integers, got {text!r}") from None
    if not 1 <= len(values) <= 3 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected 1 to 3 positive integers, got {text!r}")
    return tuple(values + [1] * (3 - len(values)))


def _define(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_]\w*", key) or value == "":
        raise argparse.ArgumentTypeError(f"malformed --define {text!r}: expected NAME=VALUE")
    return key, value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gemmglossary run", description=__doc__.split("\n\n")[0])
    p.add_argument("kernel_file", help="path to a .metal file")
    p.add_argument("--name", required=True, help=f"kernel function: {', '.join(KERNELS)}")
    p.add_argument("--define", "-D", action="append", type=_define, default=[], metavar="NAME=VALUE",
                   help="preprocessor macro (repeatable), e.g. --define TM=2")
    p.add_argument("--M", type=_positive, help="rows of A and C (default 64)")
    p.add_argument("--N", type=_positive, help="columns of B and C (default 64)")
    p.add_argument("--K", type=_positive, help="reduction depth (default 64)")
    p.add_argument("--shape", type=_triple, help="M,N,K at once")
    grid = p.add_mutually_exclusive_group()
    grid.add_argument("--threads", type=_triple, help="dispatchThreads grid x,y,z (overrides the table)")
    grid.add_argument("--threadgroups", type=_triple, help="dispatchThreadgroups x,y,z (overrides the table)")
    p.add_argument("--tpg", type=_triple, help="threads per threadgroup x,y,z (overrides the table)")
    p.add_argument("--alpha", type=float, default=1.0, help="tiled_gemm only")
    p.add_argument("--beta", type=float, default=0.0, help="tiled_gemm only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", choices=["metal", "emulator"], help="default: automatic / $GEMMGLOSSARY_BACKEND")
    return p


def _declares_kernel(source: str, name: str) -> bool:
    return bool(re.search(r"\b" + re.escape(name) + r"\s*\(", source)
                or re.search(r'host_name\(\s*"' + re.escape(name) + r'"', source))


def _diagnostic_types():
    types = []
    try:
        from .emulator import EmulatorError

        types.append(EmulatorError)
    except Exception:
        pass
    try:
        from .metal.backend import MetalError

        types.append(MetalError)
    except Exception:
        pass
    return tuple(types)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        build_parser().print_help()
        return 0
    try:
        args = build_parser().parse_args(argv)
        path = Path(args.kernel_file)
        if not path.is_file():
            raise BadInput(f"no such file: {path}")
        source = path.read_text()
        if args.name not in KERNELS:
            raise BadInput(f"unknown kernel {args.name!r}: `run` knows how to bind {', '.join(KERNELS)}")
        if not _declares_kernel(source, args.name):
            raise BadInput(f"{path} has no kernel named {args.name!r}")
        if args.shape and any(v is not None for v in (args.M, args.N, args.K)):
            raise BadInput("give either --shape or --M/--N/--K, not both")
        M, N, K = args.shape or (args.M or 64, args.N or 64, args.K or 64)
        spec = KERNELS[args.name]
        if not spec.alpha_beta and (args.alpha != 1.0 or args.beta != 0.0):
            raise BadInput(f"--alpha/--beta apply to tiled_gemm only ({args.name} computes C = A*B)")
        defines = dict(args.define)
    except BadInput as exc:
        print(f"gemmglossary run: {exc}", file=sys.stderr)
        return 2

    from .runtime import BackendUnavailable, backend, load_kernel

    diagnostics = _diagnostic_types()
    try:
        chosen = backend(args.backend)
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
    except BackendUnavailable as exc:
        print(f"gemmglossary run: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        if diagnostics and isinstance(exc, diagnostics):
            print(_readable(str(exc)))
            return 1
        print(f"gemmglossary run: {exc}", file=sys.stderr)
        return 2
    except diagnostics as exc:  # noqa: B030 - a tuple of exception classes
        print(_readable(str(exc)))
        return 1

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
