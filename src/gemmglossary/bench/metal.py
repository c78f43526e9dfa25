"""``gemmglossary bench metal``: TFLOPS of the first-party GEMM kernels vs ``mx.matmul``.

On an Apple GPU: square float32 problems at 1024, 2048 and 4096; each kernel is
checked against numpy once per size, then timed as the median GPU time
(``GPUEndTime - GPUStartTime``) of a few dispatches after a warm-up; ``mx.matmul``
is timed with wall clock around ``mx.eval`` (it has no per-dispatch GPU timer in
Python), which slightly favours our kernels.  Results are printed as a table and
drawn to a PNG (matplotlib).

Anywhere else it says it cannot measure GPU speed here and exits 0: the emulator's
speed says nothing about a GPU's.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from ..optional import require

SIZES = (1024, 2048, 4096)


def _time_mlx(n: int, repeats: int) -> float:
    mx = require("mlx.core", "gemmglossary bench metal (MLX's matmul, timed)")

    a = mx.random.uniform(-1, 1, (n, n), dtype=mx.float32)
    b = mx.random.uniform(-1, 1, (n, n), dtype=mx.float32)
    mx.eval(a, b)
    mx.eval(mx.matmul(a, b))  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        mx.eval(mx.matmul(a, b))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _time_kernel(spec, n: int, repeats: int) -> tuple[float, bool]:
    from ..runtime import load_kernel
    from ..kernels import run_gemm

    kernel = load_kernel(str(spec.path), spec.name, backend_name="metal")
    first = run_gemm(kernel, spec, n, n, n)  # correctness and warm-up
    times = [run_gemm(kernel, spec, n, n, n, check=False).gpu_time for i in range(repeats)]
    return statistics.median(times), first.passed


def plot(results: dict[str, dict[int, float]], out: Path) -> None:
    matplotlib = require("matplotlib", "gemmglossary bench metal's plot")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, by_size in results.items():
        sizes = sorted(by_size)
        ax.plot(sizes, [by_size[s] for s in sizes], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(SIZES), [f"{s}²" for s in SIZES])
    ax.set_xlabel("square GEMM size (float32)")
    ax.set_ylabel("TFLOPS")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=150)
    plt.close(fig)


def register(subparsers) -> None:
    from ..cli import subparser
    from ..run import positive
    from .sizes import square_sizes

    p = subparser(subparsers, "metal", help="TFLOPS of the first-party kernels vs mx.matmul (Apple GPU)",
                  description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="bench-metal.png", help="PNG plot path (default bench-metal.png)")
    p.add_argument("--repeats", type=positive, default=5, help="timed dispatches of each size (default 5)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), type=square_sizes,
                   help="comma-separated square sizes (each within the limits of `run`)")
    p.set_defaults(func=run)


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary bench metal ARGV...``."""
    from ..cli import run_command

    return run_command("bench metal", argv)


def run(args) -> int:
    from ..runtime.selection import metal_status

    ok, reason = metal_status()
    if not ok:
        print(f"bench metal: cannot measure GPU speed here: {reason}.")
        print("Run it on an Apple Silicon Mac (`gemmglossary bench metal`); the emulator's speed says nothing about a GPU's.")
        return 0

    mx = require("mlx.core", "gemmglossary bench metal (MLX's matmul, timed)")

    from ..kernels import KERNELS

    if not mx.metal.is_available():
        print("bench metal: mlx reports no Metal device (mx.metal.is_available() is False)", file=sys.stderr)
        return 1
    sizes = args.sizes
    results: dict[str, dict[int, float]] = {"mx.matmul": {}}
    print(f"{'kernel':<22}" + "".join(f"{n:>12}" for n in sizes) + "   (TFLOPS, float32)")
    for spec in KERNELS.values():
        row, results[spec.name] = [], {}
        for n in sizes:
            seconds, passed = _time_kernel(spec, n, args.repeats)
            tflops = 2 * n ** 3 / seconds / 1e12
            results[spec.name][n] = tflops
            row.append(f"{tflops:>11.2f}" + (" " if passed else "!"))
        print(f"{spec.name:<22}" + "".join(row))
    row = []
    for n in sizes:
        tflops = 2 * n ** 3 / _time_mlx(n, args.repeats) / 1e12
        results["mx.matmul"][n] = tflops
        row.append(f"{tflops:>11.2f} ")
    print(f"{'mx.matmul':<22}" + "".join(row))
    print("(! = result did not match numpy)")
    plot(results, Path(args.out))
    print(f"plot: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
