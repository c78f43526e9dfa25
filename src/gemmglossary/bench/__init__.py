"""``gemmglossary bench``: ``bench emulator``, ``bench metal`` and ``bench suite``.

``bench emulator`` runs the first-party GEMM kernels on the CPU emulator at 128³, 256³
and 512³ and prints emulated GFLOP/s next to numpy's matmul time measured in the same
run (the ratio says how many times slower than numpy the emulation is), the same launches
with and without the device race check (what ``device_races=True`` costs), then MLX's decode
kernels, qmv (4-bit), llama.cpp's q4_0 mul_mv and gemv at 4096 × 4096, beside numpy's time for
the same product (:mod:`gemmglossary.bench.matvec`), how long each of llama.cpp's vendored
Metal files takes to compile whole into one library (:mod:`gemmglossary.bench.library_compile`),
and what starting a launch's workers costs, spawned or forked (:mod:`gemmglossary.bench.launch_start`).
It measures the emulator, not a GPU. ``bench metal`` is
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


def _square_operands(n: int):
    """A and B, n×n float32 in [-1, 1) from a seed of n (the same at each size), and C zeroed."""
    import numpy as np

    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    return a, b, np.zeros((n, n), np.float32)


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
            a, b, c = _square_operands(n)
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
          "includes starting its worker processes", file=out)
    return rows


def bench_device_races(sizes=SIZES, kernels=KERNELS, repeats: int = 3, out=sys.stdout) -> list:
    """What the device race check costs: each GEMM launched with and without
    ``device_races=True``, alternately, best of `repeats` each. With it the kernel runs an
    instrumented build (every memory access checked) in one worker process instead of up
    to two, so on two cores the ratio includes that factor."""
    import numpy as np

    rows = []
    print(f"\n{'kernel':<14}{'size':>6}{'without':>12}{'device_races':>14}{'ratio':>9}", file=out)
    for name in kernels:
        run = _launcher(name)
        for n in sizes:
            a, b, c = _square_operands(n)
            run(a, b, c, n, device_races=True)  # warm-up: compiles the instrumented build on first use
            ok = bool(np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3))
            best = {False: float("inf"), True: float("inf")}
            for _ in range(repeats):
                for checked in (False, True):
                    t = time.perf_counter()
                    run(a, b, c, n, device_races=checked)
                    best[checked] = min(best[checked], time.perf_counter() - t)
            ratio = best[True] / best[False]
            rows.append((name, n, best[False], best[True], ratio, ok))
            print(f"{name:<14}{n:>5}³{best[False] * 1e3:>10.1f}ms{best[True] * 1e3:>12.1f}ms{ratio:>8.1f}×"
                  + ("" if ok else "  WRONG RESULT"), file=out, flush=True)
    print("device_races=True checks every device access of the launch for races (docs/emulator.md); the "
          "check is off by default because it costs this much", file=out)
    return rows


def bench_matvec(names, repeats: int = 3, race_check: bool = True, out=sys.stdout) -> list:
    from . import matvec

    rows = matvec.bench(names, repeats, race_check)
    print(f"\n{'product':<26}{'kernel':<48}{'emulated':>11}{'numpy':>11}{'ratio':>9}", file=out)
    for label, kernel, t_emu, t_np, ok in rows:
        if t_emu is None:  # the emulator could not run it: t_np holds the reason
            print(f"{label:<26}{kernel:<48}  not run: {t_np}", file=out, flush=True)
            continue
        print(f"{label:<26}{kernel:<48}{t_emu * 1e3:>9.1f}ms{t_np * 1e3:>9.3f}ms{t_emu / t_np:>8.0f}×"
              + ("" if ok else "  WRONG RESULT"), file=out, flush=True)
    print("numpy computes the same product in float32 (the 4-bit rows: with the dequantized matrix)", file=out)
    return rows


def bench_library_compile(names, out=sys.stdout) -> list:
    from . import library_compile

    print(f"\n{'llama.cpp file':<16}{'kernels':>8}{'compile':>10}{'CPU':>9}", file=out)
    rows = []
    for name, kernels, wall, cpu in library_compile.measure(names):
        ok = cpu < library_compile.TARGET_SECONDS
        rows.append((name, kernels, wall, cpu, ok))
        print(f"{name + '.metal':<16}{kernels:>8}{wall:>9.1f}s{cpu:>8.1f}s"
              + ("" if ok else f"  above the {library_compile.TARGET_SECONDS:.0f} s target"), file=out, flush=True)
    print("each file compiled whole into one library (load_library), in an empty cache; CPU: the seconds of "
          "the rewriter and the compiler, which the machine's load does not stretch", file=out)
    return rows


def bench_launch_start(out=sys.stdout) -> list:
    from . import launch_start

    rows = launch_start.measure()
    print(f"\n{'workers':<9}{'caller holds':>14}{'CPU a launch':>14}{'wall':>10}{'vs spawned':>12}", file=out)
    spawned = {held: caller + workers for method, held, caller, workers, _ in rows if method == "spawn"}
    for method, held, caller, workers, wall in rows:
        cpu = caller + workers
        print(f"{method:<9}{'+' + str(held) + ' MB':>14}{cpu * 1e3:>12.1f}ms{wall * 1e3:>8.1f}ms"
              f"{cpu / spawned[held]:>11.1f}×", file=out, flush=True)
    print("one launch of a 256-thread kernel on 2 workers, its CPU (the caller's and the workers'), from a fresh "
          "process holding that much more memory; spawn is the default (emulator/workers.py)", file=out)
    return [(*row, True) for row in rows]


def register(subparsers) -> None:
    from ..cli import subparser
    from ..run import positive
    from . import metal, serve, suite

    p = subparser(subparsers, "bench", help="benchmarks: `bench emulator`, `bench metal`, `bench suite`",
                  description="bench emulator: the first-party kernels on the CPU emulator, next to numpy's\n"
                              "matmul (it measures the emulator, not a GPU). bench metal: TFLOPS on an\n"
                              "Apple GPU, next to mx.matmul. bench suite: the test suite's wall time and\n"
                              "CPU from a clean clone, against its target.")
    sub = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    e = subparser(sub, "emulator", help="first-party kernels on the CPU emulator vs numpy's matmul")
    e.add_argument("--sizes", default=",".join(map(str, SIZES)), type=emulator_sizes,
                   help="comma-separated square sizes (at most 2048, the emulator's limit of `run`)")
    e.add_argument("--kernels", default=",".join(KERNELS), type=_kernels, help="comma-separated kernel names")
    e.add_argument("--matvec", default=",".join(_matvec_names()), type=_products,
                   help="comma-separated decode products (qmv, llama_q4_0, gemv); empty for none")
    e.add_argument("--libraries", default=",".join(_library_names()), type=_libraries,
                   help="comma-separated llama.cpp kernel files to compile whole (their compile time); empty for none")
    e.add_argument("--repeats", type=positive, default=3, help="timed runs of each size (default 3)")
    e.add_argument("--no-race-check", action="store_true", help="skip the threadgroup-memory race check")
    e.add_argument("--no-device-races", action="store_true",
                   help="skip the table of what device_races=True (the device-memory race check) costs")
    e.add_argument("--no-launch-start", action="store_true",
                   help="skip the table of what starting a launch's workers costs (spawned or forked)")
    e.epilog = ("bad input (a size above the limits of `gemmglossary run`, a --repeats below 1, an unknown\n"
                "kernel or product) is one line on stderr, exit 2, before anything runs")
    e.set_defaults(func=_run_emulator)
    metal.register(sub)
    suite.register(sub)
    serve.register(sub)


def emulator_sizes(text: str) -> list[int]:
    from .sizes import square_sizes

    return square_sizes(text, "emulator")


def _names(what: str, known, *, empty_ok: bool):
    """An argparse type for a comma-separated list of names out of ``known()`` (read when
    the option is parsed, so --help imports nothing heavy): an unknown name, or an empty
    list where `empty_ok` is false, is one line naming the known ones."""

    def parse(text: str) -> list[str]:
        table = known()
        names = [k for k in text.split(",") if k]
        unknown = [k for k in names if k not in table]
        if unknown or not (names or empty_ok):
            raise argparse.ArgumentTypeError(f"unknown {what}(s) {', '.join(unknown) or repr(text)}; "
                                             f"known: {', '.join(table)}")
        return names

    return parse


def _kernel_names() -> tuple[str, ...]:
    from ..kernels import KERNELS

    return tuple(KERNELS)


def _matvec_names() -> tuple[str, ...]:
    from .matvec import PRODUCTS

    return PRODUCTS


def _library_names() -> tuple[str, ...]:
    from .library_compile import FILES

    return FILES


_kernels = _names("kernel", _kernel_names, empty_ok=False)
_products = _names("product", _matvec_names, empty_ok=True)
_libraries = _names("llama.cpp file", _library_names, empty_ok=True)


def _run_emulator(a) -> int:
    rows = bench_emulator(a.sizes, a.kernels, a.repeats, not a.no_race_check)
    if not a.no_device_races:
        rows += bench_device_races(a.sizes, a.kernels, a.repeats)
    if a.matvec:
        rows += bench_matvec(a.matvec, a.repeats, not a.no_race_check)
    if a.libraries:
        rows += bench_library_compile(a.libraries)
    if not a.no_launch_start:
        rows += bench_launch_start()
    return 0 if all(r[-1] for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary bench ARGV...``."""
    from ..cli import run_command

    return run_command("bench", argv)


if __name__ == "__main__":
    raise SystemExit(main())
