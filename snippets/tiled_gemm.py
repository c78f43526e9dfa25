# %% [markdown]
# # The tiled GEMM
#
# The companion of the case study: `kernels/tiled_gemm.metal` run end to end. This snippet
# computes `C = α·A·B + β·C` on awkward shapes and on a sub-block of larger matrices (row
# strides `lda`, `ldb`, `ldc`), checks it against numpy, draws the tile pyramid
# (threadgroup → simdgroup → 8×8 fragment) from the kernel's compile-time constants and
# from what the kernel itself writes, and then dispatches a grid counted in the wrong unit.
#
# Run it locally, from a checkout installed with `pip install -e .`:
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
from gemmglossary.snippets import (diagnostic, defines, kernel_path, kernel_source, printed_warnings,
                                   replace_once, show_figure)


def cdiv(a, b):
    return -(-a // b)


source = kernel_source("tiled_gemm.metal")
c = defines(source, ["WM", "WN", "TM", "TN", "BK"])
WM, WN, TM, TN, BK = c["WM"], c["WN"], c["TM"], c["TN"], c["BK"]
SM, SN = TM * 8, TN * 8
BM, BN, THREADS = WM * SM, WN * SN, WM * WN * 32
print(f"pyramid: 8x8 fragments -> {SM}x{SN} per simdgroup ({TM}x{TN} fragments) -> "
      f"{BM}x{BN} per threadgroup ({WM}x{WN} simdgroups, {THREADS} threads), K step {BK}")

# struct GemmParams: 32 bytes, no padding (see the kernel's header comment).
PARAMS = np.dtype([("M", "<u4"), ("N", "<u4"), ("K", "<u4"), ("lda", "<u4"),
                   ("ldb", "<u4"), ("ldc", "<u4"), ("alpha", "<f4"), ("beta", "<f4")])
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
    params = np.array([(M, N, K, K, N, N, alpha, beta)], PARAMS)
    tiled_gemm(A, B, C, params, threadgroups=(cdiv(N, BN), cdiv(M, BM), 1),
               threads_per_threadgroup=(THREADS, 1, 1))
    # float32 dot products of up to 40 terms plus the epilogue's two operations.
    np.testing.assert_allclose(C, alpha * (A @ B) + beta * C0, rtol=1e-5, atol=1e-5)
    print(f"M={M:3d} N={N:3d} K={K:2d} alpha={alpha:5} beta={beta:5}: "
          f"{cdiv(N, BN)}x{cdiv(M, BM)} threadgroups, matches numpy (rtol=1e-5, atol=1e-5)")

# A 50x30 block of C = A[:, :20] @ B[:20, :] inside larger arrays, via lda/ldb/ldc.
bigA = rng.standard_normal((50, 33), dtype=np.float32)   # lda = 33, K = 20
bigB = rng.standard_normal((20, 45), dtype=np.float32)   # ldb = 45, N = 30
bigC = rng.standard_normal((50, 41), dtype=np.float32)   # ldc = 41
C0 = bigC.copy()
params = np.array([(50, 30, 20, 33, 45, 41, 2.0, -1.0)], PARAMS)
tiled_gemm(bigA, bigB, bigC, params, threadgroups=(cdiv(30, BN), cdiv(50, BM), 1),
           threads_per_threadgroup=(THREADS, 1, 1))
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
params = np.array([(Mv, Nv, Kv, Kv, Nv, Nv, 1.0, 0.0)], PARAMS)
label = np.full((Mv, Nv), -1, np.float32)
gg.load_kernel(labelled, "tiled_gemm")(
    np.zeros((Mv, Kv), np.float32), np.zeros((Kv, Nv), np.float32), label, params,
    threadgroups=(cdiv(Nv, BN), cdiv(Mv, BM), 1), threads_per_threadgroup=(THREADS, 1, 1))
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
params = np.array([(M, N, K, K, N, N, 1.0, 0.0)], PARAMS)  # beta = 0: C is only written
wrong_grid = (cdiv(N, BN), cdiv(M, BM), 1)       # threadgroup counts ...
C_wrong = np.full((M, N), np.nan, np.float32)    # NaN marks "never written"
try:
    with printed_warnings():
        emulator.load_kernel(kernel_path("tiled_gemm.metal"), "tiled_gemm")(
            A, B, C_wrong, params, threads=wrong_grid,  # ... passed as a thread count
            threads_per_threadgroup=(THREADS, 1, 1))
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

right_grid = (cdiv(N, BN) * THREADS, cdiv(M, BM), 1)  # the same launch counted in threads
C_right = np.zeros((M, N), np.float32)
tiled_gemm(A, B, C_right, params, threads=right_grid, threads_per_threadgroup=(THREADS, 1, 1))
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
