# %% [markdown]
# # Register blocking
#
# Each simdgroup of `kernels/matmul_simd_blocked.metal` keeps a `TM × TN` grid of 8×8
# accumulator fragments in registers. Per 8-deep step of K it loads `TM` fragments of A
# and `TN` of B and issues `TM·TN` multiply-accumulates, so loads are reused and the
# price is registers. This snippet compiles the kernel at several `-D TM=… -D TN=…`,
# checks every build against numpy, tabulates and plots reuse against accumulator
# count, then asks for a blocking too big for threadgroup memory.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/register_blocking.py
# ```
#
# Download this snippet: [register_blocking.py](register_blocking.py).
#
# On a Mac the kernels run on the GPU; elsewhere on the CPU emulator. The "Break it"
# cell always uses the emulator.

# %%
import numpy as np
from matplotlib.figure import Figure

import gemmglossary as gg
from gemmglossary import emulator
from gemmglossary.kernels import KERNELS
from gemmglossary.snippets import diagnostic, kernel_path, show_figure

BLOCKED = KERNELS["matmul_simd_blocked"]  # its -D constants and dispatch, read from the file
default = BLOCKED.defaults()
WM, WN, BK = default["WM"], default["WN"], default["BK"]
print("defaults in the kernel:", default)

rng = np.random.default_rng(1)
M, N, K = 70, 52, 40  # partial tiles for every blocking below
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)
expected = A @ B

# %% [markdown]
# ## Every blocking computes the same product
#
# The threadgroup is `WM × WN` simdgroups whatever `TM × TN` is, so the tile of C a
# threadgroup owns grows with the blocking: `BM = WM·TM·8`, `BN = WN·TN·8`.

# %%
blockings = [(1, 1), (2, 1), (2, 2), (4, 2), (4, 4)]
rows = []
for TM, TN in blockings:
    build = {"TM": TM, "TN": TN}
    c = BLOCKED.constants(build)  # BM = WM*TM*8, BN = WN*TN*8, as the kernel computes them
    BM, BN = c["BM"], c["BN"]
    d = BLOCKED.dispatch(M, N, K, build)
    kernel = gg.load_kernel(kernel_path("matmul_simd_blocked.metal"), "matmul_simd_blocked",
                            defines=build)
    C = np.zeros((M, N), np.float32)
    kernel(A, B, C, M, N, K,
           threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
    # float32 sums of 40 products, accumulated in a different order than numpy's.
    np.testing.assert_allclose(C, expected, rtol=1e-5, atol=1e-5)
    loads, mmas = TM + TN, TM * TN
    rows.append(dict(
        TM=TM, TN=TN, BM=BM, BN=BN, loads=loads, mmas=mmas,
        mma_per_load=mmas / loads,
        acc_floats=2 * mmas,                 # an 8x8 float fragment is 2 floats per lane
        frag_floats=2 * (mmas + loads),      # plus the A and B fragments of the step
        tg_kib=(BM * BK + BK * BN + BM * BN) * 4 / 1024,
        dev_bytes_per_flop=(BM + BN) * BK * 4 / (2 * BM * BN * BK),
    ))
    print(f"TM×TN = {TM}×{TN}: threadgroup tile {BM}×{BN}, "
          f"{d.threadgroups[0] * d.threadgroups[1]} threadgroups, matches numpy (rtol=1e-5, atol=1e-5)")

# %% [markdown]
# ## What the blocking buys, and what it costs
#
# Counts per simdgroup and per 8-deep step of K, read off the kernel's loops (`TM`
# `simdgroup_load`s of A, `TN` of B, `TM·TN` `simdgroup_multiply_accumulate`s). Device
# bytes per flop counts one pass of the threadgroup's A and B slices per K step.

# %%
header = ("TM×TN", "tile BM×BN", "frag loads", "MMAs", "MMA/load",
          "acc floats/lane", "all frag floats/lane", "tg KiB", "device B/flop")
print(" | ".join(header))
for r in rows:
    print(" | ".join([
        f"{r['TM']}×{r['TN']}", f"{r['BM']}×{r['BN']}", str(r["loads"]), str(r["mmas"]),
        f"{r['mma_per_load']:.2f}", str(r["acc_floats"]), str(r["frag_floats"]),
        f"{r['tg_kib']:.1f}", f"{r['dev_bytes_per_flop']:.3f}"]))

# %%
fig = Figure(figsize=(10, 4), layout="constrained")
left, right = fig.subplots(1, 2)
acc = [r["acc_floats"] for r in rows]
left.plot(acc, [r["mma_per_load"] for r in rows], "o-", color="tab:blue")
for r in rows:
    left.annotate(f"{r['TM']}×{r['TN']}", (r["acc_floats"], r["mma_per_load"]),
                  textcoords="offset points", xytext=(5, -10), fontsize=9)
left.set_xlabel("accumulator floats per lane (2 per 8×8 fragment)")
left.set_ylabel("multiply-accumulates per fragment load")
left.set_title("Reuse from registers grows with the block")
left.grid(alpha=0.3)

right.bar([f"{r['TM']}×{r['TN']}" for r in rows], [r["dev_bytes_per_flop"] for r in rows],
          color="tab:orange")
right.set_xlabel("TM×TN (with WM×WN = %d×%d simdgroups)" % (WM, WN))
right.set_ylabel("device bytes loaded per flop")
right.set_title("…and the bigger tile needs less device traffic")
right.grid(alpha=0.3, axis="y")
fig.suptitle("Register blocking in matmul_simd_blocked.metal: reuse versus register cost")
show_figure(fig, "Left: multiply-accumulates per fragment load rise from "
                 f"{rows[0]['mma_per_load']:.2f} at 1×1 to {rows[-1]['mma_per_load']:.2f} at "
                 f"{rows[-1]['TM']}×{rows[-1]['TN']} while accumulator floats per lane rise from "
                 f"{rows[0]['acc_floats']} to {rows[-1]['acc_floats']}. Right: device bytes per "
                 "flop fall as the threadgroup tile grows.")

# %% [markdown]
# ## Break it: block past the threadgroup-memory budget
#
# The kernel stages `BM×BK` of A, `BK×BN` of B and the `BM×BN` result in threadgroup
# memory, and a `static_assert` keeps that within 32 KB. `TM = 8, TN = 4` needs 44 KB:
# the build stops with the kernel's own message instead of failing at dispatch.

# %%
try:
    emulator.load_kernel(kernel_path("matmul_simd_blocked.metal"), "matmul_simd_blocked",
                         defines={"TM": 8, "TN": 4})
except emulator.CompileError as err:
    print(diagnostic(err))
else:
    raise AssertionError("TM=8, TN=4 should not compile")
