# %% [markdown]
# # max_total_threads_per_threadgroup
#
# `kernels/tiled_gemm.metal` declares `[[kernel, max_total_threads_per_threadgroup(WM * WN * 32)]]`:
# a promise to the compiler that no threadgroup will hold more threads than its tiles are
# written for. This snippet reads the bound out of the kernel, runs the kernel with
# exactly that many threads (default build and a `-D` build with twice the simdgroups),
# checks both against numpy, and then breaks the promise in both directions.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/max_total_threads.py
# ```
#
# Download this snippet: [max_total_threads.py](max_total_threads.py).
#
# On a Mac the kernels run on the GPU; elsewhere on the CPU emulator. The "Break it"
# cells always use the emulator, which checks every dispatch against the kernel's bound.

# %%
import numpy as np

import gemmglossary as gg
from gemmglossary import emulator
from gemmglossary.kernels import KERNELS
from gemmglossary.snippets import diagnostic, kernel_path, printed_warnings

TILED_GEMM = KERNELS["tiled_gemm"]  # what kernels/tiled_gemm.metal declares, read from the file
bound = TILED_GEMM.signature().attribute("max_total_threads_per_threadgroup")
print(f"tiled_gemm.metal declares max_total_threads_per_threadgroup({bound})")

rng = np.random.default_rng(5)
M, N, K = 72, 80, 20
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)
params = TILED_GEMM.params(M, N, K)


def constants(overrides=None):
    """A build's tile, its bound (the attribute's own expression) and its grid."""
    c = TILED_GEMM.constants(overrides)
    return dict(BM=c["BM"], BN=c["BN"], THREADS=TILED_GEMM.max_total_threads(overrides),
                threadgroups=TILED_GEMM.dispatch(M, N, K, overrides).threadgroups)


def run(kernel, c, threads):
    C = np.zeros((M, N), np.float32)
    kernel(A, B, C, params, threadgroups=c["threadgroups"], threads_per_threadgroup=(threads, 1, 1))
    return C


# %% [markdown]
# ## The bound follows the constants
#
# The default build is 2×2 simdgroups (128 threads). With `-D WM=4 -D WN=4 -D TM=2 -D TN=2`
# the threadgroup tile stays 64×64 but is split among 16 simdgroups, and the same
# attribute expression becomes 512.

# %%
builds = {}
for label, overrides in [("default", None), ("-D WM=4 WN=4 TM=2 TN=2", dict(WM=4, WN=4, TM=2, TN=2))]:
    c = constants(overrides)
    kernel = gg.load_kernel(kernel_path("tiled_gemm.metal"), "tiled_gemm", defines=overrides)
    C = run(kernel, c, c["THREADS"])
    # float32 sums of 20 products.
    np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-5)
    builds[label] = c
    print(f"{label:24s}: tile {c['BM']}x{c['BN']}, max_total_threads_per_threadgroup = "
          f"{c['THREADS']}; run with {c['THREADS']} threads: matches numpy (rtol=1e-5, atol=1e-5)")

# %% [markdown]
# ## Break it: more threads than the kernel allows
#
# Launch the default build (bound 128) with 256 threads per threadgroup. On a GPU the
# pipeline refuses it (with API validation) or the dispatch is silently dropped; the
# emulator refuses it with a launch error.

# %%
c = builds["default"]
emulated = emulator.load_kernel(kernel_path("tiled_gemm.metal"), "tiled_gemm")
# The emulator reads the attribute like the Metal compiler does (the pipeline's limit).
print(f"compiled kernel: maxTotalThreadsPerThreadgroup = {emulated.max_total_threads_per_threadgroup}")
assert emulated.max_total_threads_per_threadgroup == c["THREADS"]
try:
    run(emulated, c, 2 * c["THREADS"])
except emulator.LaunchError as err:
    print(diagnostic(err))
else:
    raise AssertionError("the emulator should refuse a threadgroup above the kernel's bound")

# %% [markdown]
# ## Break it the other way: fewer threads
#
# Fewer threads than the bound is a legal dispatch, so nothing stops it, but every
# cooperative loop of the kernel strides by `THREADS`, and the simdgroups that would own
# half of each tile do not exist. With half the threads, half of each staged tile is
# never loaded and half of C's tile is never stored. C starts as NaN here, so "never
# written" can be told apart from "written wrong".

# %%
def run_nan(kernel, c, threads):
    C = np.full((M, N), np.nan, np.float32)  # beta = 0: the kernel never reads C
    kernel(A, B, C, params, threadgroups=c["threadgroups"], threads_per_threadgroup=(threads, 1, 1))
    return C


try:
    with printed_warnings():  # e.g. a read of tile memory nobody wrote
        C_half = run_nan(emulated, c, c["THREADS"] // 2)
except emulator.EmulatorError as err:
    print(diagnostic(err))
else:
    unwritten = np.isnan(C_half)
    wrong = ~unwritten & ~np.isclose(C_half, A @ B, rtol=1e-5, atol=1e-5)
    print(f"{c['THREADS'] // 2} threads: the launch completes, but of {C_half.size} elements of C "
          f"{unwritten.sum()} were never written and {wrong.sum()} were written wrong; "
          f"{C_half.size - unwritten.sum() - wrong.sum()} are right")
    assert unwritten.any() or wrong.any()
