"""``gemmglossary bench``: ``bench emulator``, ``bench metal`` and ``bench suite``.

``bench emulator`` runs the first-party GEMM kernels on the CPU emulator at 128³, 256³
and 512³ and prints emulated GFLOP/s next to numpy's matmul time measured in the same
run (the ratio says how many times slower than numpy the emulation is), then MLX's decode
kernels, qmv (4-bit) and gemv at 4096 × 4096, beside numpy's time for the same product
(:mod:`gemmglossary.bench.matvec`). It measures the emulator, not a GPU. ``bench metal`` is
delegated to :mod:`gemmglossary.bench.metal`, and ``bench suite`` (the test suite's time from
a clean clone) to :mod:`gemmglossary.bench.suite`.
"""

from __future__ import annotations

import argparse
import sys
import time

SIZES = (128, 256, 512)
KERNELS = ("tiled_gemm", "matmul_simd")


def _numpy_time(a, b, calls: int = 20) -> float:
    a @ b
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        a @ b
        ts.append(time.perf_counter() - t)
    return min(ts)


def _launcher(name: str):
    """Run kernel ``name`` on an n x n x n problem, bound and dispatched as its table row says."""
    from ..emulator import load_kernel
    from ..kernels import KERNELS

    spec = KERNELS[name]
    k = load_kernel(spec.path, name)

    def run(a, b, c, n, **kw):
        d = spec.dispatch(n, n, n)
        k(*spec.arguments(a, b, c), threadgroups=d.threadgroups,
          threads_per_threadgroup=d.threads_per_threadgroup, **kw)
    return run


def bench_emulator(sizes=SIZES, kernels=KERNELS, repeats: int = 3, race_check: bool = True, out=sys.stdout) -> list:
    """Best-of-`repeats` times, the emulator and numpy measured alternately so that a burst
    of load on the machine hits both. numpy's BLAS threads keep spinning for a while after
    a matmul, so each emulator launch waits a little after the numpy calls."""
    import numpy as np

    measured = []
    np_best: dict[int, float] = {}
    for name in kernels:
        run = _launcher(name)
        for n in sizes:
            rng = np.random.default_rng(n)
            a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            c = np.zeros((n, n), np.float32)
            run(a, b, c, n, race_check=race_check)  # warm-up (compiles on first use)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            ok = bool(np.allclose(c, ref, rtol=1e-3, atol=1e-3))
            t_emu = float("inf")
            for _ in range(repeats):
                np_best[n] = min(np_best.get(n, float("inf")), _numpy_time(a, b))
                time.sleep(0.2)
                t = time.perf_counter()
                run(a, b, c, n, race_check=race_check)
                t_emu = min(t_emu, time.perf_counter() - t)
            measured.append((name, n, t_emu, ok))
    rows = []
    print(f"{'kernel':<14}{'size':>6}{'emulated':>12}{'GFLOP/s':>10}{'numpy':>12}{'ratio':>9}", file=out)
    for name, n, t_emu, ok in measured:
        t_np = np_best[n]
        gflops = 2 * n ** 3 / t_emu / 1e9
        rows.append((name, n, t_emu, gflops, t_np, t_emu / t_np, ok))
        print(f"{name:<14}{n:>5}³{t_emu * 1e3:>10.1f}ms{gflops:>10.3f}{t_np * 1e3:>10.3f}ms{t_emu / t_np:>8.0f}×"
              + ("" if ok else "  WRONG RESULT"), file=out, flush=True)
    print("times are the best of the runs (numpy: over all runs of that size); an emulated launch "
          "includes forking its worker processes", file=out)
    return rows


def bench_matvec(names, repeats: int = 3, race_check: bool = True, out=sys.stdout) -> list:
    from . import matvec

    rows = matvec.bench(names, repeats, race_check)
    print(f"\n{'product':<22}{'MLX kernel':<48}{'emulated':>11}{'numpy':>11}{'ratio':>9}", file=out)
    for label, kernel, t_emu, t_np, ok in rows:
        if t_emu is None:  # the emulator could not run it: t_np holds the reason
            print(f"{label:<22}{kernel:<48}  not run: {t_np}", file=out, flush=True)
            continue
        print(f"{label:<22}{kernel:<48}{t_emu * 1e3:>9.1f}ms{t_np * 1e3:>9.3f}ms{t_emu / t_np:>8.0f}×"
              + ("" if ok else "  WRONG RESULT"), file=out, flush=True)
    print("numpy computes the same product in float32 (qmv: with the dequantized matrix)", file=out)
    return rows


def register(subparsers) -> None:
    from ..cli import subparser
    from . import metal, suite

    p = subparser(subparsers, "bench", help="benchmarks: `bench emulator`, `bench metal`, `bench suite`",
                  description="bench emulator: the first-party kernels on the CPU emulator, next to numpy's\n"
                              "matmul (it measures the emulator, not a GPU). bench metal: TFLOPS on an\n"
                              "Apple GPU, next to mx.matmul. bench suite: the test suite's wall time and\n"
                              "CPU from a clean clone, against its target.")
    sub = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    e = subparser(sub, "emulator", help="first-party kernels on the CPU emulator vs numpy's matmul")
    e.add_argument("--sizes", default=",".join(map(str, SIZES)), type=_sizes, help="comma-separated square sizes")
    e.add_argument("--kernels", default=",".join(KERNELS), type=_kernels, help="comma-separated kernel names")
    e.add_argument("--matvec", default=",".join(_matvec_names()), type=_products,
                   help="comma-separated decode products (qmv, gemv); empty for none")
    e.add_argument("--repeats", type=int, default=3)
    e.add_argument("--no-race-check", action="store_true", help="skip the threadgroup-memory race check")
    e.set_defaults(func=_run_emulator)
    metal.register(sub)
    suite.register(sub)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive sizes, got {text!r}")
    return sizes


def _kernels(text: str) -> list[str]:
    from ..kernels import KERNELS as TABLE

    names = [k for k in text.split(",") if k]
    unknown = [k for k in names if k not in TABLE]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown kernel(s) {', '.join(unknown) or repr(text)}; "
                                         f"known: {', '.join(TABLE)}")
    return names


def _matvec_names() -> tuple[str, ...]:
    from .matvec import PRODUCTS

    return PRODUCTS


def _products(text: str) -> list[str]:
    names = [k for k in text.split(",") if k]
    unknown = [k for k in names if k not in _matvec_names()]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown product(s) {', '.join(unknown)}; known: {', '.join(_matvec_names())}")
    return names


def _run_emulator(a) -> int:
    rows = bench_emulator(a.sizes, a.kernels, a.repeats, not a.no_race_check)
    if a.matvec:
        rows += bench_matvec(a.matvec, a.repeats, not a.no_race_check)
    return 0 if all(r[-1] for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary bench ARGV...``."""
    from ..cli import run_command

    return run_command("bench", argv)


if __name__ == "__main__":
    raise SystemExit(main())
