# %% [markdown]
# # Simdgroup reductions
#
# The 32 lanes of a simdgroup can add their values without threadgroup memory:
# `simd_sum` in one call, or `simd_shuffle_down` / `simd_shuffle_xor` in five halving
# steps. A threadgroup adds its simdgroups' sums through threadgroup memory, with one
# barrier. This snippet runs the three kernels of `kernels/reductions.metal` against
# numpy, prints every lane's value after every shuffle step, and breaks the two-level
# reduction four ways: a step missing, the barrier missing, shuffles in a partial
# simdgroup, and a read of partial sums nobody wrote.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/simdgroup_reductions.py
# ```
#
# Download this snippet: [simdgroup_reductions.py](simdgroup_reductions.py).
#
# On a Mac the correct kernels run on the GPU; the "Break it" cells use the CPU emulator,
# which reports races, reads of inactive lanes and reads of threadgroup memory that no
# thread wrote, with their lines.

# %%
import numpy as np

import gemmglossary as gg
from gemmglossary import emulator
from gemmglossary.kernels import cdiv
from gemmglossary.snippets import diagnostic, kernel_path, kernel_source, printed_warnings, replace_once, show_figure

rng = np.random.default_rng(0)
n = 100_000
a = rng.uniform(-1, 1, n).astype(np.float32)
reduce_sum = gg.load_kernel(kernel_path("reductions.metal"), "reduce_sum")


def two_passes(kernel, a, groups, threads):
    """One partial sum per threadgroup, then the same kernel on the partials, in one threadgroup."""
    partials = np.full(groups, np.nan, np.float32)
    kernel(a, partials, a.size, threadgroups=(groups, 1, 1), threads_per_threadgroup=(threads, 1, 1))
    total = np.full(1, np.nan, np.float32)
    kernel(partials, total, groups, threadgroups=(1, 1, 1), threads_per_threadgroup=(32, 1, 1))
    return partials, total[0]


for groups, threads in [(8, 256), (8, 100)]:
    partials, total = two_passes(reduce_sum, a, groups, threads)
    np.testing.assert_allclose(total, a.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
    last = threads % 32 or 32
    print(f"{groups} threadgroups of {threads} threads ({cdiv(threads, 32)} simdgroups, the last with {last} lanes): "
          f"total {total:.4f}, numpy {a.astype(np.float64).sum():.4f}")

# %% [markdown]
# ## Five shuffle steps
#
# `shuffle_down_sum` records every lane's value before the first step and after each. With
# the lanes holding 0..31, every value is an exact integer. After the step with offset
# `o`, lane `i < o` holds the sum of lanes `i`, `i + o`, `i + 2o`, ...; the lanes from `o`
# up added their own value (the specification leaves a lane with no source unchanged),
# so what they hold means nothing.

# %%
lanes = np.arange(32, dtype=np.float32)
out, steps = np.full(1, np.nan, np.float32), np.full(6 * 32, np.nan, np.float32)
gg.load_kernel(kernel_path("reductions.metal"), "shuffle_down_sum")(
    lanes, out, steps, 32, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
steps = steps.reshape(6, 32)
np.testing.assert_allclose(out[0], lanes.sum(), rtol=0, atol=0)
for level in range(6):
    live = 32 >> level
    expected = lanes.reshape(1 << level, live).sum(0)
    np.testing.assert_allclose(steps[level, :live], expected, rtol=0, atol=0)
    offset = "start" if level == 0 else f"offset {32 >> level:2d}"
    print(f"{offset:10s} lanes 0-7: {' '.join(f'{v:4.0f}' for v in steps[level, :8])}   "
          f"meaningful: lanes 0..{live - 1}")
print(f"lane 0 ends with {out[0]:.0f} = 0 + 1 + ... + 31")

every = np.full(32, np.nan, np.float32)
gg.load_kernel(kernel_path("reductions.metal"), "xor_sum")(
    lanes, every, 32, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
np.testing.assert_allclose(every, np.full(32, lanes.sum()), rtol=0, atol=0)
print(f"xor_sum: every lane ends with {every[0]:.0f}")

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6.8, 2.8))
meaningful = np.array([[lane < (32 >> level) for lane in range(32)] for level in range(6)])
ax.imshow(np.where(meaningful, steps, np.nan), cmap="viridis", aspect="auto")
for level in range(6):
    for lane in range(0, 32 >> level):
        if (32 >> level) <= 8 or lane % 4 == 0:
            ax.text(lane, level, f"{steps[level, lane]:.0f}", ha="center", va="center", fontsize=6, color="white")
ax.set_yticks(range(6), ["start"] + [f"offset {32 >> level}" for level in range(1, 6)], fontsize=8)
ax.set_xticks(range(0, 32, 4))
ax.set_xlabel("lane")
ax.set_title("simd_shuffle_down: the lanes that still hold a partial sum", fontsize=9)
show_figure(fig, "Each row a step of shuffle_down_sum on the values 0 to 31: coloured cells are the lanes "
            "holding a meaningful partial sum, 32 at the start, then 16, 8, 4, 2 and finally lane 0 with 496")

# %% [markdown]
# ## MLX's all_reduce on the emulator
#
# MLX's `all_reduce` (`reduction/reduce_all.h`) is the same two levels. Summing a whole
# `37 × 11` array takes one threadgroup (`gemmglossary.mlx.reduce.plan` dispatches it as
# MLX's host code does); the kernel is MLX's, unmodified, instantiated in
# `kernels/mlx_reduce.metal`.

# %%
from gemmglossary.mlx import reduce as mlx_reduce

assert mlx_reduce.SOURCE == "mlx_reduce.metal"  # the instantiations of MLX's reduction headers in kernels/
small = rng.uniform(-1, 1, (37, 11)).astype(np.float32)
plan = mlx_reduce.plan(small, (0, 1), "sum")
out_mlx = plan.run()
np.testing.assert_allclose(out_mlx.astype(np.float64), small.astype(np.float64).sum(keepdims=True), rtol=1e-5,
                           atol=1e-5)
launch = plan.launches[0]
grid = (f"{launch.threadgroups} threadgroups" if launch.threads is None else f"a grid of {launch.threads} threads")
print(f"{plan.host_names[0]}: {grid} in threadgroups of {launch.threads_per_threadgroup}, "
      f"sum {out_mlx.ravel()[0]:.4f}, numpy {small.astype(np.float64).sum():.4f}")

# %% [markdown]
# ## Break it: a step missing
#
# Starting the halving at offset 8 instead of 16 does four steps, not five: lane 0 ends
# with the sum of lanes 0..15 only. No rule is broken, so only numpy notices.

# %%
source = kernel_source("reductions.metal")
short = replace_once(source, "for (ushort offset = 16; offset > 0; offset /= 2) {",
                     "for (ushort offset = 8; offset > 0; offset /= 2) {")
blocks = rng.uniform(-1, 1, 96).astype(np.float32)
out_bad = np.full(3, np.nan, np.float32)
emulator.load_kernel(short, "shuffle_down_sum")(
    blocks, out_bad, np.zeros(3 * 6 * 32, np.float32), 96, threads=(96, 1, 1), threads_per_threadgroup=(32, 1, 1))
try:
    np.testing.assert_allclose(out_bad, blocks.reshape(3, 32).sum(1), rtol=1e-5, atol=1e-5)
except AssertionError as err:
    print("numpy check:", str(err).strip().splitlines()[2])
np.testing.assert_allclose(out_bad, blocks.reshape(3, 32)[:, :16].sum(1), rtol=1e-5, atol=1e-5)
print("each sum is that of the block's first 16 elements")

# %% [markdown]
# ## Break it: no barrier between the levels
#
# Lane 0 of every simdgroup writes its partial sum, and simdgroup 0 reads all of them.
# Without the barrier in between, simdgroup 0 may read before the others have written;
# the emulator reports the pair of accesses whatever order the threads happened to run in.

# %%
no_barrier = replace_once(source, "    threadgroup_barrier(mem_flags::mem_threadgroup);  // every partial written",
                          "    // barrier removed  // every partial written")
try:
    two_passes(emulator.load_kernel(no_barrier, "reduce_sum"), a, 8, 256)
except emulator.DataRaceError as err:
    print(diagnostic(err, "kernels/reductions.metal"))
else:
    raise AssertionError("the emulator should have reported the race on partials")

# %% [markdown]
# ## Break it: shuffles in a partial simdgroup
#
# Replacing the first `simd_sum` with the shuffle-down loop works for threadgroups of 256
# threads, but not for 100: the last simdgroup has 4 lanes, and its lane 0 asks for lane
# 16, which does not exist. The specification does not say what such a read returns; the
# emulator warns and hands the lane its own value back, so the total comes out wrong too. `simd_sum` adds the active
# lanes only, which is why the kernel uses it.

# %%
by_hand = replace_once(source, """    v = simd_sum(v);
    if (lane == 0) {
        partials[sg] = v;""", """    for (ushort offset = 16; offset > 0; offset /= 2) {
        v += simd_shuffle_down(v, offset);
    }
    if (lane == 0) {
        partials[sg] = v;""")
with printed_warnings("kernels/reductions.metal", limit=1):
    _, total_bad = two_passes(emulator.load_kernel(by_hand, "reduce_sum"), a, 8, 100)
print(f"total {total_bad:.4f}, numpy {a.astype(np.float64).sum():.4f}")
assert not np.isclose(total_bad, a.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
_, total_256 = two_passes(emulator.load_kernel(by_hand, "reduce_sum"), a, 8, 256)
np.testing.assert_allclose(total_256, a.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
print(f"the same kernel with threadgroups of 256: total {total_256:.4f}, correct")

# %% [markdown]
# ## Break it: reading every lane's partial
#
# Dropping `lane < sgs` lets the 32 lanes of simdgroup 0 read `partials[lane]`, although
# only the first `sgs` were written. The emulator zeroes threadgroup memory, so the total
# even comes out right here; a GPU gives whatever the memory held. The emulator warns.

# %%
unguarded = replace_once(source, "v = lane < sgs ? partials[lane] : 0.0f;", "v = partials[lane];")
with printed_warnings("kernels/reductions.metal", limit=1):
    _, total_u = two_passes(emulator.load_kernel(unguarded, "reduce_sum"), a, 8, 256)
print(f"total {total_u:.4f} (right only because the emulator's threadgroup memory starts at 0)")
