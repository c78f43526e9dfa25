# %% [markdown]
# # Half precision
#
# The companion of the half-precision entry: `kernels/matmul_simd_half.metal`, one kernel
# template instantiated for float16 and bfloat16 inputs, each with a float accumulator and with
# a 16-bit one, run against numpy next to the float32 `kernels/matmul_simd.metal`. It measures
# the error against K for every pair on the emulator and draws it, shows the two ranges
# (float16 overflows past 65504, bfloat16 has float32's exponent) and bfloat16's coarse
# rounding, and then breaks the kernel by accumulating in half.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/half_precision.py
# ```
#
# Download this snippet: [half_precision.py](half_precision.py).
#
# On a Mac the kernels run on the GPU (bfloat needs Metal Shading Language 3.1); elsewhere on
# the CPU emulator, which stores half and bfloat as 16 bits and rounds to nearest even
# wherever a value is converted to them.

# %%
import ml_dtypes
import numpy as np
from matplotlib.figure import Figure

import gemmglossary as gg
from gemmglossary.kernels import KERNELS, cdiv
from gemmglossary.mlx.launch import bfloat16  # numpy's bfloat16 (ml_dtypes)
from gemmglossary.msl.declarations import constants
from gemmglossary.snippets import kernel_path, kernel_source, show_figure

HALF = kernel_path("matmul_simd_half.metal")
c = constants(kernel_source("matmul_simd_half.metal")).values
BM, BN, THREADS = c["BM"], c["BN"], c["THREADS"]
DTYPES = {"float16": np.dtype(np.float16), "bfloat16": bfloat16, "float32": np.dtype(np.float32)}
#: (input type, accumulator type) -> the kernel computing it; float32 is matmul_simd.metal.
PAIRS = [("float32", "float32"), ("float16", "float32"), ("bfloat16", "float32"),
         ("float16", "float16"), ("bfloat16", "bfloat16")]
kernels = {pair: gg.load_kernel(HALF, f"matmul_simd_half_{pair[0]}_{pair[1]}") for pair in PAIRS[1:]}
kernels[PAIRS[0]] = gg.load_kernel(kernel_path("matmul_simd.metal"), "matmul_simd")


def matmul(pair, A, B):
    """C = A @ B with the kernel for (input, accumulator) = pair; A and B already in the input type."""
    M, K = A.shape
    N = B.shape[1]
    C = np.full((M, N), np.nan, DTYPES[pair[0]])
    launch = dict(threadgroups=(cdiv(N, BN), cdiv(M, BM), 1), threads_per_threadgroup=(THREADS, 1, 1))
    kernels[pair](A, B, C, M, N, K, **launch)
    return C


# %% [markdown]
# ## Every pair against numpy
#
# The reference is the float64 product of the inputs as the kernel receives them (already
# rounded to 16 bits). With a float accumulator what remains is the final rounding of C to
# the input type: about 2⁻¹¹ of |C| for float16, 2⁻⁸ for bfloat16.

# %%
rng = np.random.default_rng(2)
M, N, K = 45, 70, 300
A32 = rng.uniform(-1, 1, (M, K)).astype(np.float32)
B32 = rng.uniform(-1, 1, (K, N)).astype(np.float32)
for pair in PAIRS:
    t = DTYPES[pair[0]]
    A, B = A32.astype(t), B32.astype(t)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    C = matmul(pair, A, B).astype(np.float64)
    rel = np.abs(C - ref).max() / np.abs(ref).max()
    tol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[pair[0]]
    np.testing.assert_allclose(C, ref, rtol=0, atol=tol * np.abs(ref).max())
    print(f"inputs {pair[0]:8s} accumulator {pair[1]:8s}: max |error| / max |C| = {rel:.1e} (within {tol:.0e})")

# %% [markdown]
# ## The error against K
#
# A 32×32 C (one threadgroup) for K from 16 to 4096, inputs uniform in [-1, 1] drawn as
# float32. Left: against the exact product of those float32 inputs, so the rounding of the
# inputs to 16 bits counts too. Right: against the exact product of the rounded inputs, so
# only the kernel's own arithmetic counts: a float accumulator adds one rounding at the end,
# a 16-bit accumulator one per 8-deep `simdgroup_multiply_accumulate`, K / 8 of them.

# %%
from gemmglossary.figures import precision  # the page's figure measures with the same function

Ks = list(precision.DEPTHS)
errors = precision.errors(Ks, seed=3, pairs=PAIRS, run=matmul)

print(f"{'inputs / accumulator':24s}" + "".join(f"{'K=' + str(K):>10s}" for K in Ks))
for pair in PAIRS:
    print(f"{pair[0] + ' / ' + pair[1]:24s}" + "".join(f"{e:10.1e}" for e in errors[pair]["rounded"]))
# the shape the entry describes: float accumulators stay flat, 16-bit ones grow with K
for t in ("float16", "bfloat16"):
    flat, grows = errors[(t, "float32")]["rounded"], errors[(t, t)]["rounded"]
    assert max(flat) < 3 * min(flat) and grows[-1] > 4 * grows[0] and grows[-1] > 4 * flat[-1]

# %%
fig = Figure(figsize=(10, 4), layout="constrained")
axes = fig.subplots(1, 2, sharey=True)
style = {("float32", "float32"): ("black", "-"), ("float16", "float32"): ("tab:blue", "-"),
         ("bfloat16", "float32"): ("tab:orange", "-"), ("float16", "float16"): ("tab:blue", "--"),
         ("bfloat16", "bfloat16"): ("tab:orange", "--")}
for ax, which, title in [(axes[0], "given", "against the float32 inputs as drawn"),
                         (axes[1], "rounded", "against the inputs rounded to 16 bits")]:
    for pair in PAIRS:
        colour, ls = style[pair]
        ax.loglog(Ks, errors[pair][which], ls, color=colour, marker="o", ms=4,
                  label=f"{pair[0]} in, {pair[1]} accumulator")
    ax.set_xlabel("K (reduction depth)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
axes[0].set_ylabel("max |error| / max |C|")
axes[1].legend(fontsize=8, loc="center left")
fig.suptitle("matmul_simd_half.metal on the emulator: relative error against K, 32×32 C")
last = {pair: errors[pair]["rounded"][-1] for pair in PAIRS}
show_figure(fig, f"Two log-log plots of relative error against K from {Ks[0]} to {Ks[-1]}. With a "
                 "float accumulator the float16 and bfloat16 lines stay flat (at K = "
                 f"{Ks[-1]}: {last[('float16', 'float32')]:.0e} and {last[('bfloat16', 'float32')]:.0e}), "
                 "set by the rounding of inputs and output; with a 16-bit accumulator they rise with K "
                 f"(to {last[('float16', 'float16')]:.0e} and {last[('bfloat16', 'bfloat16')]:.0e}). "
                 f"float32 stays lowest ({last[('float32', 'float32')]:.0e}).")

# %% [markdown]
# ## Range and rounding
#
# float16 keeps 10 fraction bits and 5 exponent bits: its largest finite value is 65504.
# bfloat16 keeps float32's 8 exponent bits and 7 fraction bits: the range of float32, the
# precision of two or three decimal digits. Both cases run through the float-accumulator
# kernels.

# %%
print(f"largest finite float16 {float(np.finfo(np.float16).max):g}, bfloat16 {float(ml_dtypes.finfo(bfloat16).max):.3g}")
A = np.full((1, 16), 64.0, np.float32)
B = np.full((16, 1), 64.0, np.float32)  # 16 * 64 * 64 = 65536: just past float16's range
for t in ("float16", "bfloat16"):
    out = matmul((t, "float32"), A.astype(DTYPES[t]), B.astype(DTYPES[t]))[0, 0]
    print(f"{t:8s}: 16 products of 64 * 64, summed in float, stored as {t}: {float(out)}")
x = np.float32(1 + 2 ** -8)
print(f"1 + 2^-8 = {x} as float16: {float(np.float16(x))}, as bfloat16: {float(x.astype(bfloat16))} "
      "(bfloat16 has 7 fraction bits: the 2^-8 is gone)")

# %% [markdown]
# ## Break it: accumulate in half
#
# A running sum can leave float16's range even when the result does not. Row of A: 32 × 16;
# column of B: sixteen 256s, then sixteen -256s. The exact result is 0, but halfway through
# the sum stands at 65536. The float accumulator does not care; the half one overflows to
# infinity, and infinity minus anything finite stays infinite. The numpy check catches it.

# %%
K = 32
A = np.full((1, K), 16.0, np.float16)
B = np.concatenate([np.full((K // 2, 1), 256.0), np.full((K // 2, 1), -256.0)]).astype(np.float16)
ref = A.astype(np.float64) @ B.astype(np.float64)
np.testing.assert_allclose(matmul(("float16", "float32"), A, B), ref)
print(f"float accumulator: C = {float(matmul(('float16', 'float32'), A, B)[0, 0])} (exact: {ref[0, 0]})")
try:
    np.testing.assert_allclose(matmul(("float16", "float16"), A, B), ref)
except AssertionError as err:
    print("half accumulator: " + " ".join(str(err).split())[:260])
else:
    raise AssertionError("the half accumulator should have overflowed")
