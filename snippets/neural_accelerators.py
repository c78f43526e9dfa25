# %% [markdown]
# # Neural accelerators
#
# `kernels/nax_matmul.metal` multiplies with Metal 4's `matmul2d` tensor operation. This
# snippet runs it against numpy, draws **which lane holds which element** of a 16×16 block
# of a cooperative tensor in the emulator's layout (the one MLX's `BaseNAXFrag` assumes:
# Apple leaves the layout to the implementation), runs MLX's own NAX GEMM and prints the
# warning it raises, and then calls `run` from only some lanes of a simdgroup.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/neural_accelerators.py
# ```
#
# Download this snippet: [neural_accelerators.py](neural_accelerators.py).
#
# Everything here runs on the CPU emulator, on every machine: these kernels need Metal 4
# and a GPU with neural accelerators, and no such GPU ran them for this site.

# %%
import numpy as np
from matplotlib.figure import Figure

from gemmglossary import emulator
from gemmglossary.mlx import matmul, nax
from gemmglossary.snippets import diagnostic, kernel_path, kernel_source, printed_warnings, replace_once, show_figure
from gemmglossary.tiles import cdiv


rng = np.random.default_rng(5)
M, N, K = 100, 70, 45  # partial 64×64 threadgroup tiles and a partial 32-deep K step
A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
reference = A.astype(np.float64) @ B.astype(np.float64)

nax_matmul = emulator.load_kernel(kernel_path("nax_matmul.metal"), "nax_matmul")
launch = dict(threadgroups=(cdiv(N, 64), cdiv(M, 64), 1), threads_per_threadgroup=(128, 1, 1))
C = np.zeros((M, N), np.float32)
nax_matmul(A, B, C, np.uint32(M), np.uint32(N), np.uint32(K), **launch)
# half inputs are exact in float32; the emulator sums the products in float32
np.testing.assert_allclose(C, reference, atol=1e-5 * K)
print(f"nax_matmul {M}x{N}x{K}: matches numpy (atol={1e-5 * K:.1e}), "
      f"max |error| = {np.abs(C - reference).max():.2e}")

# %% [markdown]
# ## Who holds what, in the emulator
#
# The kernel below asks for the destination cooperative tensor of a 16×16 operation, writes
# `8·lane + i` into each lane's element `i`, and stores the tensor with `store`, which puts
# every element where the layout says it belongs: each stored value names its lane. On a GPU
# the same kernel would draw Apple's layout; here it draws the emulator's.

# %%
LANE_MAP = """
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

kernel void lane_map(device float* out  [[buffer(0)]],
                     ushort        lane [[thread_index_in_simdgroup]])
{
    using extents_t = dextents<int32_t, 2>;
    auto t = tensor<device float, extents_t, tensor_inline>(out, extents_t(16, 16));
    constexpr auto desc = matmul2d_descriptor(16, 16, 16);
    matmul2d<desc, execution_simdgroup> op;
    auto d = op.get_destination_cooperative_tensor<decltype(t), decltype(t), float>();
    for (uint16_t i = 0; i < d.get_capacity(); ++i)
        d[i] = float(d.get_capacity() * lane + i);   // this lane's element i
    d.store(t);
}
"""
out = np.zeros((16, 16), np.float32)
emulator.load_kernel(LANE_MAP, "lane_map")(out, threads=32, threads_per_threadgroup=32)
code = out.astype(int)
lane, slot = code // 8, code % 8
assert sorted(code.ravel()) == list(range(256)), "each lane holds eight elements"

# BaseNAXFrag::get_coord in MLX's nax.h, element by element
for ln in range(32):
    qid = ln >> 2
    fm, fn = (qid & 4) | ((ln >> 1) & 3), ((qid & 2) | (ln & 1)) * 4
    for i in range(8):
        r, c = fm + (i >> 2) * 8, fn + i % 4
        assert lane[r, c] == ln and slot[r, c] == i
print("the emulator's layout is MLX's: lane l holds rows fm and fm + 8, columns fn to fn + 3, with "
      "fm = (l/4 & 4) | (l/2 & 3) and fn = 4·((l/4 & 2) | (l & 1))")

# %%
fig = Figure(figsize=(8.4, 7.2), layout="constrained")
ax = fig.subplots()
im = ax.imshow(lane, cmap="tab20b", vmin=-0.5, vmax=31.5, interpolation="nearest")
for (r, c), ln in np.ndenumerate(lane):
    ax.text(c, r, f"{ln}\n[{slot[r, c]}]", ha="center", va="center", fontsize=7, color="white")
ax.set_xticks(range(16))
ax.set_yticks(range(16))
ax.set_xlabel("column")
ax.set_ylabel("row")
ax.axhline(7.5, color="black", lw=1.5)
for q in (3.5, 7.5, 11.5):
    ax.axvline(q, color="black", lw=0.8 if q != 7.5 else 1.5)
fig.colorbar(im, ax=ax, shrink=0.8, label="simd lane")
ax.set_title("16×16 cooperative tensor block: which lane holds each element\n"
             "(lane id, and [i] of the lane's elements), in the emulator's layout", fontsize=10)
show_figure(fig, "A 16 by 16 grid labelled with the lane that holds each element: every lane holds "
                 "four adjacent elements of a row and the same four columns eight rows further down. "
                 f"Row 0 holds lanes {', '.join(str(x) for x in sorted(set(lane[0])))}; "
                 f"row 4 holds lanes {', '.join(str(x) for x in sorted(set(lane[4])))}")

# %% [markdown]
# ## MLX's NAX GEMM, and the warning it raises
#
# `steel_gemm_fused_nax` from the pinned MLX headers, unmodified, planned by
# `gemmglossary.mlx.nax` with the tile MLX's host code picks for a base device with neural
# accelerators. Its `BaseNAXFrag::mma` copies each lane's fragment into the cooperative
# tensors by index, which is right only in the layout above: the emulator says so.

# %%
device = nax.DEFAULT_DEVICE
a = rng.uniform(-1, 1, (256, 512)).astype(np.float16)
b = rng.uniform(-1, 1, (512, 256)).astype(np.float16)
route = matmul.route(matmul.Problem(256, 256, 512, "float16"), device)
plan = nax.plan(a, b, device=device)
assert route.kernel == "fused_nax" and route.kernel_name == plan.host_name
source = kernel_path("mlx_steel_gemm_nax.metal")  # our instantiation file of MLX's kernel
assert source == nax.source_path()
kernel = emulator.load_kernel(source, plan.host_name, function_constants=plan.function_constants,
                              include_dirs=nax.include_dirs())
with printed_warnings():
    kernel(plan.buffers, threadgroups=plan.threadgroups, threads_per_threadgroup=plan.threads_per_threadgroup)
ref = a.astype(np.float64) @ b.astype(np.float64)
np.testing.assert_allclose(plan.out.astype(np.float64), ref, rtol=2.0**-11, atol=1e-5 * 512)
print(f"{plan.host_name}: {route.config.label()}, {route.threads} threads per threadgroup, "
      f"{plan.threadgroups} threadgroups; matches numpy")

# %% [markdown]
# ## Break it: call run only where the rows are inside the matrix
#
# A guard that is natural in per-thread code: give the kernel each thread's lane and let
# only the lanes whose row of the tile is inside `A` take part in the K loop. With `M = 100`
# the last row of simdgroups starts at row 96, so lanes 4 to 31 there skip `run`, and the
# operation, which needs every thread of its execution scope, is reached by part of a
# simdgroup.

# %%
broken = replace_once(kernel_source("nax_matmul.metal"), "ushort sg [[simdgroup_index_in_threadgroup]])",
                      "ushort sg [[simdgroup_index_in_threadgroup]], ushort lane [[thread_index_in_simdgroup]])")
broken = replace_once(broken, "        op.run(a, b, acc);", "        if (row0 + lane < int(M)) op.run(a, b, acc);")
try:
    emulator.load_kernel(broken, "nax_matmul")(A, B, np.zeros((M, N), np.float32), np.uint32(M), np.uint32(N),
                                               np.uint32(K), **launch)
except emulator.SimdgroupDivergenceError as err:
    print(diagnostic(err, "kernels/nax_matmul.metal"))
else:
    raise AssertionError("a run reached by part of a simdgroup should be reported")
