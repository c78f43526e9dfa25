# %% [markdown]
# # Threadgroup swizzle
#
# The companion of the threadgroup-swizzle entry. MLX's fused steel GEMM (`steel_gemm_fused.h`,
# from the pinned wheel, unmodified) maps each threadgroup of its grid to a tile of C through
# `swizzle_log`. This snippet finds out, by running that kernel on the emulator, which tile each
# threadgroup computes, for `swizzle_log` 0, 1 and 2, and draws the order in which C's tiles are
# visited. From the same runs it counts how many row panels of A and column panels of B a
# group of consecutive threadgroups touches. Then it breaks the swizzle with a one-character
# edit that sends two threadgroups to one tile, and lets numpy catch it.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/threadgroup_swizzle.py
# ```
#
# Download this snippet: [threadgroup_swizzle.py](threadgroup_swizzle.py).
#
# MLX's kernels are run here on the emulator (`gemmglossary.mlx.steel` plans the dispatch as
# MLX's `matmul.cpp` does).

# %%
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from gemmglossary import emulator
from gemmglossary.mlx import matmul, steel
from gemmglossary.paths import vendor_dir
from gemmglossary.snippets import patched_include_dir, replace_once, show_figure

assert steel.source_path().name == "steel_gemm.metal"  # the instantiations of MLX's steel GEMM in kernels/

for device in [matmul.Device("g", 13), matmul.Device("g", 17), matmul.Device("s", 17)]:
    for M in (96, 1024):
        r = matmul.route(matmul.Problem(M, 1024, 1024, "float16"), device)
        print(f"class {device.letter!r} generation {device.generation}, {M}x1024x1024 float16: "
              f"{r.kernel:9s} tiles of {r.config.bm}x{r.config.bn}, swizzle_log {r.swizzle_log}, "
              f"grid {r.threadgroups}")

# %% [markdown]
# ## Which threadgroup computes which tile
#
# The kernel gives no direct answer: every threadgroup computes its tile of `A @ B` whatever its
# position, so the output of a full launch says nothing about who wrote what. But a launch of
# only the first `x × y` threadgroups of the grid writes exactly the tiles those threadgroups
# own. With C filled with NaN before each launch, the tiles that come out finite are theirs, and
# threadgroup `(x, y)`'s tile is what grid `(x+1) × (y+1)` writes and neither
# `x × (y+1)` nor `(x+1) × y` does. One launch per threadgroup, each of MLX's unmodified kernel
# with the host parameters MLX would pass (the `GEMMParams` of the whole problem).

# %%
BM = BN = 32
CONFIG = matmul.TileConfig(BM, BN, 16, 2, 2)  # instantiated in kernels/steel_gemm.metal
TILES_M, TILES_N = 4, 6
M, N, K = TILES_M * BM, TILES_N * BN, 16
rng = np.random.default_rng(0)
a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
b = rng.uniform(-1, 1, (K, N)).astype(np.float32)


def load(launch, include_dirs=None):
    return emulator.load_kernel(steel.source_path(), launch.host_name, function_constants=launch.function_constants,
                                include_dirs=include_dirs or steel.include_dirs())


def written_tiles(kernel, launch, gx, gy):
    """The tiles of C (tiles_m x tiles_n booleans) a launch of the first gx x gy threadgroups writes."""
    if gx == 0 or gy == 0:
        return np.zeros((TILES_M, TILES_N), bool)
    launch.out[...] = np.nan
    # one worker process: these launches are a few threadgroups each
    kernel(launch.buffers, threadgroups=(gx, gy, 1), threads_per_threadgroup=launch.threads_per_threadgroup,
           workers=1)
    return ~np.isnan(launch.out.reshape(TILES_M, BM, TILES_N, BN)).all(axis=(1, 3))


def tile_of_each_threadgroup(kernel, launch):
    """{(x, y): (tile_row, tile_col) or None} for every threadgroup of the launch's grid."""
    gx, gy, _ = launch.threadgroups
    R = {(i, j): written_tiles(kernel, launch, i, j) for i in range(gx + 1) for j in range(gy + 1)}
    owner = {}
    for y in range(gy):
        for x in range(gx):
            mine = R[(x + 1, y + 1)] & ~R[(x, y + 1)] & ~R[(x + 1, y)]
            found = list(zip(*np.nonzero(mine)))
            assert len(found) <= 1, f"threadgroup {(x, y)} wrote {len(found)} tiles"
            owner[(x, y)] = tuple(int(v) for v in found[0]) if found else None
    return owner


maps = {}
for s in (0, 1, 2):
    launch = steel.plan_fused(a, b, config=CONFIG, swizzle_log=s)
    kernel = load(launch)
    launch.out[...] = np.nan
    kernel(launch.buffers, threadgroups=launch.threadgroups, threads_per_threadgroup=launch.threads_per_threadgroup)
    np.testing.assert_allclose(launch.out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    maps[s] = tile_of_each_threadgroup(kernel, launch)
    gx, gy, _ = launch.threadgroups
    tiles = [v for v in maps[s].values() if v is not None]
    assert len(set(tiles)) == len(tiles) == TILES_M * TILES_N  # every tile exactly once
    print(f"swizzle_log {s}: grid {gx} x {gy}, C matches numpy; each of the {len(tiles)} tiles "
          "computed by exactly one threadgroup")

# %% [markdown]
# ## The visit order
#
# Each tile of C is labelled with the dispatch index `y · grid_x + x` of the threadgroup that
# computed it, the order in which a GPU would start them if it started threadgroups in order
# (Apple does not document that order; it is the assumption under which a swizzle helps). The
# first `W` threadgroups are outlined.

# %%
W = 4
fig = Figure(figsize=(12, 3.9), layout="constrained")
for ax, s in zip(fig.subplots(1, 3), (0, 1, 2)):
    gx = max(x for x, _ in maps[s]) + 1
    order = np.full((TILES_M, TILES_N), -1)
    for (x, y), tile in maps[s].items():
        if tile is not None:
            order[tile] = y * gx + x
    ax.imshow(order, cmap="viridis", interpolation="nearest")
    for (r, cc), v in np.ndenumerate(order):
        ax.text(cc, r, str(v), ha="center", va="center", fontsize=8,
                color="white" if v < order.max() * 0.6 else "black",
                fontweight="bold" if v < W else "normal")
        if v < W:
            ax.add_patch(Rectangle((cc - 0.5, r - 0.5), 1, 1, fill=False, lw=2.2, color="red"))
    ax.set_title(f"swizzle_log = {s}: grid {gx} × {-(-TILES_M // (1 << s))}", fontsize=10)
    ax.set_xlabel("tile column of C")
    ax.set_ylabel("tile row of C")
fig.suptitle(f"MLX's fused GEMM on the emulator: which threadgroup computed each {BM}×{BN} tile "
             f"(red: the first {W})")
show_figure(fig, f"Three maps of a C of {TILES_M} by {TILES_N} tiles, each tile labelled with the dispatch "
                 "index of the threadgroup that computed it. With swizzle_log 0 the indices run along "
                 "rows; with 1 they run down pairs of rows, two at a time; with 2 down columns of four "
                 f"rows. The first {W} threadgroups cover a 1 by {W}, a 2 by {W // 2} and a 4 by {W // 4} "
                 "block of tiles.")

# %% [markdown]
# ## What a group of neighbours shares
#
# A tile needs the `BM × K` row panel of A and the `K × BN` column panel of B it sits on. For
# each run of `W` consecutive threadgroups, count the distinct panels they read: fewer panels
# for the same work is the reuse a cache can exploit while those threadgroups run together.

# %%
print(f"{'swizzle_log':>11s} {'A row panels':>13s} {'B column panels':>16s} {'panels per tile':>16s}  (first {W} threadgroups)")
for s, owner in maps.items():
    gx = max(x for x, _ in owner) + 1
    first = [owner[(i % gx, i // gx)] for i in range(W)]
    rows_, cols_ = {t[0] for t in first}, {t[1] for t in first}
    print(f"{s:11d} {len(rows_):13d} {len(cols_):16d} {(len(rows_) + len(cols_)) / W:16.2f}")

# %% [markdown]
# ## Break it: two threadgroups on one tile
#
# The swizzle keeps the low `swizzle_log` bits of `tid.x` with the mask `(1 << swizzle_log) - 1`.
# Drop the `- 1` and, for `swizzle_log = 1`, the mask keeps bit 1 of `tid.x` instead of bit 0:
# the two threadgroups of a pair land in the same tile row, so some tiles are computed twice and
# others never. The edit is made to a copy of MLX's header in a folder of its own that comes
# first on the include path (`patched_include_dir`). The emulator reports nothing (no access
# is out of bounds, and threadgroups share no threadgroup memory to race on); the numpy check
# has to catch it.

# %%
header = Path("mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_fused.h")
text = (vendor_dir() / header).read_text()
broken = replace_once(text, "((tid.x) & ((1 << params->swizzle_log) - 1))", "((tid.x) & (1 << params->swizzle_log))")
launch = steel.plan_fused(a, b, config=CONFIG, swizzle_log=1)
kernel = load(launch, include_dirs=[str(patched_include_dir(header, broken)), *steel.include_dirs()])
launch.out[...] = np.nan
kernel(launch.buffers, threadgroups=launch.threadgroups, threads_per_threadgroup=launch.threads_per_threadgroup)
try:
    np.testing.assert_allclose(launch.out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
except AssertionError as err:
    print(" ".join(str(err).split())[:200])
else:
    raise AssertionError("the broken swizzle should fail the numpy check")
never = np.isnan(launch.out.reshape(TILES_M, BM, TILES_N, BN)).all(axis=(1, 3))
gx, gy, _ = launch.threadgroups
print(f"{gx * gy} threadgroups for {never.size} tiles, {int(never.sum())} of them never written (.):")
for row in never:
    print("  " + " ".join("." if n else "#" for n in row))
assert never.any()
