# %% [markdown]
# # Double buffering
#
# The companion of the double-buffering entry: `kernels/tiled_gemm_db.metal`, the
# double-buffered sibling of `kernels/tiled_gemm.metal`, run against numpy and against its
# single-buffered twin. Then the numbers the entry uses, computed from the two kernel files'
# constants (barriers per threadgroup, threadgroup memory), and three ways to break it: stage
# the next step into the copy being read, drop the one remaining barrier, and ask for a K step
# too deep to fit twice.
#
# Run it locally, from a checkout installed with `pip install -e '.[site]'`:
#
# ```
# python snippets/double_buffering.py
# ```
#
# Download this snippet: [double_buffering.py](double_buffering.py).
#
# On a Mac the kernels run on the GPU; elsewhere on the CPU emulator. The "Break it" cells
# always use the emulator, whose shadow memory names the two lines of a race.

# %%
import numpy as np
from matplotlib.figure import Figure

import gemmglossary as gg
from gemmglossary import emulator
from gemmglossary.kernels import KERNELS, cdiv
from gemmglossary.snippets import diagnostic, kernel_path, kernel_source, replace_once, show_figure

DB, SINGLE = KERNELS["tiled_gemm_db"], KERNELS["tiled_gemm"]  # buffers, GemmParams, constants: read from the files
c = DB.constants()
BM, BN, BK, THREADS = c["BM"], c["BN"], c["BK"], c["THREADS"]
db = gg.load_kernel(kernel_path("tiled_gemm_db.metal"), "tiled_gemm_db")
single = gg.load_kernel(kernel_path("tiled_gemm.metal"), "tiled_gemm")


def run(kernel, spec, A, B, C, **params):
    M, K = A.shape
    N = B.shape[1]
    d = spec.dispatch(M, N, K)
    kernel(A, B, C, spec.params(M, N, K, **params), threadgroups=d.threadgroups,
           threads_per_threadgroup=d.threads_per_threadgroup)
    return C


# %% [markdown]
# ## Against numpy, and against the single-buffered kernel
#
# One, two and five K steps (the prologue's copy alone; both copies; copy 0 three times), a K
# that ends in a partial step, partial tiles in M and N. The two kernels do the same
# arithmetic in the same order, so their results are not just close: they are the same bits.
# Double buffering changes when the tiles are staged, not what is computed.

# %%
rng = np.random.default_rng(7)
for M, N, K in [(70, 33, BK), (64, 130, 2 * BK), (129, 65, 5 * BK - 3)]:
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C_db = run(db, DB, A, B, np.zeros((M, N), np.float32))
    C_single = run(single, SINGLE, A, B, np.zeros((M, N), np.float32))
    np.testing.assert_allclose(C_db, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-4)
    assert np.array_equal(C_db, C_single)
    print(f"M={M:3d} N={N:3d} K={K:2d} ({cdiv(K, BK)} K steps): matches numpy (rtol=1e-5, atol=1e-4), "
          "bit-identical to tiled_gemm")

# %% [markdown]
# ## What it costs and what it saves
#
# Per threadgroup, over the whole K loop: the single-buffered kernel crosses two barriers per
# step, the double-buffered one crosses one; both cross one more before the epilogue. The price
# is a second copy of the A and B tiles in threadgroup memory. Every number below comes from the
# kernel files' constants (`gemmglossary.kernels` reads them) for the `-D` values shown.

# %%
def tile_bytes(spec, defines=None):
    k = spec.constants(defines)
    copies = 2 if spec is DB else 1
    return 4 * (copies * (k["BM"] * k["BK"] + k["BK"] * k["BN"]) + k["BM"] * k["BN"])


def barriers(spec, K, defines=None):
    steps = cdiv(K, spec.constants(defines)["BK"])
    return (2 if spec is SINGLE else 1) * steps + 1


K_big = 4096
print(f"{'kernel':14s} {'-D':10s} {'threadgroup memory':>19s} {'barriers at K=' + str(K_big):>18s}")
rows = []
for defines in [None, {"BK": 8}, {"BK": 32}]:
    for spec in (SINGLE, DB):
        nbytes = tile_bytes(spec, defines)
        rows.append((spec.name, defines, nbytes, barriers(spec, K_big, defines)))
        fits = "" if nbytes <= 32768 else "  > 32 KB: does not compile"
        print(f"{spec.name:14s} {str(defines or 'defaults'):10s} {nbytes / 1024:15.0f} KB "
              f"{barriers(spec, K_big, defines):18d}{fits}")

# %%
fig = Figure(figsize=(9, 3.6), layout="constrained")
ax_mem, ax_bar = fig.subplots(1, 2)
labels = [f"{name}\nBK={(d or {}).get('BK', BK)}" for name, d, _, _ in rows]
colours = ["tab:blue" if name == "tiled_gemm" else "tab:orange" for name, *_ in rows]
ax_mem.bar(range(len(rows)), [r[2] / 1024 for r in rows], color=colours)
ax_mem.axhline(32, color="black", lw=1, ls="--")
ax_mem.text(len(rows) - 0.5, 33, "32 KB limit", ha="right", va="bottom", fontsize=9)
ax_mem.set_ylabel("threadgroup memory (KB)")
ax_bar.bar(range(len(rows)), [r[3] for r in rows], color=colours)
ax_bar.set_ylabel(f"barriers per threadgroup, K = {K_big}")
for ax in (ax_mem, ax_bar):
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
fig.suptitle("tiled_gemm (blue) and tiled_gemm_db (orange): memory bought, barriers saved")
show_figure(fig, "Two bar charts over three K depths. Left, threadgroup memory: the "
                 f"double-buffered kernel needs {rows[1][2] // 1024} KB at BK={BK} against "
                 f"{rows[0][2] // 1024} KB, and at BK=32 more than the 32 KB limit. Right, barriers "
                 f"per threadgroup at K = {K_big}: half as many for the double-buffered kernel "
                 "at every depth.")

# %% [markdown]
# ## Break it: stage the next step into the copy being read
#
# The copy index is the whole mechanism. Stage step `s + 1` into `tileA[cur]`, the copy step
# `s` is multiplying, and a thread that has already finished its share of step `s` overwrites
# elements another simdgroup has not read yet. The variant is made from the kernel file at run
# time, on the same line, so the line numbers are the file's.

# %%
source = kernel_source("tiled_gemm_db.metal")
M, N, K = 40, 40, 3 * BK
A = rng.standard_normal((M, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)


def run_broken(edited):
    try:
        run(emulator.load_kernel(edited, "tiled_gemm_db"), DB, A, B, np.zeros((M, N), np.float32))
    except emulator.DataRaceError as err:
        print(diagnostic(err, "kernels/tiled_gemm_db.metal"))
    else:
        raise AssertionError("the emulator should have reported a race")


wrong_copy = replace_once(source, "(s + 1) * BK, tid, tileA[nxt], tileB[nxt]",
                          "(s + 1) * BK, tid, tileA[cur], tileB[cur]")
run_broken(wrong_copy)

# %% [markdown]
# ## Break it: drop the one barrier
#
# With two copies, the barrier at the top of the step is the only one in the K loop, and it
# does both jobs. Without it nothing makes step 0's reads wait for the prologue's stores.

# %%
no_barrier = replace_once(
    source,
    "        threadgroup_barrier(mem_flags::mem_threadgroup);\n        if (s + 1 < steps) {",
    "        /* the one barrier removed */\n        if (s + 1 < steps) {")
run_broken(no_barrier)

# %% [markdown]
# On a GPU there is no race check. The emulator can skip it too (`race_check=False`) and run
# the broken variants under different thread schedules. Here every element comes out wrong,
# by an amount that changes with the schedule: on hardware the symptom depends on timing,
# while the diagnostic above names the two lines.

# %%
reference = A.astype(np.float64) @ B
for name, edited in [("staged into the copy being read", wrong_copy), ("barrier removed", no_barrier)]:
    racy = emulator.load_kernel(edited, "tiled_gemm_db")
    for schedule in ["lockstep", ("random", 1), ("random", 2)]:
        C = np.zeros((M, N), np.float32)
        d = DB.dispatch(M, N, K)
        racy(A, B, C, DB.params(M, N, K), threadgroups=d.threadgroups,
             threads_per_threadgroup=d.threads_per_threadgroup, schedule=schedule, race_check=False)
        wrong = ~np.isclose(C, reference, rtol=1e-5, atol=1e-4)
        print(f"{name:32s} {str(schedule):14s} {wrong.sum():5d} of {wrong.size} elements wrong, "
              f"max |error| {np.abs(C - reference).max():.2f}")
        assert wrong.any()

# %% [markdown]
# ## Break it: a K step too deep for two copies
#
# At the defaults the two copies and the C tile fill the 32 KB exactly. A deeper step that the
# single-buffered kernel still affords, `BK=32`, does not fit twice; the kernel's
# `static_assert` turns that into a compile error rather than a launch that fails on the GPU.

# %%
try:
    emulator.load_kernel(kernel_path("tiled_gemm_db.metal"), "tiled_gemm_db", defines={"BK": 32})
except emulator.CompileError as err:
    print(diagnostic(err).splitlines()[0][:300])
else:
    raise AssertionError("BK=32 should not fit")
single_bk32 = emulator.load_kernel(kernel_path("tiled_gemm.metal"), "tiled_gemm", defines={"BK": 32})
C = np.zeros((M, N), np.float32)
d = SINGLE.dispatch(M, N, K, {"BK": 32})
single_bk32(A, B, C, SINGLE.params(M, N, K), threadgroups=d.threadgroups,
            threads_per_threadgroup=d.threads_per_threadgroup)
np.testing.assert_allclose(C, reference, rtol=1e-5, atol=1e-4)
print("tiled_gemm with BK=32 compiles and matches numpy: one copy of the tiles fits")
