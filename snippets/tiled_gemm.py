# %% [markdown]
# # The tiled GEMM
#
# The companion of the case study: `kernels/tiled_gemm.metal` run end to end. This snippet
# computes `C = α·A·B + β·C` on awkward shapes and on a sub-block of larger matrices (row
# strides `lda`, `ldb`, `ldc`), checks it against numpy, draws the tile pyramid
# (threadgroup → simdgroup → 8×8 fragment) from the kernel's compile-time constants and
# from what the kernel itself writes, and then dispatches a grid counted in the wrong unit.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/tiled_gemm.py
# ```
#
# Download this snippet: [tiled_gemm.py](tiled_gemm.py).
#
# On a Mac the kernels run on the GPU; elsewhere on the CPU emulator. The "Break it"
# cell always uses the emulator.

# %%
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

import gemmglossary as gg
from gemmglossary import emulator
from gemmglossary.kernels import KERNELS, cdiv
from gemmglossary.snippets import (diagnostic, kernel_path, kernel_source, printed_warnings,
                                   replace_once, show_figure)

source = kernel_source("tiled_gemm.metal")
TILED_GEMM = KERNELS["tiled_gemm"]  # buffers, struct GemmParams and constants, read from the file
c = TILED_GEMM.constants()
WM, WN, TM, TN, BK = c["WM"], c["WN"], c["TM"], c["TN"], c["BK"]
SM, SN, BM, BN, THREADS = c["SM"], c["SN"], c["BM"], c["BN"], c["THREADS"]
print(f"pyramid: 8x8 fragments -> {SM}x{SN} per simdgroup ({TM}x{TN} fragments) -> "
      f"{BM}x{BN} per threadgroup ({WM}x{WN} simdgroups, {THREADS} threads), K step {BK}")
print(f"struct GemmParams as numpy lays it out: {TILED_GEMM.params_dtype.itemsize} bytes, "
      f"{TILED_GEMM.params_dtype}")
tiled_gemm = gg.load_kernel(kernel_path("tiled_gemm.metal"), "tiled_gemm")

# %% [markdown]
# ## α·A·B + β·C, checked against numpy
#
# Shapes that are not multiples of anything (partial tiles on all sides, a K that ends in
# a partial step), then a sub-block: A, B and C are views into larger row-major arrays,
# passed as the whole buffer plus a row stride, as BLAS does.

# %%
rng = np.random.default_rng(6)
for M, N, K, alpha, beta in [(1, 1, 1, 1.0, 0.0), (67, 130, 19, 1.5, 0.25), (129, 65, 40, -1.0, 1.0)]:
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C0 = rng.standard_normal((M, N), dtype=np.float32)
    C = C0.copy()
    params = TILED_GEMM.params(M, N, K, alpha=alpha, beta=beta)
    d = TILED_GEMM.dispatch(M, N, K)  # (ceil(N/BN), ceil(M/BM), 1) x (THREADS, 1, 1)
    tiled_gemm(A, B, C, params, threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
    # float32 dot products of up to 40 terms plus the epilogue's two operations.
    np.testing.assert_allclose(C, alpha * (A @ B) + beta * C0, rtol=1e-5, atol=1e-5)
    print(f"M={M:3d} N={N:3d} K={K:2d} alpha={alpha:5} beta={beta:5}: "
          f"{d.threadgroups[0]}x{d.threadgroups[1]} threadgroups, matches numpy (rtol=1e-5, atol=1e-5)")

# A 50x30 block of C = A[:, :20] @ B[:20, :] inside larger arrays, via lda/ldb/ldc.
bigA = rng.standard_normal((50, 33), dtype=np.float32)   # lda = 33, K = 20
bigB = rng.standard_normal((20, 45), dtype=np.float32)   # ldb = 45, N = 30
bigC = rng.standard_normal((50, 41), dtype=np.float32)   # ldc = 41
C0 = bigC.copy()
params = TILED_GEMM.params(50, 30, 20, lda=33, ldb=45, ldc=41, alpha=2.0, beta=-1.0)
d = TILED_GEMM.dispatch(50, 30, 20)
tiled_gemm(bigA, bigB, bigC, params, threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
np.testing.assert_allclose(bigC[:, :30], 2.0 * bigA[:, :20] @ bigB[:, :30] - C0[:, :30],
                           rtol=1e-5, atol=1e-5)
np.testing.assert_array_equal(bigC[:, 30:], C0[:, 30:])  # outside the block: untouched
print("sub-block with lda=33, ldb=45, ldc=41: matches numpy, columns past N untouched")

# %% [markdown]
# ## The pyramid, as the kernel lays it out
#
# To see who computes what, we run the kernel with its accumulators initialised to a
# label instead of zero, `100·sgid + (i·TN + j)` for fragment `acc[i][j]` of simdgroup
# `sgid`, and with A = B = 0 so that the label is what the epilogue stores.

# %%
labelled = replace_once(source, "acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);",
                        "acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>("
                        "float(sgid * 100 + i * TN + j));")
Mv, Nv, Kv = 2 * BM + 16, 2 * BN + 40, 8  # a C with partial tiles, to show the grid too
params = TILED_GEMM.params(Mv, Nv, Kv)
d = TILED_GEMM.dispatch(Mv, Nv, Kv)
label = np.full((Mv, Nv), -1, np.float32)
gg.load_kernel(labelled, "tiled_gemm")(
    np.zeros((Mv, Kv), np.float32), np.zeros((Kv, Nv), np.float32), label, params,
    threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
label = label.astype(int)
sg, frag = label // 100, label % 100
tile = (slice(0, BM), slice(0, BN))
assert sg[tile].max() == WM * WN - 1 and frag[tile].max() == TM * TN - 1

fig = Figure(figsize=(13, 4.6), layout="constrained")
ax_c, ax_tg, ax_sg = fig.subplots(1, 3, width_ratios=[Nv / Mv, 1, 1])

checker = (np.arange(Mv)[:, None] // BM + np.arange(Nv)[None, :] // BN) % 2
ax_c.imshow(checker, cmap="Pastel2", vmin=0, vmax=7, interpolation="nearest")
for gy in range(cdiv(Mv, BM)):
    for gx in range(cdiv(Nv, BN)):
        ax_c.text(gx * BN + min(BN, Nv - gx * BN) / 2 - 0.5, gy * BM + min(BM, Mv - gy * BM) / 2 - 0.5,
                  f"threadgroup\n({gx}, {gy})", ha="center", va="center", fontsize=8)
ax_c.add_patch(Rectangle((-0.5, -0.5), BN, BM, fill=False, lw=2.5, color="black"))
ax_c.set_title(f"C ({Mv}×{Nv}): one threadgroup per {BM}×{BN} tile;\n"
               "edge tiles hang over and are masked", fontsize=9)

ax_tg.imshow(sg[tile], cmap="Set2", interpolation="nearest", vmin=0, vmax=7)
for s in range(WM * WN):
    rr, cc = np.nonzero(sg[tile] == s)
    ax_tg.text(cc.mean(), rr.mean(), f"simdgroup {s}", ha="center", va="center", fontsize=9)
ax_tg.add_patch(Rectangle((-0.5, -0.5), SN, SM, fill=False, lw=2.5, color="black"))
ax_tg.set_title(f"threadgroup tile {BM}×{BN}: {WM}×{WN} simdgroups,\n"
                f"{SM}×{SN} each (read back from the kernel)", fontsize=9)

block = frag[0:SM, 0:SN]
ax_sg.imshow(block, cmap="tab20", interpolation="nearest", vmin=0, vmax=19)
for f in range(TM * TN):
    rr, cc = np.nonzero(block == f)
    ax_sg.text(cc.mean(), rr.mean(), f"acc[{f // TN}][{f % TN}]", ha="center", va="center", fontsize=8)
ax_sg.set_title(f"simdgroup 0's block {SM}×{SN}: {TM}×{TN} accumulators,\n"
                "one 8×8 simdgroup_float8x8 each", fontsize=9)
for ax in (ax_c, ax_tg, ax_sg):
    ax.set_xlabel("column")
    ax.set_ylabel("row")
fig.suptitle("tiled_gemm.metal: the tile pyramid threadgroup → simdgroup → 8×8 fragment "
             f"(defaults WM={WM} WN={WN} TM={TM} TN={TN})")
show_figure(fig, f"Three panels. Left: a {Mv} by {Nv} C divided into {BM} by {BN} threadgroup "
                 f"tiles, {cdiv(Nv, BN)} across and {cdiv(Mv, BM)} down, the last ones partial. "
                 f"Middle: one tile split among {WM * WN} simdgroups in a {WM} by {WN} grid, "
                 f"{SM} by {SN} each. Right: one simdgroup block split into {TM} by {TN} "
                 "8 by 8 accumulator fragments.")

# %% [markdown]
# ## Break it: a grid counted in threadgroups, passed as threads
#
# `threadgroups=` counts threadgroups; `threads=` (Metal's `dispatchThreads`,
# `mx.fast.metal_kernel`'s `grid`) counts threads. Pass the threadgroup count where
# threads are expected and the x extent is short by a factor of 128: one threadgroup
# per row of tiles, and only a handful of threads in it.

# %%
M, N, K = 67, 130, 19
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)
params = TILED_GEMM.params(M, N, K)  # beta = 0: C is only written
d = TILED_GEMM.dispatch(M, N, K)
wrong_grid = d.threadgroups                      # threadgroup counts ...
C_wrong = np.full((M, N), np.nan, np.float32)    # NaN marks "never written"
try:
    with printed_warnings():
        emulator.load_kernel(kernel_path("tiled_gemm.metal"), "tiled_gemm")(
            A, B, C_wrong, params, threads=wrong_grid,  # ... passed as a thread count
            threads_per_threadgroup=d.threads_per_threadgroup)
except emulator.EmulatorError as err:
    print(f"threads={wrong_grid}: " + diagnostic(err))
    state = None
else:
    unwritten = np.isnan(C_wrong)
    right = np.isclose(C_wrong, A @ B, rtol=1e-5, atol=1e-5)
    state = np.where(unwritten, 0, np.where(right, 2, 1))
    print(f"threads={wrong_grid}: the launch completes, but of {C_wrong.size} elements of C "
          f"{unwritten.sum()} were never written, {(state == 1).sum()} are wrong and "
          f"{(state == 2).sum()} are right")
    assert not right.all()

right_grid = d.threads  # the same launch counted in threads: (ceil(N/BN)*THREADS, ceil(M/BM), 1)
C_right = np.zeros((M, N), np.float32)
tiled_gemm(A, B, C_right, params, threads=right_grid, threads_per_threadgroup=d.threads_per_threadgroup)
np.testing.assert_allclose(C_right, A @ B, rtol=1e-5, atol=1e-5)
print(f"threads={right_grid}: matches numpy (rtol=1e-5, atol=1e-5)")

# %%
if state is not None:
    from matplotlib.colors import ListedColormap

    fig = Figure(figsize=(7, 3.8), layout="constrained")
    ax = fig.subplots()
    ax.imshow(state, cmap=ListedColormap(["lightgray", "tab:red", "tab:green"]), vmin=0, vmax=2,
              interpolation="nearest")
    ax.set_xlabel("column of C")
    ax.set_ylabel("row of C")
    ax.set_title(f"threads={wrong_grid} instead of {right_grid}:\n"
                 "grey never written, red wrong, green right", fontsize=10)
    show_figure(fig, f"A map of C, {M} by {N}: {np.mean(state == 0):.0%} never written (grey), "
                     f"{np.mean(state == 1):.0%} written wrong (red), {np.mean(state == 2):.0%} "
                     "right (green), after dispatching threadgroup counts as a thread grid.")
