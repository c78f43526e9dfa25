# %% [markdown]
# # Quantized matmul
#
# MLX stores a quantized weight matrix as packed 4-bit (or 2-, 3-, 5-, 6-, 8-bit)
# integers, one scale and one bias per group of consecutive weights of a row, and
# multiplies with it without ever rebuilding the float matrix. This snippet quantizes a
# matrix the way `mx.quantize` does (and checks it bit for bit against MLX itself), reads
# the packed words apart, runs the first-party 4-bit kernel `kernels/qmv4.metal` and
# MLX's own `qmv_fast` (`quantized.h`) on the emulator against numpy, shows which kernel
# MLX picks for which shape, and breaks `qmv4` twice.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/quantized_matmul.py
# ```
#
# Download this snippet: [quantized_matmul.py](quantized_matmul.py).
#
# On a Mac the first-party kernel runs on the GPU; MLX's kernel and the "Break it" cells
# use the CPU emulator.

# %%
import mlx.core as mx
import numpy as np

import gemmglossary as gg
from gemmglossary import emulator, traffic
from gemmglossary.kernels import MATVEC_KERNELS
from gemmglossary.mlx import affine
from gemmglossary.snippets import diagnostic, kernel_path, kernel_source, replace_once, show_figure

QMV4 = MATVEC_KERNELS["qmv4"]
GROUP = QMV4.constants()["GROUP_SIZE"]
N, K = 37, 320  # 5 threadgroups of 8 rows, the last with 5; one full 256-weight step and a partial one
rng = np.random.default_rng(0)
# Rows whose groups have different ranges, so a wrong scale shows.
W = (rng.standard_normal((N, K)) * rng.uniform(0.1, 2.0, (N, K // GROUP)).repeat(GROUP, axis=1)).astype(np.float32)
Q = affine.quantize(W, GROUP, 4)
print(f"W {W.shape} float32 -> wq {Q.wq.shape} {Q.wq.dtype}, scales {Q.scales.shape}, biases {Q.biases.shape} "
      f"(group size {GROUP})")

wq, scales, biases = mx.quantize(mx.array(W), group_size=GROUP, bits=4)
assert np.array_equal(np.array(wq), Q.wq)
assert np.array_equal(np.array(scales), Q.scales) and np.array_equal(np.array(biases), Q.biases)
print(f"identical, bit for bit, to mx.quantize(W, group_size={GROUP}, bits=4) on this machine's MLX")

# %% [markdown]
# ## One word, eight weights
#
# Weight `k` of a row sits in bits `4·(k mod 8)` to `4·(k mod 8) + 3` of word `k / 8`:
# the first weight in the lowest nibble. Each is an integer `q` in 0..15, and the weight
# it stands for is `scale · q + bias` with the scale and bias of its group. Rounding to
# the nearest `q` costs at most half a step, except at one end of a group: MLX makes the
# extreme of larger magnitude exact, and weights near the other extreme, clipped to 0 or
# 15, can then be up to a step away.

# %%
word = int(Q.wq[0, 0])
nibbles = [(word >> (4 * j)) & 0xF for j in range(8)]
assert nibbles == list(affine.unpack(Q.wq, 4)[0, :8])
print(f"wq[0][0] = 0x{word:08X}; nibbles, lowest first = weights 0..7 of row 0: {nibbles}")
s0, b0 = float(Q.scales[0, 0]), float(Q.biases[0, 0])
print(f"group 0 of row 0: scale {s0:+.5f}, bias {b0:+.5f}")
for j in range(3):
    print(f"  weight {j}: {s0:+.5f} * {nibbles[j]:2d} {b0:+.5f} = {s0 * nibbles[j] + b0:+.5f}   (W had {W[0, j]:+.5f})")
dense = affine.dequantize(Q)
steps = np.abs(dense - W) / np.abs(Q.scales.astype(np.float64)).repeat(GROUP, axis=1)
far = steps > 0.5
q_all = affine.unpack(Q.wq, 4)
assert set(q_all[far].tolist()) <= {0, 15}
print(f"|W - dequantized W| is at most {steps.max():.2f} of its group's step |scale|; the {far.sum()} of {W.size} "
      f"weights more than half a step off all sit at the far end of their group, clipped to q = 0 or 15")

# %% [markdown]
# ## qmv4 against numpy
#
# The reference is the dequantized matrix times `x`, in float64.

# %%
x = rng.uniform(-1, 1, K).astype(np.float32)
d = QMV4.dispatch(N)
launch = dict(threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
args = dict(wq=Q.wq, scales=Q.scales, biases=Q.biases, x=x, N=N, K=K)
y = np.full(N, np.nan, np.float32)
gg.load_kernel(kernel_path("qmv4.metal"), "qmv4")(*QMV4.arguments(y=y, **args), **launch)
ref = dense @ x
np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-4)
print(f"qmv4 {N}x{K}, {d.threadgroups[0]} threadgroups of {d.threads_per_threadgroup[0]} threads: matches numpy")

# %% [markdown]
# ## What the packing saves
#
# A `4096 × 4096` matrix-vector product in float16 against the same product with 4-bit
# weights and a float16 scale and bias per group of 64: the bytes each must move at
# least, and how long those bytes take at the read bandwidth m5-gemm's author measured on
# an M5 Max (`gemmglossary.traffic.MACHINE`; nothing here was timed on a GPU).

# %%
dense16, packed4 = traffic.gemv(4096, 4096, "float16"), traffic.qmv(4096, 4096, 4, 64, "float16")
for name, t in [("float16 weights", dense16), ("4-bit weights", packed4)]:
    print(f"{name:16s} {t.bytes / 2**20:6.2f} MiB  {t.flop_per_byte:5.2f} FLOP/byte  "
          f"at least {t.seconds_at() * 1e6:5.1f} µs")
print(f"the 4-bit product moves {dense16.bytes / packed4.bytes:.2f}x fewer bytes")

# %% [markdown]
# ## MLX's qmv_fast on the emulator
#
# `gemmglossary.mlx.quantized.plan` dispatches MLX's kernel as MLX's host code does; for
# one row of `x`, `N` a multiple of 8 and `K` a multiple of the kernel's 512-weight step,
# that is `qmv_fast`, which reads without bounds checks. Our kernel computes the same
# product from the same buffers.

# %%
from gemmglossary.mlx import quantized

assert quantized.SOURCE == "mlx_quantized.metal"  # the instantiations of MLX's quantized.h in kernels/
Wf = rng.standard_normal((16, 512)).astype(np.float32)
Qf = affine.quantize(Wf, 64, 4)
xf = rng.uniform(-1, 1, (1, 512)).astype(np.float32)
plan = quantized.plan(xf, Qf)
out_mlx = plan.run()
ref_f = xf.astype(np.float64) @ affine.dequantize(Qf).T
np.testing.assert_allclose(out_mlx, ref_f, rtol=1e-4, atol=1e-4)
ours = np.full(16, np.nan, np.float32)
gg.load_kernel(kernel_path("qmv4.metal"), "qmv4")(
    *QMV4.arguments(wq=Qf.wq, scales=Qf.scales, biases=Qf.biases, x=xf[0], y=ours, N=16, K=512),
    threadgroups=QMV4.dispatch(16).threadgroups, threads_per_threadgroup=QMV4.dispatch(16).threads_per_threadgroup)
np.testing.assert_allclose(ours, out_mlx[0], rtol=1e-5, atol=1e-5)
print(f"{plan.host_names[0]}: matches numpy, and qmv4 on the same buffers matches it")

# %% [markdown]
# ## Which kernel MLX runs
#
# For `x @ Wᵀ` (a linear layer) MLX picks a matrix-vector kernel while `x` has fewer rows
# than a limit that depends on the device and on K and N, and a matrix-matrix kernel from
# there on (`gemmglossary.mlx.quantized.choose_kernel`, restated from `quantized.cpp`).
# The table is for a 4096 × 4096 layer with 4-bit weights in groups of 64.

# %%
from gemmglossary.mlx.matmul import Device

rows_of_x = [1, 2, 4, 8, 16, 32, 64]
devices = [("generation 13, class g", Device("g", 13)), ("generation 15, class g", Device("g", 15)),
           ("generation 17, class s", Device("s", 17))]
print(f"{'rows of x':>10s} " + " ".join(f"{name:>24s}" for name, _ in devices))
for m in rows_of_x:
    picks = [quantized.choose_kernel(quantized.Problem(m, 4096, 4096, 1), transpose=True, bits=4, group_size=64,
                                     device=dev) for _, dev in devices]
    print(f"{m:>10d} " + " ".join(f"{p:>24s}" for p in picks))

# %% [markdown]
# ## Break it: the nibbles in the wrong order
#
# Reading the word from its top nibble down (as if the first weight were the most
# significant) pairs every `x[k + j]` with weight `k + 7 - j`. Every read is in bounds;
# only the numpy check sees it.

# %%
source = kernel_source("qmv4.metal")


def run_edited(src, **options):
    y = np.full(N, np.nan, np.float32)
    emulator.load_kernel(src, "qmv4")(*QMV4.arguments(y=y, **args), **launch, **options)
    return y


backwards = replace_once(source, "(word >> (BITS * j))", "(word >> (BITS * (PACK - 1 - j)))")
y_bad = run_edited(backwards)
try:
    np.testing.assert_allclose(y_bad, ref, rtol=1e-5, atol=1e-4)
except AssertionError as err:
    print("numpy check:", str(err).strip().splitlines()[2])
else:
    raise AssertionError("the numpy check should have failed")
flipped = affine.Quantized(affine.pack(affine.unpack(Q.wq, 4).reshape(N, -1, 8)[..., ::-1].reshape(N, K), 4),
                           Q.scales, Q.biases, GROUP, 4)
np.testing.assert_allclose(y_bad, affine.dequantize(flipped) @ x, rtol=1e-5, atol=1e-4)
print("y is the product with the eight weights of every word reversed")

# %% [markdown]
# ## Break it: a group boundary off by one
#
# A word's weights run from `k` to `k + 7`. Taking its group from `k + 8`, one past its
# last weight, gives the last word of every group the next group's scale and bias. On
# the last row that "next group" lies past the end of `scales`, and the emulator stops
# there. Letting out-of-bounds reads return 0 instead (`oob_reads="warn"`) shows what the
# same mistake does everywhere else: the output is wrong on every row, by the last word
# of each group.

# %%
off_by_one = replace_once(source, "const uint g = k / GROUP_SIZE;", "const uint g = (k + PACK) / GROUP_SIZE;")
try:
    run_edited(off_by_one)
except emulator.OutOfBoundsError as err:
    print(diagnostic(err, "kernels/qmv4.metal"))
else:
    raise AssertionError("the emulator should have reported the read past the scales")

import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    y_bad = run_edited(off_by_one, oob_reads="warn")
print(f"with oob_reads='warn': {len(caught)} warning(s), the first: {diagnostic(caught[0]).splitlines()[0][:120]}...")
wrong = ~np.isclose(y_bad, ref, rtol=1e-5, atol=1e-4)
print(f"{wrong.sum()} of {N} outputs wrong")
assert wrong.sum() > N // 2

# %% [markdown]
# ## Where the bits go
#
# The first 64 weights of row 0: each packed word, the nibble each weight occupies, and
# the scale each group hands them.

# %%
import matplotlib.pyplot as plt

q_row = affine.unpack(Q.wq, 4)[0, :64]
fig, ax = plt.subplots(figsize=(6.8, 2.4))
ax.bar(np.arange(64), q_row, color=[f"C{(k // 8) % 2}" for k in range(64)], width=0.85)
for w in range(8):
    ax.text(w * 8 + 3.5, 16.3, f"wq[0][{w}]", ha="center", fontsize=7)
ax.set_ylim(0, 18)
ax.set_xlim(-0.6, 63.6)
ax.set_xlabel("weight k of row 0 (one group of 64: one scale, one bias)")
ax.set_ylabel("q (4 bits)")
ax.set_title("Eight nibbles per word, lowest first", fontsize=9)
show_figure(fig, "The 4-bit integers q of weights 0 to 63 of row 0, as bars alternating colour by word: "
            "eight per 32-bit word, all in the one group that shares a scale and a bias")
