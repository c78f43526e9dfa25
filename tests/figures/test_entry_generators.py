"""The figures of the decode and GEMM entries (gemv-rows, quantized-word, shuffle-tree,
splitk-partitions, matmul-route, precision-error) against what the kernels and MLX's host
code do.

Each test recomputes what a figure shows by another route (a launch made to leave rows
unwritten, a kernel variant that returns one lane's partial sums, a unit vector through
qmv4, MLX's split-K partials read back from the emulator, route() cell by cell) and, where
it is cheap, shows that a wrong kernel makes the generator refuse.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from gemmglossary import emulator
from gemmglossary.figures import FigureError, generate
from gemmglossary.figures import matvec, precision, quantized, route, shuffle, splitk
from gemmglossary.kernels import MATVEC_KERNELS


def texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def titles(svg: str) -> list[str]:
    return re.findall(r"<rect[^>]*><title>([^<]*)</title></rect>", svg)


# ----------------------------------------------------------------------------- gemv-rows

def _matvec_buffers(kernel: str, M: int, K: int, rng):
    """(buffers by parameter name, the dense matrix they stand for, x)."""
    x = rng.uniform(-1, 1, K).astype(np.float32)
    y = np.full(M, np.nan, np.float32)
    if kernel == "gemv":
        A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
        return dict(A=A, x=x, y=y, M=M, K=K), A.astype(np.float64), x
    from gemmglossary.mlx import affine

    c = MATVEC_KERNELS[kernel].constants()
    qw = affine.quantize(rng.uniform(-1, 1, (M, K)).astype(np.float32), c["GROUP_SIZE"], 4)
    return (dict(wq=qw.wq, scales=qw.scales, biases=qw.biases, x=x, y=y, N=M, K=K),
            affine.dequantize(qw), x)


@pytest.mark.parametrize("kernel,M,K", [("gemv", 40, 300), ("qmv4", 20, 640)])
def test_gemv_rows_owners_are_the_rows_a_launch_leaves_out(kernel, M, K):
    """Launched with one threadgroup too few, or one simdgroup too few per threadgroup, the
    kernel leaves exactly the rows the figure gives to that threadgroup or simdgroup unwritten."""
    m = matvec.matvec_map(kernel, M, K)
    spec = MATVEC_KERNELS[kernel]
    k = emulator.load_kernel(spec.path, spec.name)
    d = spec.dispatch(M)
    rng = np.random.default_rng(0)
    for drop in ("threadgroup", "simdgroup"):
        values, dense, x = _matvec_buffers(kernel, M, K, rng)
        groups, threads = d.threadgroups, d.threads_per_threadgroup
        if drop == "threadgroup":
            groups = (groups[0] - 1, 1, 1)
            expected_missing = m.owner[:, 0] == d.threadgroups[0] - 1
        else:
            threads = (threads[0] - 32, 1, 1)
            expected_missing = m.owner[:, 1] == m.simdgroups - 1
        k(*spec.arguments(**values), threadgroups=groups, threads_per_threadgroup=threads)
        y = values["y"]
        assert np.array_equal(np.isnan(y), expected_missing), f"{kernel} without its last {drop}"
        np.testing.assert_allclose(y[~expected_missing], (dense @ x)[~expected_missing], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel,M,K", [("gemv", 8, 300), ("qmv4", 8, 640)])
def test_gemv_rows_lanes_read_the_columns_the_figure_gives_them(kernel, M, K):
    """A variant of the kernel returns one lane's partial sums instead of simd_sum's total:
    each must be the sum over exactly the columns the figure gives that lane."""
    spec = MATVEC_KERNELS[kernel]
    source = spec.source()
    total = "const float total = simd_sum(acc[r]);"
    last_buffer = "    constant uint&      K    [[buffer(4)]]," if kernel == "gemv" else \
        "    constant uint&      K      [[buffer(6)]],"
    assert source.count(total) == 1 and source.count(last_buffer) == 1, "the kernel changed: update this probe"
    index = 5 if kernel == "gemv" else 7
    probe = source.replace(total, "const float total = simd_shuffle(acc[r], ushort(probe));").replace(
        last_buffer, last_buffer + f"\n    constant uint&      probe  [[buffer({index})]],")
    k = emulator.load_kernel(probe, spec.name)
    m = matvec.matvec_map(kernel, M, K)
    d = spec.dispatch(M)
    rng = np.random.default_rng(1)
    values, dense, x = _matvec_buffers(kernel, M, K, rng)
    for lane in range(32):
        values["y"][:] = np.nan
        k(*spec.arguments(**values), np.uint32(lane), threadgroups=d.threadgroups,
          threads_per_threadgroup=d.threads_per_threadgroup)
        cols = m.lane == lane
        np.testing.assert_allclose(values["y"], dense[:, cols] @ x[cols], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{kernel} lane {lane}")


def test_gemv_rows_refuses_what_the_kernel_cannot_do():
    with pytest.raises(FigureError, match="GROUP_SIZE"):
        matvec.matvec_map("qmv4", 8, 100)
    with pytest.raises(FigureError, match="kernel= must be one of"):
        generate("gemv-rows", {"kernel": "tiled_gemm"}, use_cache=False)


# ----------------------------------------------------------------------------- quantized-word

def test_quantized_word_fields_are_what_qmv4_multiplies():
    """x = the unit vector of weight j through qmv4 returns scale * q_j + bias: the weight
    the figure says field j of word 0 stands for."""
    r = quantized.quantized_row(4, 64)
    assert [(r.word >> (4 * j)) & 15 for j in range(8)] == [int(v) for v in r.q], "lowest bits first"
    spec = MATVEC_KERNELS["qmv4"]
    assert spec.constants()["GROUP_SIZE"] == r.group_size
    from gemmglossary.mlx import affine

    qw = affine.quantize(r.w[None, :], r.group_size, r.bits)
    assert int(qw.wq[0, 0]) == r.word
    k = emulator.load_kernel(spec.path, spec.name)
    d = spec.dispatch(1)
    for j in range(8):
        x = np.zeros(r.w.size, np.float32)
        x[j] = 1
        y = np.full(1, np.nan, np.float32)
        k(*spec.arguments(wq=qw.wq, scales=qw.scales, biases=qw.biases, x=x, y=y, N=1, K=r.w.size),
          threadgroups=d.threadgroups, threads_per_threadgroup=d.threads_per_threadgroup)
        assert y[0] == pytest.approx(r.dequantized[j], rel=1e-6, abs=1e-6), f"weight {j}"
    shown = texts(quantized.quantized_word(bits=4, group_size=64).svg)
    assert [f"q={int(v)}" for v in r.q] == [t for t in shown if t.startswith("q=")], "the fields of w0 ... w7"
    assert f"{r.dequantized[0]:+.3f}" in shown


# ----------------------------------------------------------------------------- shuffle-tree

def test_shuffle_tree_draws_the_recorded_steps():
    steps = shuffle.shuffle_steps()
    fig = shuffle.shuffle_tree()
    shown = texts(fig.svg)
    for level in range(shuffle.LEVELS + 1):
        for lane in range(32 >> level):
            assert f"{steps[level, lane]:.0f}" in shown
    assert "496" in shown and "= 496" in shown


def test_shuffle_tree_refuses_a_kernel_that_skips_a_step():
    source = (shuffle.kernels_dir() / "reductions.metal").read_text(encoding="utf-8")
    loop = "for (ushort offset = 16; offset > 0; offset /= 2) {"
    assert source.count(loop) == 1
    with pytest.raises(FigureError, match="not the halving"):
        shuffle.shuffle_steps(source.replace(loop, "for (ushort offset = 8; offset > 0; offset /= 2) {"))


# ----------------------------------------------------------------------------- splitk-partitions

def test_splitk_bounds_are_the_slices_mlx_kernel_multiplies():
    """MLX's split-K on the emulator: partial slice p is A[:, k0:k1] @ B[k0:k1] for the
    figure's bounds (and not for the bounds without the long last partition)."""
    from gemmglossary.mlx import steel_splitk
    from gemmglossary.mlx.launch import DEFAULT_DEVICE

    M, N, K = 33, 50, 1000
    r, bounds = splitk.plan_of(M, N, K, f"{DEFAULT_DEVICE.letter}{DEFAULT_DEVICE.generation}")
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    plan = steel_splitk.plan(a, b, device=DEFAULT_DEVICE)
    out = plan.run()
    partials = plan.launches[0].buffers[2].reshape(r.splitk.partitions, M, N)
    for p, (k0, k1) in enumerate(bounds):
        np.testing.assert_allclose(partials[p], a[:, k0:k1].astype(np.float64) @ b[k0:k1], rtol=1e-4, atol=1e-4)
    k0, k1 = bounds[-1]
    assert k1 - k0 > r.splitk.partition_size, "this product has a long last partition"
    short = a[:, k0:k0 + r.splitk.partition_size].astype(np.float64) @ b[k0:k0 + r.splitk.partition_size]
    assert not np.allclose(partials[-1], short, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out, partials.sum(0), rtol=1e-6, atol=1e-6)
    fig = splitk.splitk_partitions(M=M, N=N, K=K)
    assert f"{r.splitk.partitions} partitions of {r.splitk.partition_size}" in fig.alt
    assert [t for t in titles(fig.svg) if t.startswith("partition")] == [
        f"partition {p}: k = {k0} .. {k1 - 1}" for p, (k0, k1) in enumerate(bounds)]


def test_splitk_figure_refuses_a_product_mlx_does_not_split():
    with pytest.raises(FigureError, match="not split-K"):
        generate("splitk-partitions", {"M": "1024", "N": "1024", "K": "1024"}, use_cache=False)


# ----------------------------------------------------------------------------- matmul-route

@pytest.mark.parametrize("dtype,device", [("float32", "g13"), ("float16", "s17")])
def test_matmul_route_cells_are_route(dtype, device):
    from gemmglossary.mlx import matmul

    fig = route.matmul_route(dtype=dtype, device=device)
    cells = [t for t in titles(fig.svg) if t.startswith("M = N")]
    assert len(cells) == 13 * 11
    dev = route.device_of(device)
    kinds = set()
    for t in cells:
        m, k, kind = re.match(r"M = N = (\d+), K = (\d+): (\w+)$", t).groups()
        assert matmul.route(matmul.Problem(int(m), int(m), int(k), dtype), dev).kernel == kind, t
        kinds.add(kind)
    legend = [t for t in texts(fig.svg) if t in route.KINDS]
    assert sorted(legend) == sorted(kinds)
    with pytest.raises(FigureError, match="device="):
        route.matmul_route(device="M1")


# ----------------------------------------------------------------------------- matmul-flow

#: A product each routing step takes (class g and s devices, generations 13 to 17).
TAKEN_BY = {
    "dot_product": ("float32", 1, 1, 4096, False, "g13"),
    "gemv_wide": ("float16", 8, 4096, 4096, True, "g15"),
    "gemv": ("float16", 1, 4096, 4096, False, "g13"),
    "splitk": ("float32", 64, 64, 4096, False, "g13"),
    "splitk_nax": ("bfloat16", 256, 256, 8192, False, "s17"),
    "fused_nax": ("float16", 1024, 1024, 1024, False, "s17"),
    "fused": ("float32", 1024, 1024, 1024, False, "g13"),
}


def flow_boxes(svg: str) -> list[str]:
    """The titles of the flowchart's boxes, in drawing order, as a reader's browser shows them."""
    return [html.unescape(t) for t in titles(svg)]


def test_matmul_flow_draws_the_steps_route_runs_in_their_order():
    """The flowchart is matmul.STEPS: one test box and one kernel box per step, in order; and
    each step, in that order, is the one route() stops at for a product it takes."""
    from gemmglossary.figures import flow
    from gemmglossary.mlx import matmul

    fig = flow.matmul_flow()
    boxes = flow_boxes(fig.svg)
    expected = []
    for step in matmul.STEPS:
        expected += [f"{step.question} ({matmul.rule_label(step.rule)})", f"{step.name}: {', '.join(step.kernels)}"]
    assert boxes == expected
    assert [s.name for s in matmul.STEPS] == list(TAKEN_BY), "a product for each step, in the steps' order"
    for n, step in enumerate(matmul.STEPS):
        dtype, M, N, K, tb, device = TAKEN_BY[step.name]
        path = matmul.decisions(matmul.Problem(M, N, K, dtype, transpose_b=tb), route.device_of(device))
        assert [s.name for s, _ in path] == [s.name for s in matmul.STEPS[:n + 1]], step.name
        assert path[-1][1].kernel in step.kernels and all(taken is None for _, taken in path[:-1])
    for step in matmul.STEPS:
        assert step.question in fig.alt and [html.unescape(t) for t in texts(fig.svg)].count(step.kernels[0]) == 1


def test_a_change_in_the_routing_changes_both_route_and_the_flowchart(monkeypatch):
    """Move the fused kernel's step before split-K: route() stops sending a long-K product to
    split-K, and the flowchart draws the new order, from the same tuple."""
    from gemmglossary.figures import flow
    from gemmglossary.mlx import matmul

    before = flow.matmul_flow().svg
    steps = {s.name: s for s in matmul.STEPS}
    order = ["dot_product", "gemv_wide", "gemv", "fused_nax", "fused", "splitk", "splitk_nax"]
    monkeypatch.setattr(matmul, "STEPS", tuple(steps[n] for n in order))
    product = matmul.Problem(64, 64, 4096)
    assert matmul.route(product, route.device_of("g13")).kernel == "fused"
    after = flow.matmul_flow().svg
    assert after != before
    names = [t.split(":")[0] for t in flow_boxes(after)[1::2]]
    assert names == order
    # a threshold restated in a question shows in the drawing
    monkeypatch.setattr(matmul, "STEPS", (steps["dot_product"], matmul.Step(
        "fused", "a question of 12345 words", ("fused",), "tile_macro", steps["fused"].take)))
    assert "a question of 12345 words" in " ".join(texts(flow.matmul_flow().svg))


def test_matmul_flow_refuses_a_kernel_without_a_colour(monkeypatch):
    from gemmglossary.figures import flow
    from gemmglossary.mlx import matmul

    monkeypatch.setattr(matmul, "STEPS", matmul.STEPS + (matmul.Step("new", "never", ("gemm_new",), "tile_macro",
                                                                      lambda r: None),))
    with pytest.raises(FigureError, match="gemm_new"):
        flow.matmul_flow()


# ----------------------------------------------------------------------------- precision-error

def test_precision_error_has_the_shape_the_entry_describes():
    """Measured on the emulator at two depths: float accumulators stay at the final
    rounding to 16 bits, 16-bit accumulators grow with K, float32 is far below both."""
    err = precision.errors(depths=(16, 2048))
    for t, unit in (("float16", 2.0 ** -11), ("bfloat16", 2.0 ** -8)):
        flat, grows = err[(t, "float32")]["rounded"], err[(t, t)]["rounded"]
        assert max(flat) <= 2 * unit, f"{t} in, float accumulator: {flat}"
        assert grows[1] > 4 * grows[0] and grows[1] > 4 * flat[1], f"{t} accumulator: {grows}"
        assert err[(t, "float32")]["given"][1] >= flat[1], "rounding the inputs adds error"
    assert max(err[("float32", "float32")]["rounded"]) < 1e-5


def test_precision_figure_plots_what_was_measured(monkeypatch):
    fake = {pair: {"rounded": [1e-6 * (i + 1) * 2 ** j for j in range(5)], "given": [1e-3] * 5}
            for i, pair in enumerate(precision.PAIRS)}
    monkeypatch.setattr(precision, "errors", lambda depths, seed, **kw: fake)
    fig = precision.precision_error(reference="rounded")
    assert "float16 inputs with a float16 accumulator from 4.0e-06 to 6.4e-05" in fig.alt
    assert len(re.findall(r"<circle", fig.svg)) == 5 * len(precision.PAIRS)


# ----------------------------------------------------------------------------- q4-0-block

def test_q4_0_block_figure_is_what_llamas_mul_mv_multiplies():
    """Each weight the figure shows is what llama.cpp's q4_0 mul_mv computes for that weight:
    the block as a 1 x 32 matrix times the unit vector of weight j."""
    from gemmglossary.figures import llama_block
    from gemmglossary.llama import mul_mat
    from gemmglossary.llama.launch import Tensor

    r = llama_block.q4_0_block(0)
    assert len(r.data) == 18 and r.q.min() >= 0 and r.q.max() <= 15
    w = Tensor.quantized(r.data[None], "q4_0", 32)
    kernel = None
    for j in (0, 5, 16, 31):
        x = np.zeros((1, 32), np.float32)
        x[0, j] = 1
        plan = mul_mat.plan(w, Tensor.of(x))
        kernel = kernel or plan.launch.kernel()
        with pytest.warns(Warning):  # one weight row in a group of 8: the rows past it are read and discarded
            plan.launch.run(kernel, oob_reads="warn")
        assert plan.out.ravel()[0] == pytest.approx(r.dequantized[j], rel=1e-6, abs=1e-7), f"weight {j}"
    shown = texts(llama_block.q4_0_block_figure().svg)
    assert f"{r.dequantized[0]:+.2f}" in shown and f"d = {r.d:.4f}" in shown
