# %% [markdown]
# # How MLX picks a GEMM
#
# The companion of the page on MLX's host decision: for a product `a @ b`, MLX's
# `Matmul::eval_gpu` chooses one kernel (a dot product, a matrix-vector kernel, split-K, the
# fused steel GEMM or its NAX variant), a tile configuration, a swizzle and a grid. The project
# restates that code in `gemmglossary.mlx.matmul`, tested against MLX's kernel names and
# signatures; this snippet asks it about a set of products, draws the decision over the whole
# (M = N, K) plane for two devices, runs one routed product with MLX's kernel on the emulator,
# and then breaks the host side by ignoring a transposed operand.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/how_mlx_picks.py
# ```
#
# Download this snippet: [how_mlx_picks.py](how_mlx_picks.py).
#
# Nothing here needs a GPU: the decisions are host code, and the one kernel run uses the
# emulator.

# %%
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from gemmglossary import emulator
from gemmglossary.mlx import matmul, steel
from gemmglossary.snippets import show_figure

assert steel.source_path().name == "steel_gemm.metal"  # the instantiations of MLX's steel GEMM in kernels/

M1_LIKE = matmul.Device("g", 13)   # class g, generation 13: no NAX, no wide GEMV
NAX_MAX = matmul.Device("s", 17)   # class s, generation 17: NAX available (with macOS 26.2)
print(f"{'product':30s} {'device':6s} {'kernel':10s} {'tile':>14s} {'swizzle':>7s} {'grid':>14s} {'threads':>7s}")
for (M, N, K, dtype, ta, tb), device in [
        ((1, 1, 4096, "float32", False, False), M1_LIKE),
        ((1, 4096, 4096, "float16", False, False), M1_LIKE),
        ((4096, 1, 4096, "float16", False, False), M1_LIKE),
        ((8, 4096, 4096, "float16", False, True), matmul.Device("g", 15)),
        ((64, 64, 4096, "float32", False, False), M1_LIKE),
        ((1024, 1024, 1024, "float32", False, False), M1_LIKE),
        ((1024, 1024, 1024, "float16", False, True), M1_LIKE),
        ((1024, 1024, 1024, "float16", False, False), matmul.Device("d", 15)),
        ((1024, 1024, 1024, "float16", False, False), NAX_MAX),
        ((256, 256, 8192, "bfloat16", False, False), NAX_MAX)]:
    r = matmul.route(matmul.Problem(M, N, K, dtype, ta, tb), device)
    code = ("t" if ta else "n") + ("t" if tb else "n")
    tile = "" if r.config is None else f"{r.config.bm}x{r.config.bn}x{r.config.bk}"
    print(f"{M:4d}x{N:4d}x{K:4d} {dtype:8s} {code:2s}     {device.letter}{device.generation:<5d} {r.kernel:10s} "
          f"{tile:>14s} {r.swizzle_log:7d} {str(r.threadgroups):>14s} {r.threads:7d}")

# %% [markdown]
# ## The decision over the plane
#
# Square outputs, `M = N` from 1 to 4096, against `K` from 16 to 16384, float32 on the first
# device and float16 on the second. Each cell is the kernel `gemmglossary.mlx.matmul.route`
# returns for that product.

# %%
from gemmglossary.figures.route import KINDS, route_grid  # the page's figure asks route() the same way

sizes = [2 ** i for i in range(0, 13)]
depths = [2 ** i for i in range(4, 15)]
fig = Figure(figsize=(11, 4.4), layout="constrained")
cmap = ListedColormap(["#7f7f7f", "#9467bd", "#c5b0d5", "#e377c2", "#ff7f0e", "#ffbb78", "#1f77b4", "#aec7e8"])
seen, per_panel = {}, []
for ax, (device, dtype) in zip(fig.subplots(1, 2), [(M1_LIKE, "float32"), (NAX_MAX, "float16")]):
    grid = np.vectorize(KINDS.index)(route_grid(dtype, device, sizes, depths))
    ax.imshow(grid, cmap=cmap, vmin=0, vmax=len(KINDS) - 1, origin="lower", aspect="auto",
              interpolation="nearest")
    for (i, j), v in np.ndenumerate(grid):
        seen.setdefault(KINDS[v], (device, dtype, sizes[i], depths[j]))
    kinds_here = [k for k in KINDS if KINDS.index(k) in grid]
    per_panel.append(f"{dtype} on class {device.letter} generation {device.generation}: {', '.join(kinds_here)}")
    ax.set_xticks(range(len(depths)), [str(k) for k in depths], rotation=60, fontsize=8)
    ax.set_yticks(range(len(sizes)), [str(m) for m in sizes], fontsize=8)
    ax.set_xlabel("K")
    ax.set_ylabel("M = N")
    ax.set_title(f"{dtype} on class {device.letter!r}, generation {device.generation}", fontsize=10)
handles = [Patch(color=cmap(KINDS.index(k)), label=k) for k in KINDS if k in seen]
fig.legend(handles=handles, loc="outside right center", fontsize=9)
fig.suptitle("The kernel MLX's matmul.cpp dispatches for a square product (gemmglossary.mlx.matmul.route)")
show_figure(fig, f"Two maps of kernel choice over M = N ({sizes[0]} to {sizes[-1]}, vertical) and K "
                 f"({depths[0]} to {depths[-1]}, horizontal), coloured by kernel. " + "; ".join(per_panel)
                 + ". Split-K fills the region of long K and small outputs.")
for kind, (device, dtype, m, k) in seen.items():
    print(f"{kind:12s} first seen at M = N = {m}, K = {k} ({dtype}, class {device.letter!r})")

# %% [markdown]
# ## One routed product, run
#
# `200 × 100` by `100 × 130` float32 on the first device goes to the fused steel kernel with the
# default tile, which `kernels/steel_gemm.metal` instantiates; `gemmglossary.mlx.steel` fills
# `GEMMParams` and the function constants as MLX does, and the emulator runs MLX's kernel.

# %%
rng = np.random.default_rng(1)
a = rng.uniform(-1, 1, (200, 100)).astype(np.float32)
b = rng.uniform(-1, 1, (100, 130)).astype(np.float32)
r = matmul.route(matmul.Problem(200, 130, 100), M1_LIKE)
assert r.kernel == "fused" and r.config.as_tuple in steel.CONFIGS
launch = steel.plan_fused(a, b, config=r.config, swizzle_log=r.swizzle_log)
assert launch.host_name == r.kernel_name and launch.threadgroups == r.threadgroups


def run(launch):
    kernel = emulator.load_kernel(steel.source_path(), launch.host_name, function_constants=launch.function_constants,
                                  include_dirs=steel.include_dirs())
    kernel(launch.buffers, threadgroups=launch.threadgroups, threads_per_threadgroup=launch.threads_per_threadgroup)
    return launch.out


np.testing.assert_allclose(run(launch), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
print(f"{launch.host_name}, grid {launch.threadgroups}, function constants {launch.function_constants}: "
      "matches numpy (rtol=1e-5, atol=1e-5)")

# %% [markdown]
# ## Break it: ignore a transposed operand
#
# `b.T` of a row-major `130 × 100` array is a `100 × 130` operand whose columns are contiguous.
# MLX notices (`check_transpose`) and picks the `nt` kernel with `ldb = 100`. A host that
# treated every operand as row-major would pick the `nn` kernel and read the same bytes as if
# they were a row-major `100 × 130` matrix. Every read is in bounds and the emulator has
# nothing to say; the numpy check does.

# %%
bt = rng.uniform(-1, 1, (130, 100)).astype(np.float32)
right = steel.plan_fused(a, bt.T, config=r.config, swizzle_log=0)
assert "_nt_" in right.host_name
np.testing.assert_allclose(run(right), a.astype(np.float64) @ bt.T, rtol=1e-5, atol=1e-5)
print(f"{right.host_name}: ldb = {int(right.buffers[4]['ldb'])}, matches numpy")
wrong = steel.plan_fused(a, bt.reshape(100, 130), config=r.config, swizzle_log=0)  # the same bytes, read row-major
try:
    np.testing.assert_allclose(run(wrong), a.astype(np.float64) @ bt.T, rtol=1e-5, atol=1e-5)
except AssertionError as err:
    print(f"{wrong.host_name}: ldb = {int(wrong.buffers[4]['ldb'])}: " + " ".join(str(err).split())[:180])
else:
    raise AssertionError("reading a transposed operand as row-major should fail the numpy check")
