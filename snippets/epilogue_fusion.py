# %% [markdown]
# # Epilogue fusion
#
# `kernels/tiled_gemm.metal` computes the whole BLAS update `C = α·A·B + β·C` in the pass
# that stores C, instead of writing `A·B` out and running a second kernel over it. This
# snippet checks the fused update against numpy (including `β = 0` over a C full of NaN),
# shows that the unfused two-pass form gives the same numbers, plots how much memory
# traffic fusion saves (a computed model), and then removes the mask of the store.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/epilogue_fusion.py
# ```
#
# Download this snippet: [epilogue_fusion.py](epilogue_fusion.py).
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

source = kernel_source("tiled_gemm.metal")
TILED_GEMM = KERNELS["tiled_gemm"]  # its buffers, struct GemmParams and dispatch, read from the file


def gemm(kernel, A, B, C, alpha, beta):
    """C = alpha*A@B + beta*C in place, with the kernel's documented dispatch."""
    (M, K), N = A.shape, B.shape[1]
    params = TILED_GEMM.params(M, N, K, alpha=alpha, beta=beta)
    d = TILED_GEMM.dispatch(M, N, K)
    kernel(A, B, C, params, threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)


rng = np.random.default_rng(4)
M, N, K = 70, 90, 24  # partial 64×64 tiles in both directions
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)
C0 = rng.standard_normal((M, N), dtype=np.float32)
alpha, beta = 0.5, -2.0

tiled_gemm = gg.load_kernel(kernel_path("tiled_gemm.metal"), "tiled_gemm")

C = C0.copy()
gemm(tiled_gemm, A, B, C, alpha, beta)
expected = alpha * (A @ B) + beta * C0
# float32: 24-term dot products, then one scale and one fused add.
np.testing.assert_allclose(C, expected, rtol=1e-5, atol=1e-5)
print(f"fused   alpha*A@B + beta*C ({M}x{N}x{K}, alpha={alpha}, beta={beta}): "
      "matches numpy (rtol=1e-5, atol=1e-5)")

# %% [markdown]
# ## The same numbers in two passes
#
# Unfused: the GEMM writes `D = A·B` (α = 1, β = 0), then a second pass reads D and C
# and writes C. Same result, one extra write and two extra reads of an M×N matrix.

# %%
D = np.zeros((M, N), np.float32)
gemm(tiled_gemm, A, B, D, 1.0, 0.0)
C_two_pass = (alpha * D + beta * C0).astype(np.float32)
np.testing.assert_allclose(C_two_pass, C, rtol=1e-6, atol=1e-6)
print("unfused (GEMM, then an axpby pass) agrees with fused to rtol=1e-6, atol=1e-6")

# %% [markdown]
# With `β = 0` the kernel never reads C (BLAS semantics), so garbage in C, even NaN,
# cannot leak into the result.

# %%
C_nan = np.full((M, N), np.nan, np.float32)
gemm(tiled_gemm, A, B, C_nan, alpha, 0.0)
np.testing.assert_allclose(C_nan, alpha * (A @ B), rtol=1e-5, atol=1e-5)
print(f"beta = 0 over a C full of NaN: {np.isnan(C_nan).sum()} NaN in the result")

# %% [markdown]
# ## Memory traffic, fused and unfused (a computed model)
#
# A **model**, not a measurement: each matrix is moved between device memory and the
# GPU the minimum number of times (A and B read once, float32). Fused: C read once (for
# β ≠ 0) and written once. Unfused: D written, then D and C read and C written. Re-reads
# of A and B panels by different threadgroups are left out; they mostly hit the cache
# and are the same in both forms.

# %%
shapes = [(4096, 4096, 4096), (4096, 4096, 1024), (4096, 4096, 256), (4096, 4096, 64)]
MiB = 2**20
rows = []
for m, n, k in shapes:
    operands = 4 * (m * k + k * n)
    fused = 4 * (2 * m * n)       # read C, write C
    unfused = 4 * (4 * m * n)     # write D; read D, read C, write C
    rows.append((m, n, k, operands / MiB, fused / MiB, unfused / MiB))
    print(f"M=N={m}, K={k:4d}: A+B {operands / MiB:6.0f} MiB; epilogue fused "
          f"{fused / MiB:4.0f} MiB vs unfused {unfused / MiB:4.0f} MiB; total saved "
          f"{1 - (operands + fused) / (operands + unfused):.0%}")

fig = Figure(figsize=(9, 4.2), layout="constrained")
ax = fig.subplots()
x = np.arange(len(rows))
w = 0.38
for offset, idx, label, color in [(-w / 2, 4, "fused", "tab:green"), (w / 2, 5, "unfused", "tab:red")]:
    ops = np.array([r[3] for r in rows])
    epi = np.array([r[idx] for r in rows])
    ax.bar(x + offset, ops, w, color="tab:gray", label="A and B (same in both)" if idx == 4 else None)
    ax.bar(x + offset, epi, w, bottom=ops, color=color, label=f"C traffic, {label}")
ax.set_xticks(x, [f"M=N={r[0]}\nK={r[2]}" for r in rows])
ax.set_ylabel("MiB moved (model: minimum traffic)")
ax.set_title("Epilogue fusion: device-memory traffic of alpha*A@B + beta*C, float32 (computed model)")
ax.legend()
show_figure(fig, "Stacked bars of modelled traffic for four shapes with M = N = 4096 and K from "
                 "4096 down to 64. The A and B part is the same for both forms; the C part doubles "
                 "without fusion, so the saving grows from "
                 f"{1 - (rows[0][3] + rows[0][4]) / (rows[0][3] + rows[0][5]):.0%} at K = 4096 to "
                 f"{1 - (rows[-1][3] + rows[-1][4]) / (rows[-1][3] + rows[-1][5]):.0%} at K = 64.")

# %% [markdown]
# ## Break it: store without the mask
#
# The 64×64 tiles at the bottom and right of C hang over its edge. Dropping the bounds
# check of the store lets those threads read and write C out of range (the edit keeps
# the line numbers of `kernels/tiled_gemm.metal`).

# %%
broken = replace_once(source, "if (gr < p.M && gc < p.N) {", "{  /* mask removed */")
C_broken = C0.copy()
try:
    gemm(emulator.load_kernel(broken, "tiled_gemm"), A, B, C_broken, alpha, beta)
except emulator.OutOfBoundsError as err:
    print(diagnostic(err, "kernels/tiled_gemm.metal"))
else:
    raise AssertionError("the emulator should have reported the store past the end of C")
