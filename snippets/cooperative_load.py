# %% [markdown]
# # Cooperative load
#
# All threads of a threadgroup copy a tile of A and a tile of B into threadgroup memory
# together, then every simdgroup computes from the whole tile. This snippet runs the
# cooperative loads of two first-party kernels, checks the products against numpy, asks
# the kernels themselves **which thread loads which tile element**, and then removes the
# edge guard of a load to show the diagnostic you get.
#
# - `kernels/matmul_tiled.metal`: 16×16 threads, one element of each tile per thread.
# - `kernels/tiled_gemm.metal`: 128 threads copy a 64×16 tile of A and a 16×64 tile of B
#   in `float4` quads, in two passes.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/cooperative_load.py
# ```
#
# Download this snippet: [cooperative_load.py](cooperative_load.py).
#
# On a Mac the kernels run on the GPU; elsewhere on the CPU emulator. The "Break it"
# cells always use the emulator, since its checks are what report the bug.

# %%
import numpy as np
from matplotlib.figure import Figure

import gemmglossary as gg
from gemmglossary import emulator
from gemmglossary.kernels import KERNELS
from gemmglossary.snippets import diagnostic, kernel_path, kernel_source, replace_once, show_figure

rng = np.random.default_rng(0)
M, N, K = 45, 38, 37  # no multiple of 16: every edge has a partial tile
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)

# %% [markdown]
# ## The load at work: matmul_tiled
#
# Thread `(x, y)` of a 16×16 threadgroup copies `A[row][k0 + x]` into `tileA[y][x]` and
# `B[k0 + y][col]` into `tileB[y][x]`, writing 0 outside the matrix. The grid is padded to
# whole threadgroups, so every tile position has a thread to fill it.

# %%
matmul_tiled = gg.load_kernel(kernel_path("matmul_tiled.metal"), "matmul_tiled")
tiled = KERNELS["matmul_tiled"].dispatch(M, N, K)  # 16x16 threads, one threadgroup per tile
C = np.zeros((M, N), np.float32)
matmul_tiled(A, B, C, M, N, K,
             threadgroups=tiled.threadgroups, threads_per_threadgroup=tiled.threads_per_threadgroup)

# float32 dot products of 37 terms: agreement to a few ulps of the largest terms.
np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-5)
print(f"matmul_tiled {M}x{N}x{K}: matches numpy (rtol=1e-5, atol=1e-5), "
      f"max |error| = {np.abs(C - A @ B).max():.2e}")

# %% [markdown]
# ## Who loads what
#
# To see the mapping, we run each kernel with its load replaced by "store my thread
# index" and copy both tiles out to device memory right after the first barrier. The
# variants are made from the kernel files at run time, with string replacements that
# fail loudly if the kernel changes shape.

# %%
tiled_src = kernel_source("matmul_tiled.metal")
probe = replace_once(tiled_src, "(row < M && a_col < K) ? A[row * K + a_col] : 0.0f",
                     "float(lid.y * TILE + lid.x)")
probe = replace_once(probe, "(b_row < K && col < N) ? B[b_row * N + col] : 0.0f",
                     "float(lid.y * TILE + lid.x)")
probe = replace_once(
    probe, "        for (uint k = 0; k < TILE; ++k) {",
    "        C[lid.y * TILE + lid.x] = tileA[lid.y][lid.x];              // dump tileA\n"
    "        C[TILE * TILE + lid.y * TILE + lid.x] = tileB[lid.y][lid.x]; // dump tileB\n"
    "        return;\n"
    "        for (uint k = 0; k < TILE; ++k) {")
dump = np.full(2 * 16 * 16, -1, np.float32)
gg.load_kernel(probe, "matmul_tiled")(
    A, B, dump, 16, 16, 16, threadgroups=(1, 1, 1), threads_per_threadgroup=tiled.threads_per_threadgroup)
tiled_tileA = dump[:256].reshape(16, 16).astype(int)
print("matmul_tiled tileA[y][x] was written by thread index y*16 + x:",
      np.array_equal(tiled_tileA, np.arange(256).reshape(16, 16)))

# %%
gemm = KERNELS["tiled_gemm"]
gemm_src = gemm.source()
c = gemm.constants()  # the kernel's constants, read from the file: BM, BN, BK, THREADS, ...
BM, BN, BK, THREADS = c["BM"], c["BN"], c["BK"], c["THREADS"]

probe = replace_once(gemm_src, "load4(A, p.lda, p.M, p.K, row0 + r, k0 + k)", "float4(float(tid))")
probe = replace_once(probe, "load4(B, p.ldb, p.K, p.N, k0 + k, col0 + c)", "float4(float(tid))")
probe = replace_once(
    probe, "threadgroup_barrier(mem_flags::mem_threadgroup);  // tiles fully written",
    "threadgroup_barrier(mem_flags::mem_threadgroup);  // tiles fully written\n"
    "        for (uint e = tid; e < BM * BK; e += THREADS) { C[e] = tileA[e]; }\n"
    "        for (uint e = tid; e < BK * BN; e += THREADS) { C[BM * BK + e] = tileB[e]; }\n"
    "        return;")
params = gemm.params(BM, BN, BK)  # struct GemmParams, laid out as the kernel declares it
zeros_a = np.zeros((BM, BK), np.float32)
zeros_b = np.zeros((BK, BN), np.float32)
dump = np.full(BM * BK + BK * BN, -1, np.float32)
gg.load_kernel(probe, "tiled_gemm")(zeros_a, zeros_b, dump, params,
                                    threadgroups=(1, 1, 1), threads_per_threadgroup=(THREADS, 1, 1))
gemm_tileA = dump[:BM * BK].reshape(BM, BK).astype(int)
gemm_tileB = dump[BM * BK:].reshape(BK, BN).astype(int)
assert gemm_tileA.min() >= 0 and gemm_tileB.min() >= 0, "every tile element was written"

for t in (0, 1, THREADS - 1):
    rows, cols = np.nonzero(gemm_tileA == t)
    spans = sorted({(r, cols[rows == r].min(), cols[rows == r].max()) for r in rows})
    print(f"tiled_gemm thread {t:3d} writes tileA " +
          ", ".join(f"[{r}][{lo}..{hi}]" for r, lo, hi in spans))

# %%
fig = Figure(figsize=(12, 7), layout="constrained")
axes = fig.subplots(1, 3, width_ratios=[1, 1, 2.6])
panels = [  # (axes, tile, elements per load, title)
    (axes[0], tiled_tileA, 1, "matmul_tiled: tileA (16×16)\n256 threads, 1 element each"),
    (axes[1], gemm_tileA, 4, f"tiled_gemm: tileA ({BM}×{BK})\n{THREADS} threads, float4 quads, "
                             f"{BM * BK // 4 // THREADS} passes"),
    (axes[2], gemm_tileB, 4, f"tiled_gemm: tileB ({BK}×{BN})\nsame threads, "
                             f"{BK * BN // 4 // THREADS} passes"),
]
for ax, tile, width, title in panels:
    im = ax.imshow(tile, cmap="viridis", vmin=0, vmax=255, interpolation="nearest")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    rows, cols = tile.shape
    for x in range(0, cols + 1, width):  # outline what one thread moves at once
        ax.axvline(x - 0.5, color="white", lw=0.3)
    for r in range(1, rows):  # a new pass starts where thread 0 appears again
        if tile[r, 0] == 0:
            ax.axhline(r - 0.5, color="red", lw=2)
            ax.text(cols - 0.5, r - 0.5, " next pass", color="red", fontsize=8, va="center",
                    ha="left", clip_on=False)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.yaxis.get_major_locator().set_params(integer=True)
    for r in range(rows):
        for col in range(0, cols, width):
            t = tile[r, col]
            ax.text(col + (width - 1) / 2, r, str(t), ha="center", va="center",
                    fontsize=3.5, color="white" if t < 160 else "black")
fig.colorbar(im, ax=axes, shrink=0.5, label="thread_index_in_threadgroup")
fig.suptitle("Cooperative load: which thread writes each threadgroup-tile element "
             "(read back from the kernels)")
show_figure(fig, "Three heat maps of the thread index that wrote each tile element. "
                 "matmul_tiled: thread y*16+x fills element (y, x). "
                 f"tiled_gemm tileA {BM} by {BK} and tileB {BK} by {BN}: consecutive threads fill "
                 "consecutive float4 quads along each row, and the thread numbers wrap around "
                 f"after {THREADS} quads for the next pass.")

# %% [markdown]
# ## Break it: drop the edge guard of the load
#
# The guard `(row < M && a_col < K) ? A[...] : 0.0f` does two jobs: it keeps threads of
# the last tiles from reading past A, and it writes the zeros that make a partial tile
# harmless. Without it, the padding threads of the bottom tiles read beyond the end of A.

# %%
broken = replace_once(tiled_src, "(row < M && a_col < K) ? A[row * K + a_col] : 0.0f",
                      "A[row * K + a_col]")
C_broken = np.zeros((M, N), np.float32)
try:
    emulator.load_kernel(broken, "matmul_tiled")(
        A, B, C_broken, M, N, K,
        threadgroups=tiled.threadgroups, threads_per_threadgroup=tiled.threads_per_threadgroup)
except emulator.OutOfBoundsError as err:
    print(diagnostic(err, "kernels/matmul_tiled.metal"))
else:
    raise AssertionError("the emulator should have reported the read past the end of A")
