"""``gemmglossary bench``: ``bench emulator`` and ``bench metal``.

``bench emulator`` runs the first-party GEMM kernels on the CPU emulator at 128³, 256³
and 512³ and prints emulated GFLOP/s next to numpy's matmul time measured in the same
run (the ratio says how many times slower than numpy the emulation is). It measures the
emulator, not a GPU. ``bench metal`` is delegated to :mod:`gemmglossary.bench.metal`.
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
    import numpy as np

    from ..emulator import load_kernel
    from ..paths import kernels_dir

    k = load_kernel(kernels_dir() / f"{name}.metal", name)
    if name == "tiled_gemm":
        gp = np.dtype([("M", "<u4"), ("N", "<u4"), ("K", "<u4"), ("lda", "<u4"), ("ldb", "<u4"), ("ldc", "<u4"),
                       ("alpha", "<f4"), ("beta", "<f4")])

        def run(a, b, c, n, **kw):
            p = np.array((n, n, n, n, n, n, 1.0, 0.0), dtype=gp)
            k(a, b, c, p, threadgroups=((n + 63) // 64, (n + 63) // 64, 1), threads_per_threadgroup=(128, 1, 1), **kw)
    else:
        def run(a, b, c, n, **kw):
            k(a, b, c, n, n, n, threadgroups=((n + 31) // 32, (n + 31) // 32, 1), threads_per_threadgroup=(128, 1, 1),
              **kw)
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: gemmglossary bench emulator [--sizes 128,256,512] [--repeats N] [--no-race-check]\n"
              "       gemmglossary bench metal [...]")
        return 0 if argv else 2
    what, rest = argv[0], argv[1:]
    if what == "metal":
        try:
            from . import metal as bench_metal
        except ImportError:
            print("cannot measure GPU speed here: no Apple GPU")
            return 0
        return int(bench_metal.main(rest) or 0)
    if what != "emulator":
        print(f"gemmglossary bench: unknown benchmark {what!r} (emulator, metal)", file=sys.stderr)
        return 2
    p = argparse.ArgumentParser(prog="gemmglossary bench emulator")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-race-check", action="store_true", help="skip the threadgroup-memory race check")
    a = p.parse_args(rest)
    rows = bench_emulator([int(s) for s in a.sizes.split(",")], a.kernels.split(","), a.repeats, not a.no_race_check)
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
