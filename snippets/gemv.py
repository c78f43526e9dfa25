# %% [markdown]
# # GEMV: the matrix-vector product
#
# `y = A·x` reads every element of `A` once and does one multiply-add with it. This
# snippet runs `kernels/gemv.metal` against numpy, computes how many bytes each FLOP of a
# matrix-vector product must move compared with a matrix-matrix product, runs MLX's own
# `gemv` and `gemv_t` kernels (`gemv.h`) on the emulator as MLX's host code would
# dispatch them (with the two places where they rely on more than the Metal specification
# promises), and then breaks the first-party kernel twice.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/gemv.py
# ```
#
# Download this snippet: [gemv.py](gemv.py).
#
# On a Mac the first-party kernel runs on the GPU; MLX's kernels and the "Break it" cells
# use the CPU emulator, which names the line of an out-of-bounds read or of a simdgroup
# function that only part of a simdgroup reached.

# %%
import numpy as np

import gemmglossary as gg
from gemmglossary import emulator, traffic
from gemmglossary.kernels import MATVEC_KERNELS
from gemmglossary.snippets import diagnostic, kernel_path, kernel_source, replace_once, show_figure

GEMV = MATVEC_KERNELS["gemv"]
c = GEMV.constants()
print(f"gemv.metal: {c['SIMDGROUPS']} simdgroups of 32 lanes, {c['ROWS']} rows per simdgroup, "
      f"{c['VEC']} elements per lane and step, so a step covers {c['STEP']} columns")

rng = np.random.default_rng(0)
M, K = 37, 300  # 3 threadgroups of 16 rows, the last with 5; 2 whole steps and a tail of 44 columns
A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
x = rng.uniform(-1, 1, K).astype(np.float32)
d = GEMV.dispatch(M)
launch = dict(threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
print(f"dispatch for M = {M}: {d.threadgroups[0]} threadgroups of {d.threads_per_threadgroup[0]} threads")

y = np.full(M, np.nan, np.float32)
gg.load_kernel(kernel_path("gemv.metal"), "gemv")(*GEMV.arguments(A=A, x=x, y=y, M=M, K=K), **launch)
np.testing.assert_allclose(y, A.astype(np.float64) @ x, rtol=1e-5, atol=1e-5)
print(f"gemv {M}x{K}: matches numpy (rtol=1e-5, atol=1e-5)")

# %% [markdown]
# ## FLOP per byte
#
# A product has to read its operands and write its result at least once. For a
# matrix-vector product that is the whole matrix for `2·M·K` FLOPs; a square matrix
# product reuses every element it reads `N` times. The measured figures are the ones
# m5-gemm's author reports for an M5 Max (`gemmglossary.traffic.MACHINE`); nothing here
# was timed on a GPU.

# %%
m5 = traffic.MACHINE
print(f"{m5.name}: {m5.read_bytes_per_s / 1e9:g} GB/s read, {m5.gemm_flop_per_s / 1e12:g} TFLOP/s float32 GEMM; "
      f"a kernel needs {m5.ridge:.1f} FLOP per byte before the arithmetic, not the memory, limits it")
print()
print(f"{'product':34s} {'MiB moved':>10s} {'FLOP/byte':>10s} {'µs moving':>10s} {'µs computing':>13s} "
      f"{'GFLOP/s at most':>16s}")
rows = [
    ("gemv 4096 x 4096, float32", traffic.gemv(4096, 4096, "float32")),
    ("gemv 4096 x 4096, float16", traffic.gemv(4096, 4096, "float16")),
    ("gemv 4096 x 4096, 4-bit weights", traffic.qmv(4096, 4096, bits=4, group_size=64, dtype="float16")),
    ("gemm 4096 x 4096 x 4096, float32", traffic.gemm(4096, 4096, 4096, "float32")),
]
for name, t in rows:
    print(f"{name:34s} {t.bytes / 2**20:10.2f} {t.flop_per_byte:10.2f} {t.seconds_at() * 1e6:10.1f} "
          f"{t.seconds_computing() * 1e6:13.1f} {t.flop_rate_at() / 1e9:16.0f}")
print("(µs moving: the bytes at the read bandwidth; µs computing: the FLOPs at the float32 GEMM rate; "
      "the larger is a lower bound on the time. The 4-bit row keeps its scales, biases, x and y in float16.)")

# %% [markdown]
# Between the two extremes, a product with `M` rows of `x` against one `4096 × 4096`
# matrix (a batch of `M` tokens through one layer) reuses each weight `M` times. Its
# FLOPs per byte grow with `M` until the arithmetic, not the memory, sets the limit.

# %%
import matplotlib.pyplot as plt

Ms = 2 ** np.arange(0, 13)
intensity = [traffic.gemm(int(m), 4096, 4096, "float32").flop_per_byte for m in Ms]
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.loglog(Ms, intensity, "o-", label="x (M × 4096) @ W (4096 × 4096), float32")
ax.axhline(m5.ridge, color="grey", linestyle="--", label=f"ridge of the M5 Max figures: {m5.ridge:.1f} FLOP/byte")
ax.set_xlabel("M, rows of x")
ax.set_ylabel("FLOP per byte moved (at best)")
ax.set_xticks(Ms, [str(m) for m in Ms], fontsize=8)
ax.legend(fontsize=8)
ax.set_title("A matrix-vector product (M = 1) sits far below the ridge")
crossing = next(int(m) for m, i in zip(Ms, intensity) if i >= m5.ridge)
show_figure(fig, f"FLOPs per byte of x @ W against the rows of x, log-log: {intensity[0]:.2f} at M = 1, rising "
            f"about linearly, first above m5-gemm's measured ridge of {m5.ridge:.1f} FLOP per byte at M = {crossing}")

# %% [markdown]
# ## MLX's gemv and gemv_t
#
# MLX sends a product with one row (or one column) to its matrix-vector kernels
# (`gemmglossary.mlx.matmul.route` restates that choice). `W @ x`, with the matrix's rows
# along K, runs `gemv`; `x @ W`, reading the matrix down its columns, runs `gemv_t`.
# `gemmglossary.mlx.gemv.plan` binds the buffers as MLX's host code does; the kernels are
# MLX's `gemv.h`, unmodified, instantiated in `kernels/mlx_gemv.metal`.

# %%
from gemmglossary.mlx import gemv as mlx_gemv
from gemmglossary.mlx import matmul

W = rng.uniform(-1, 1, (67, 200)).astype(np.float32)   # 67 outputs, K = 200
v = rng.uniform(-1, 1, (200, 1)).astype(np.float32)
row = rng.uniform(-1, 1, (1, 70)).astype(np.float32)   # x @ W2: K = 70, 128 outputs
W2 = rng.uniform(-1, 1, (70, 128)).astype(np.float32)
for a, b, what in [(W, v, "W @ x"), (row, W2, "x @ W")]:
    r = matmul.route(matmul.Problem(a.shape[0], b.shape[1], a.shape[1]), matmul.Device("g", 13))
    plan = mlx_gemv.plan(a, b)
    out = plan.run()
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    mlx_launch = plan.launches[0]
    print(f"{what} {a.shape} @ {b.shape}: route {r.kernel!r}, kernel {mlx_launch.host_name}")
    print(f"    {mlx_launch.threadgroups} threadgroups of {mlx_launch.threads_per_threadgroup} threads; matches numpy")

# %% [markdown]
# ## What MLX's gemv relies on
#
# Two shapes take paths the Metal specification does not promise. `x @ W` with 130
# outputs leaves a partial last column block in `gemv_t`: some lanes of a simdgroup enter
# the K loop's barrier while the others go on to the shuffle. A long K with few outputs
# makes `gemv` split K over 8 simdgroups (`bn8`), whose sums meet in threadgroup memory
# behind a `mem_none` barrier that only lane 0 of each simdgroup reaches. Both match
# numpy on the emulator, which reports what is not portable as `PortabilityWarning`s.
# (The second kernel is instantiated in `kernels/mlx_gemv.metal` for bfloat16 with a
# batch and a bias; the shapes below are those.)

# %%
from gemmglossary.mlx.launch import bfloat16
from gemmglossary.snippets import printed_warnings

W3 = rng.uniform(-1, 1, (70, 130)).astype(np.float32)
with printed_warnings("kernels/mlx_gemv.metal", limit=1):
    plan = mlx_gemv.plan(row, W3)
    out = plan.run()
np.testing.assert_allclose(out, row.astype(np.float64) @ W3, rtol=1e-4, atol=1e-4)
print(f"{plan.host_names[0]}, 130 outputs: matches numpy")

a4 = rng.uniform(-1, 1, (2, 3, 10, 1000)).astype(bfloat16)
b4 = rng.uniform(-1, 1, (2, 1, 1000, 1)).astype(bfloat16)
c4 = rng.uniform(-1, 1, (10, 1)).astype(bfloat16)
with printed_warnings("kernels/mlx_gemv.metal", limit=2):
    plan = mlx_gemv.plan(a4, b4, c4, alpha=0.5, beta=2.0)
    out = plan.run()
ref4 = 0.5 * (a4.astype(np.float64) @ b4.astype(np.float64)) + 2.0 * c4.astype(np.float64)
np.testing.assert_allclose(out.astype(np.float64), ref4, rtol=2e-2, atol=5e-2)
print(f"{plan.host_names[0]}: matches numpy (bfloat16 tolerances)")

# %% [markdown]
# ## Break it: no guard on the last step
#
# The tail loop reads `x[k + j]` only when `k + j < K`. Drop the test and the lanes past
# the end read beyond `x` (and, for every row but the last, the next row of `A`, which
# is inside the buffer and so goes unnoticed). The emulator bounds-checks every access
# and stops at the first read past `x`.

# %%
source = kernel_source("gemv.metal")


def run_edited(src, **options):
    y = np.full(M, np.nan, np.float32)
    emulator.load_kernel(src, "gemv")(*GEMV.arguments(A=A, x=x, y=y, M=M, K=K), **launch, **options)
    return y


unguarded = replace_once(source, "        if (k + j < K) {\n", "        {  // guard removed\n")
try:
    run_edited(unguarded)
except emulator.OutOfBoundsError as err:
    print(diagnostic(err, "kernels/gemv.metal"))
else:
    raise AssertionError("the emulator should have reported the read past x")

# %% [markdown]
# ## Break it: simd_sum called by one lane
#
# Only lane 0 stores, so it is tempting to move the reduction into the store's `if`.
# Nothing fails: a simdgroup function combines the lanes that are active when it is
# called, and inside that `if` only lane 0 is. So `simd_sum` returns lane 0's own partial
# sum, the columns `k` with `k mod 128 < 4`, and only the numpy check sees it.

# %%
lane0 = replace_once(source, """        const float total = simd_sum(acc[r]);
        if (lane == 0 && r < rows) {
            y[row0 + r] = total;""", """        if (lane == 0 && r < rows) {
            y[row0 + r] = simd_sum(acc[r]);  // inside lane 0's if""")
y_bad = run_edited(lane0)
ref = A.astype(np.float64) @ x
try:
    np.testing.assert_allclose(y_bad, ref, rtol=1e-5, atol=1e-5)
except AssertionError as err:
    print("numpy check:", str(err).strip().splitlines()[2])
else:
    raise AssertionError("the numpy check should have failed")
mine = [k for k in range(K) if k % c["STEP"] < c["VEC"]]
np.testing.assert_allclose(y_bad, A[:, mine].astype(np.float64) @ x[mine], rtol=1e-5, atol=1e-5)
print(f"each y[i] is lane 0's share alone: {len(mine)} of the {K} columns")
