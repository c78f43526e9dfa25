# %% [markdown]
# # Barriers
#
# The K loop of a tiled matmul needs two `threadgroup_barrier`s: one so that no thread
# reads a tile before every thread has written its share (read after write), one so
# that no thread overwrites a tile for the next step while others still read the current
# one (write after read). This snippet runs `kernels/matmul_tiled.metal` against numpy,
# then removes each barrier in turn and lets the padding threads return early, and
# prints what the emulator's checks report for each.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/barriers.py
# ```
#
# Download this snippet: [barriers.py](barriers.py).
#
# On a Mac the correct kernel runs on the GPU, where a missing barrier shows up, if at
# all, only as wrong numbers; the "Break it" cells use the CPU emulator, which tracks
# every threadgroup word's last writer and barrier epoch, so a race is reported by name
# and line whatever order the threads run in.

# %%
import numpy as np

import gemmglossary as gg
from gemmglossary import emulator
from gemmglossary.kernels import KERNELS
from gemmglossary.snippets import diagnostic, kernel_path, kernel_source, printed_warnings, replace_once

rng = np.random.default_rng(3)
M, N, K = 33, 20, 48  # three 16-deep K steps: the second barrier matters
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)
# The dispatch of the kernel's header comment: 16x16 threads per threadgroup, one
# threadgroup per 16x16 tile of C (gemmglossary.kernels reads TILE from the file).
d = KERNELS["matmul_tiled"].dispatch(M, N, K)
launch = dict(threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
scalars = (M, N, K)  # bound to `constant uint&` M, N, K with the kernel's own type
TILE = KERNELS["matmul_tiled"].constants()["TILE"]

C = np.zeros((M, N), np.float32)
gg.load_kernel(kernel_path("matmul_tiled.metal"), "matmul_tiled")(A, B, C, *scalars, **launch)
# float32 sums of 48 products.
np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-5)
print(f"matmul_tiled with both barriers, {M}x{N}x{K}: matches numpy (rtol=1e-5, atol=1e-5)")

# %% [markdown]
# ## The two barriers of the kernel
#
# The variants below are made from the kernel file at run time. Each edit stays on the
# barrier's own line, so the line numbers in the emulator's messages are those of
# `kernels/matmul_tiled.metal`.

# %%
source = kernel_source("matmul_tiled.metal")
lines = source.splitlines(keepends=True)
BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup);"
at = [i for i, line in enumerate(lines) if BARRIER in line]
assert len(at) == 2, f"matmul_tiled.metal should have two barriers, found {len(at)}"
for n, i in enumerate(at, 1):
    print(f"barrier {n}: matmul_tiled.metal:{i + 1}: {lines[i].strip()}")


def edit_line(i, new_text):
    """The kernel with the barrier on line i+1 replaced, all other lines untouched."""
    edited = list(lines)
    edited[i] = lines[i].replace(BARRIER, new_text)
    return "".join(edited)


def run_broken(src, expected):
    C = np.zeros((M, N), np.float32)
    try:
        emulator.load_kernel(src, "matmul_tiled")(A, B, C, *scalars, **launch)
    except expected as err:
        print(diagnostic(err, "kernels/matmul_tiled.metal"))
    else:
        raise AssertionError(f"the emulator should have raised {expected.__name__}")


# %% [markdown]
# ## Break it: remove barrier 1 (read after write)
#
# Threads start the dot-product loop while others are still writing the tile.

# %%
run_broken(edit_line(at[0], "/* barrier 1 removed */"), emulator.DataRaceError)

# %% [markdown]
# ## Break it: remove barrier 2 (write after read)
#
# A fast thread moves on to the next K step and overwrites the tile that slower threads
# are still reading. The result can even come out right on a given run; the emulator
# reports the race anyway.

# %%
run_broken(edit_line(at[1], "/* barrier 2 removed */"), emulator.DataRaceError)

# %% [markdown]
# ## What the races do to C
#
# On a GPU there is no race check: the kernel just runs. The emulator can do the same
# (`race_check=False`) under different thread schedules. Each missing barrier then
# returns a wrong C, wrong by an amount that depends on the order the threads ran in: the
# symptom changes from run to run, while the diagnostic above names the two lines.

# %%
print(f"{'variant':20s} {'schedule':18s} {'wrong elements':>15s} {'max |error|':>12s}")
for n, i in enumerate(at, 1):
    racy = emulator.load_kernel(edit_line(i, f"/* barrier {n} removed */"), "matmul_tiled")
    for schedule in ["lockstep", "simdgroup-major", ("random", 1), ("random", 2)]:
        C_racy = np.zeros((M, N), np.float32)
        racy(A, B, C_racy, *scalars, **launch, schedule=schedule, race_check=False)
        wrong = ~np.isclose(C_racy, A @ B, rtol=1e-5, atol=1e-5)
        print(f"{f'barrier {n} removed':20s} {str(schedule):18s} "
              f"{f'{wrong.sum()} / {wrong.size}':>15s} {np.abs(C_racy - A @ B).max():12.2f}")

# %% [markdown]
# ## Break it: padding threads return early
#
# A classic "optimisation": threads whose element of C lies outside the matrix return at
# once. But they were needed for the cooperative load and at both barriers. What a GPU
# does at a barrier that returned threads never reach is not documented; whether or not
# it waits, their tile elements are never written, and the bottom and right tiles come
# out wrong. The emulator lets such a barrier release for the threads still running,
# computes that wrong answer and warns twice: threads skipped a barrier by returning
# (which the Metal specification does not promise to allow), and threads read tile
# elements that no thread wrote.

# %%
early = replace_once(source, "    float acc = 0.0f;\n",
                     "    if (row >= M || col >= N) return;  // the early exit\n    float acc = 0.0f;\n")
C_early = np.zeros((M, N), np.float32)
with printed_warnings("kernels/matmul_tiled.metal"):
    emulator.load_kernel(early, "matmul_tiled")(A, B, C_early, *scalars, **launch)
wrong = ~np.isclose(C_early, A @ B, rtol=1e-5, atol=1e-5)
bad_tiles = sorted({(int(c) // TILE, int(r) // TILE) for r, c in zip(*np.nonzero(wrong))})
edge_tiles = sorted({(gx, gy) for gx in range(d.threadgroups[0]) for gy in range(d.threadgroups[1])
                     if (gx + 1) * TILE > N or (gy + 1) * TILE > M})
print(f"{wrong.sum()} of {wrong.size} elements of C are wrong, in threadgroups (x, y) {bad_tiles}; "
      f"the threadgroups that hang over an edge of C are {edge_tiles}")
assert wrong.any()
