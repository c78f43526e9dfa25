# %% [markdown]
# # Split-K
#
# The companion of the split-K entry: MLX's own split-K GEMM (`steel_gemm_splitk.h`, from the
# pinned wheel, unmodified) run on the emulator as MLX's host code dispatches it. First where
# MLX's routing sends a few products (computed by the project's tested restatement of
# `matmul.cpp`, `gemmglossary.mlx.matmul`), then one split-K product end to end: the partial
# products the first kernel leaves in a float32 buffer, one per slice of K, checked slice by
# slice against numpy, and the second kernel's sum. Then it breaks the second pass by summing
# one partition too few.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/split_k.py
# ```
#
# Download this snippet: [split_k.py](split_k.py).
#
# MLX's kernels are run here on the emulator only (`gemmglossary.mlx.steel_splitk` plans the two
# dispatches; on a Mac, MLX itself runs them when you call `mx.matmul`).

# %%
import numpy as np
from matplotlib.figure import Figure

from gemmglossary.mlx import matmul, steel_splitk
from gemmglossary.mlx.launch import DEFAULT_DEVICE
from gemmglossary.figures.splitk import partition_bounds
from gemmglossary.snippets import show_figure

assert steel_splitk.SOURCE == "mlx_steel_splitk.metal"  # the instantiations of MLX's split-K GEMM in kernels/

device = DEFAULT_DEVICE  # a base M1 as MLX sees it: class 'g', generation 13, no NAX
print(f"device: class {device.letter!r}, generation {device.generation}, NAX available: {device.nax_available}")
for M, N, K in [(64, 64, 64), (64, 64, 4096), (33, 50, 1000), (512, 512, 4096), (1024, 1024, 1024)]:
    r = matmul.route(matmul.Problem(M, N, K), device)
    extra = f", {r.splitk.partitions} partitions of {r.splitk.partition_size}" if r.splitk else ""
    groups = int(np.prod(r.threadgroups))
    print(f"{M:5d} x {N:5d} x {K:5d}: {r.kernel:8s} {groups:4d} threadgroups of {r.threads}{extra}")

# %% [markdown]
# ## One product, two kernels
#
# `33 × 1000` by `1000 × 50` in float32. MLX tiles C in 16 × 32 blocks (M is below 40), so the
# output is only a handful of threadgroups wide; split-K multiplies that by the number of
# partitions. The first kernel writes partition `p`'s product into slice `p` of a
# `partitions × M × N` float32 buffer; the second sums the slices into C.

# %%
rng = np.random.default_rng(0)
M, N, K = 33, 50, 1000
a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
plan = steel_splitk.plan(a, b, device=device)
gemm, accumulate = plan.launches
params = gemm.buffers[3]
P, size = int(params["split_k_partitions"]), int(params["split_k_partition_size"])
print(f"kernel 1: {gemm.host_name}\n  grid {gemm.threadgroups} threadgroups of {gemm.threads_per_threadgroup}")
print(f"kernel 2: {accumulate.host_name}\n  {accumulate.threads} threads in threadgroups of "
      f"{accumulate.threads_per_threadgroup}")
out = plan.run()
np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
print(f"C matches numpy (rtol=1e-4, atol=1e-3): {P} partitions of {size} elements of K, the last one to K = {K}")

# %% [markdown]
# ## The partial products
#
# Every threadgroup of partition `p` starts at `k = p · partition_size`; all but the last
# stop one partition later, and the last runs to the end of K, which here makes it much longer
# than the others (`K` is not a multiple of `partitions × 16`). Each slice of the buffer is the
# product of one slice of K, which numpy can check by itself.

# %%
partials = gemm.buffers[2].reshape(P, M, N)
bounds = partition_bounds(P, size, K)  # the kernel's rule; the page's figure draws the same
for p, (k0, k1) in enumerate(bounds):
    np.testing.assert_allclose(partials[p], a[:, k0:k1].astype(np.float64) @ b[k0:k1], rtol=1e-4, atol=1e-4)
print(f"each of the {P} partial products is A[:, k0:k1] @ B[k0:k1, :] for its slice "
      f"(first {bounds[0]}, last {bounds[-1]})")
np.testing.assert_allclose(partials.sum(axis=0), out, rtol=1e-6, atol=1e-6)

fig = Figure(figsize=(9, 3.4), layout="constrained")
ax_k, ax_mag = fig.subplots(1, 2, width_ratios=[3, 2])
for p, (k0, k1) in enumerate(bounds):
    ax_k.barh(0, k1 - k0, left=k0, color=f"C{p % 10}", edgecolor="white")
ax_k.set_xlim(0, K)
ax_k.set_yticks([])
ax_k.set_xlabel("k")
ax_k.set_title(f"K = {K} in {P} partitions of {size}; the last one runs to K", fontsize=10)
rms = np.sqrt((partials.astype(np.float64) ** 2).mean(axis=(1, 2)))
ax_mag.bar(range(P), rms, color=[f"C{p % 10}" for p in range(P)])
ax_mag.set_xlabel("partition")
ax_mag.set_ylabel("RMS of its partial product")
ax_mag.set_title("read back from the emulator's partial buffer", fontsize=10)
show_figure(fig, f"Left: the K axis from 0 to {K} cut into {P} partitions, {P - 1} of {size} elements "
                 f"and a last one of {bounds[-1][1] - bounds[-1][0]}. Right: the root mean square of each "
                 "partition's partial product as the first kernel wrote it; it grows with the square "
                 "root of the partition's length, so the last bar stands out.")

# %% [markdown]
# ## Break it: sum one partition too few
#
# The accumulation kernel takes the number of partitions as a plain `constant int&`; nothing
# checks it against the grid of the first kernel. Pass one less (as a host that recomputed
# it from a different K would) and the last slice of K is silently left out. The emulator has
# nothing to report: every access is in bounds. The numpy check catches it.

# %%
wrong = steel_splitk.plan(a, b, device=device)
wrong.launches[1].buffers[2] = np.array(P - 1, np.int32)  # k_partitions of the accumulation kernel
out_wrong = wrong.run()
try:
    np.testing.assert_allclose(out_wrong, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
except AssertionError as err:
    print(" ".join(str(err).split())[:240])
    missing = wrong.launches[0].buffers[2].reshape(P, M, N)[-1]
    np.testing.assert_allclose(out - out_wrong, missing, rtol=1e-5, atol=1e-5)
    print(f"the difference is exactly partition {P - 1}'s product, k = {bounds[-1][0]} .. {K}")
else:
    raise AssertionError("a missing partition should not pass the numpy check")
