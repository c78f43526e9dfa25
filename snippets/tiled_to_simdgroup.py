# %% [markdown]
# # From threadgroup tiling to simdgroup_matrix
#
# The companion of the case study: the three steps `kernels/matmul_tiled.metal`,
# `kernels/matmul_simd.metal` and `kernels/matmul_simd_blocked.metal` run on the same
# inputs at edge-hitting shapes and compared with numpy; then a map, read back from the
# kernels, of who computes which element of C in the first two; then the "store a
# fragment straight to C" mistake.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/tiled_to_simdgroup.py
# ```
#
# Download this snippet: [tiled_to_simdgroup.py](tiled_to_simdgroup.py).
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

# The three steps; each one's dispatch (tile of C per threadgroup, threads per
# threadgroup) is its header comment's, with the sizes read from the kernel file.
STEPS = ["matmul_tiled", "matmul_simd", "matmul_simd_blocked"]
kernels = {name: gg.load_kernel(kernel_path(f"{name}.metal"), name) for name in STEPS}


def run(name, A, B, kernel=None):
    (M, K), N = A.shape, B.shape[1]
    d = KERNELS[name].dispatch(M, N, K)
    C = np.zeros((M, N), np.float32)
    (kernel or kernels[name])(A, B, C, M, N, K,
                              threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
    return C


# %% [markdown]
# ## Three steps, one product

# %%
rng = np.random.default_rng(7)
for M, N, K in [(1, 1, 1), (33, 130, 17), (150, 3, 9)]:
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    results = {name: run(name, A, B) for name in STEPS}
    for name, C in results.items():
        # float32 sums of at most 17 products, in kernel-specific order.
        np.testing.assert_allclose(C, A @ B, rtol=1e-5, atol=1e-5)
    spread = max(np.abs(a - b).max() for a in results.values() for b in results.values())
    print(f"{M:3d}x{N:3d}x{K:2d}: all three match numpy (rtol=1e-5, atol=1e-5); "
          f"largest difference between kernels {spread:.1e}")

# %% [markdown]
# ## Who computes which element of C
#
# Each kernel is run with its accumulator initialised to a label instead of zero, and
# A = B = 0, so the stored C is the label. In `matmul_tiled` the label is the thread
# index `lid.y·16 + lid.x`; in `matmul_simd` it is `4·sgid + 2·i + j` for fragment
# `acc[i][j]` of simdgroup `sgid`.

# %%
tiled_label = replace_once(kernel_source("matmul_tiled.metal"), "float acc = 0.0f;",
                           "float acc = float(lid.y * TILE + lid.x);")
simd_label = replace_once(kernel_source("matmul_simd.metal"),
                          "acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);",
                          "acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>("
                          "float(sgid * 4 + i * 2 + j));")
Z_A, Z_B = np.zeros((32, 8), np.float32), np.zeros((8, 32), np.float32)
owner_tiled = run("matmul_tiled", Z_A, Z_B, gg.load_kernel(tiled_label, "matmul_tiled")).astype(int)
owner_simd = run("matmul_simd", Z_A, Z_B, gg.load_kernel(simd_label, "matmul_simd")).astype(int)
assert owner_tiled[:16, :16].max() == 255 and owner_simd.max() == 15

fig = Figure(figsize=(11, 5.2), layout="constrained")
left, right = fig.subplots(1, 2)
im = left.imshow(owner_tiled, cmap="viridis", interpolation="nearest")
for v in (15.5,):
    left.axhline(v, color="white", lw=2)
    left.axvline(v, color="white", lw=2)
left.set_title("matmul_tiled: 32×32 of C = 4 threadgroups of 16×16;\n"
               "colour = thread index in its threadgroup (1 element per thread)", fontsize=9)
fig.colorbar(im, ax=left, shrink=0.7, label="thread_index_in_threadgroup")

right.imshow(owner_simd // 4, cmap="Set2", vmin=0, vmax=7, interpolation="nearest")
for sg in range(4):
    for ij in range(4):
        rr, cc = np.nonzero(owner_simd == sg * 4 + ij)
        right.text(cc.mean(), rr.mean(), f"sg {sg}\nacc[{ij // 2}][{ij % 2}]",
                   ha="center", va="center", fontsize=8)
for v in np.arange(7.5, 31, 8):
    right.axhline(v, color="white", lw=0.8)
    right.axvline(v, color="white", lw=0.8)
right.set_title("matmul_simd: 32×32 of C = 1 threadgroup, 4 simdgroups;\n"
                "each simdgroup owns 2×2 fragments of 8×8", fontsize=9)
for ax in (left, right):
    ax.set_xlabel("column of C")
    ax.set_ylabel("row of C")
fig.suptitle("Ownership of C, read back from the kernels: one element per thread versus "
             "8×8 fragments per simdgroup")
show_figure(fig, "Two 32 by 32 maps of C. Left, matmul_tiled: four 16 by 16 threadgroups, each "
                 "element coloured by the one thread that computes it. Right, matmul_simd: one "
                 "threadgroup whose four simdgroups each own a 16 by 16 quadrant made of 2 by 2 "
                 "fragments of 8 by 8.")

# %% [markdown]
# ## Break it: store the fragments straight to C
#
# `simdgroup_store` writes all 64 elements of a fragment, with no mask. Skipping the
# staging tile and storing each accumulator directly into C is right inside the matrix
# and wrong at its edges: past the last column the writes wrap into the next row, past
# the last row they leave the buffer.

# %%
direct = replace_once(
    kernel_source("matmul_simd.metal"),
    "simdgroup_store(acc[i][j], tileC, BN, ulong2(qcol + 8 * j, qrow + 8 * i));",
    "simdgroup_store(acc[i][j], C, N, ulong2(col0 + qcol + 8 * j, row0 + qrow + 8 * i));")
direct = replace_once(direct, "    threadgroup_barrier(mem_flags::mem_threadgroup);  // all quadrants in tileC",
                      "    return;  // the masked copy-out below is skipped")
M, N, K = 40, 50, 12
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)
try:
    run("matmul_simd", A, B, emulator.load_kernel(direct, "matmul_simd"))
except emulator.OutOfBoundsError as err:
    print(diagnostic(err, "kernels/matmul_simd.metal"))
else:
    raise AssertionError("the emulator should have reported the store past the end of C")
