# %% [markdown]
# # simdgroup_matrix
#
# A `simdgroup_float8x8` is one 8×8 matrix held jointly by the 32 lanes of a simdgroup,
# two elements per lane. This snippet runs `kernels/matmul_simd.metal` (four simdgroups,
# each accumulating a 16×16 quadrant as 2×2 fragments) against numpy, draws **which lane
# holds which element** of a fragment by asking a kernel to write its lane id into its
# own `thread_elements()`, and then loads B with the wrong row length.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/simdgroup_matrix.py
# ```
#
# Download this snippet: [simdgroup_matrix.py](simdgroup_matrix.py).
#
# On a Mac the kernels run on the GPU; elsewhere on the CPU emulator. The "Break it"
# cell always uses the emulator.

# %%
import numpy as np
from matplotlib.figure import Figure

import gemmglossary as gg
from gemmglossary import emulator
from gemmglossary.kernels import KERNELS
from gemmglossary.snippets import diagnostic, kernel_path, kernel_source, replace_once, show_figure

rng = np.random.default_rng(2)
M, N, K = 40, 50, 36  # partial 32×32 tiles and a partial 16-deep K step
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)

matmul_simd = gg.load_kernel(kernel_path("matmul_simd.metal"), "matmul_simd")
d = KERNELS["matmul_simd"].dispatch(M, N, K)  # 128 threads, one threadgroup per 32x32 tile
C = np.zeros((M, N), np.float32)
matmul_simd(A, B, C, M, N, K, threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
# float32 sums of 36 products; the 8×8×8 multiply-accumulate orders them differently.
np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-5)
print(f"matmul_simd {M}x{N}x{K}: matches numpy (rtol=1e-5, atol=1e-5), "
      f"max |error| = {np.abs(C - A @ B).max():.2e}")

# %% [markdown]
# ## Who holds what
#
# `thread_elements()` exposes a lane's share of the fragment as a 2-vector. The kernel
# below writes `2·lane + i` into element `i` of each lane's share, then stores the
# fragment whole with `simdgroup_store`: each stored value says which lane held it.

# %%
LANE_MAP = """
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

kernel void lane_map(device float* out  [[buffer(0)]],
                     uint          lane [[thread_index_in_simdgroup]])
{
    simdgroup_float8x8 m = make_filled_simdgroup_matrix<float, 8, 8>(-1.0f);
    m.thread_elements()[0] = float(2 * lane);      // this lane's first element
    m.thread_elements()[1] = float(2 * lane + 1);  // and its second
    simdgroup_store(m, out, 8);                    // 8 floats per row
}
"""
out = np.zeros((8, 8), np.float32)
gg.load_kernel(LANE_MAP, "lane_map")(out, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
code = out.astype(int)
lane, slot = code // 2, code % 2
assert code.min() >= 0 and sorted(code.ravel()) == list(range(64)), "each lane holds two elements"

# The layout MLX's steel kernels rely on (mma.h): compare element by element.
for ln in range(32):
    qid = ln // 4
    r = (qid & 4) + (ln // 2) % 4
    c0 = (qid & 2) * 2 + (ln % 2) * 2
    assert lane[r, c0] == ln and lane[r, c0 + 1] == ln and slot[r, c0] == 0 and slot[r, c0 + 1] == 1
print("lane layout matches MLX's: lane l holds row (l/4 & 4) + (l/2) % 4, "
      "columns (l/4 & 2)*2 + (l%2)*2 and the next one")
print(lane)

# %%
fig = Figure(figsize=(6.2, 5.6), layout="constrained")
ax = fig.subplots()
im = ax.imshow(lane, cmap="tab20b", vmin=-0.5, vmax=31.5, interpolation="nearest")
for (r, c), ln in np.ndenumerate(lane):
    ax.text(c, r, f"{ln}\n[{slot[r, c]}]", ha="center", va="center", fontsize=8, color="white")
ax.set_xticks(range(8))
ax.set_yticks(range(8))
ax.set_xlabel("column")
ax.set_ylabel("row")
for q in (3.5,):
    ax.axhline(q, color="black", lw=1.5)
    ax.axvline(q, color="black", lw=1.5)
fig.colorbar(im, ax=ax, shrink=0.8, label="simd lane")
ax.set_title("simdgroup_float8x8: which lane holds each element\n"
             "(lane id, and [i] of thread_elements()), read back from the kernel", fontsize=10)
quarters = {name: sorted(set(lane[r0:r0 + 4, c0:c0 + 4].ravel()))
            for name, r0, c0 in [("top-left", 0, 0), ("top-right", 0, 4),
                                 ("bottom-left", 4, 0), ("bottom-right", 4, 4)]}
show_figure(fig, "An 8 by 8 grid labelled with the lane that holds each element; every lane "
                 "holds two horizontally adjacent elements. Lanes per 4 by 4 quarter: " +
                 "; ".join(f"{name}: {', '.join(map(str, ls))}" for name, ls in quarters.items()))

# %% [markdown]
# ## Break it: load B with A's row length
#
# `simdgroup_load(m, tile, elements_per_row, origin)` needs the row length of the tile it
# reads. `tileB` is 16×32 (row length `BN` = 32) and `tileA` is 32×16 (row length `BK`
# = 16). Passing `BK` for B is in bounds (so nothing traps) but walks B's tile with the
# wrong stride: the product is simply wrong, which only a comparison catches.

# %%
broken = replace_once(kernel_source("matmul_simd.metal"), "tileB, BN,", "tileB, BK,", count=2)
C_broken = np.zeros((M, N), np.float32)
try:
    emulator.load_kernel(broken, "matmul_simd")(
        A, B, C_broken, M, N, K,
        threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
    np.testing.assert_allclose(C_broken, A @ B, rtol=1e-5, atol=1e-5)
except emulator.EmulatorError as err:
    print(diagnostic(err, "kernels/matmul_simd.metal"))
except AssertionError:
    bad = ~np.isclose(C_broken, A @ B, rtol=1e-5, atol=1e-5)
    print(f"no error from the emulator, but a mismatch against numpy: {bad.sum()} of "
          f"{bad.size} elements differ, max |error| {np.abs(C_broken - A @ B).max():.2f}")
else:
    raise AssertionError("a load with the wrong row length should not reproduce A @ B")
