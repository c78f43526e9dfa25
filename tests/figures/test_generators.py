"""The figure generators: what each one draws is what the kernels do.

The facts checked here are the ones the pages state in prose (a simdgroup's block is
contiguous and row-major over WM x WN; quads go round-robin to the threads; half the
threads leave half of each tile unwritten; ...), computed from the runs the figures are
drawn from, so a figure cannot quietly disagree with its page.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.figures import FIGURES, FigureError, blocks, epilogue, fragment, generate, loads, timeline
from gemmglossary.figures.kernel_facts import first_party
from gemmglossary.figures.runs import tile_writers, traced_gemm
from gemmglossary.kernels import KERNELS


def texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_every_figure_draws_with_its_defaults():
    for name in FIGURES:
        if name == "swizzle-order":  # MLX's steel GEMM: its own test below, at a smaller size
            continue
        if name == "precision-error":  # 25 emulator launches: test_entry_generators measures two depths
            continue
        fig = generate(name, use_cache=False)
        assert fig.svg.startswith("<svg") and fig.alt and fig.title and fig.source, name
        assert len(fig.alt) > 80, f"{name}: alt text says too little"


def test_fragment_lanes_come_from_mlx_and_agree_with_the_emulator():
    lanes = fragment.mlx_lane_map()
    emu, slot = fragment.emulator_lane_map()
    assert np.array_equal(lanes, emu)
    for lane in range(32):
        rr, cc = np.nonzero(lanes == lane)
        assert len(rr) == 2 and rr[0] == rr[1] and cc[1] == cc[0] + 1, "two horizontally adjacent elements"
        assert slot[rr[0], cc[0]] == 0 and slot[rr[1], cc[1]] == 1
    for g in range(4):  # each group of eight lanes owns one 4x4 quadrant
        rr, cc = np.nonzero(lanes // 8 == g)
        assert rr.max() - rr.min() == 3 and cc.max() - cc.min() == 3
    fig = fragment.fragment_lanes()
    cells = [t for t in texts(fig.svg) if t.isdigit()]
    assert cells[16:] == [str(v) for v in lanes.ravel()], "the grid shows the lanes row by row"


def test_cooperative_load_is_round_robin_over_quads():
    spec = KERNELS["tiled_gemm"]
    c = spec.constants()
    run = traced_gemm(spec, c["BM"], c["BN"], c["BK"])
    first = run.trace.snapshots[0]
    for name, cols in (("tileA", c["BK"]), ("tileB", c["BN"])):
        w = tile_writers(spec, first, name)
        quads = w.reshape(-1, 4)
        assert (quads == quads[:, :1]).all(), f"{name}: a thread writes whole float4 quads"
        assert np.array_equal(quads[:, 0], np.arange(len(quads)) % c["THREADS"]), f"{name}: quad q -> thread q mod THREADS"
    fig = loads.cooperative_load(kernel="tiled_gemm")
    assert "thread 1 writes row 0 columns 4 to 7" in fig.alt


def test_thread_count_leaves_the_missing_threads_share_unwritten():
    fig = loads.thread_count(kernel="tiled_gemm", operand="B", fewer=2)
    assert "with 128 threads 0 of the 1024 elements are never written" in fig.alt
    assert "with 64 threads 512 of the 1024 elements are never written" in fig.alt
    with pytest.raises(FigureError, match="fewer= must divide"):
        loads.thread_count(fewer=3)


@pytest.mark.parametrize("kernel", ["tiled_gemm", "matmul_simd_blocked", "matmul_simd"])
def test_register_blocks_are_contiguous_and_row_major(kernel):
    spec = first_party(kernel)
    c = spec.constants()
    run = traced_gemm(spec, c["BM"], c["BN"], c["BK"])
    staged = [s for s in run.trace.snapshots if "tileC" in s.regions and s["tileC"].written_since_barrier().all()]
    owners = blocks.fragment_owners(tile_writers(spec, staged[-1], "tileC"))
    wm = wn = 2  # four simdgroups, 2 x 2, in all three kernels
    br, bc = owners.shape[0] // wm, owners.shape[1] // wn
    expected = np.repeat(np.repeat(np.arange(wm * wn).reshape(wm, wn), br, axis=0), bc, axis=1)
    assert np.array_equal(owners, expected)


def test_masked_edge_writes_exactly_c():
    fig = epilogue.masked_edge(kernel="tiled_gemm", M=100, N=150)
    assert "wrote all 15000 elements of C and 0 elements outside it" in fig.alt
    with pytest.raises(FigureError, match="no row stride for C"):
        epilogue.masked_edge(kernel="matmul_simd")
    with pytest.raises(FigureError, match="no edge to draw"):
        epilogue.masked_edge(M=128, N=128)


def test_rectangles_cover_exactly_the_mask():
    rng = np.random.default_rng(3)
    for _ in range(20):
        mask = rng.random((9, 11)) < 0.5
        out = np.zeros_like(mask, int)
        for r, c, nr, nc in epilogue.rectangles(mask):
            out[r:r + nr, c:c + nc] += 1
        assert np.array_equal(out, mask.astype(int))
    assert epilogue.rectangles(np.ones((5, 7), bool)) == [(0, 0, 5, 7)]


def test_timeline_nobody_leaves_before_the_last_arrives():
    spec = KERNELS["tiled_gemm"]
    run = traced_gemm(spec, 64, 64, 32, schedule=("random", 5), snapshots=False)
    events = run.trace.threadgroup((0, 0))
    per, releases = timeline.intervals(events, 128)
    src = spec.path.read_text().splitlines()
    b1, b2, b3 = [i for i, line in enumerate(src, 1) if "threadgroup_barrier(" in line]
    assert [ln for _, ln in releases] == [b1, b2, b1, b2, b3]
    for sg, spans in per.items():
        steps = [s for _, s0, s1 in spans for s in (s0, s1)]
        assert steps == sorted(steps), "spans follow each other"
        for kind, s0, s1 in spans:
            if kind == "wait":  # a simdgroup waits until a release, never past it ([s0, s1) spans)
                assert any(s1 - 1 == rel for rel, _ in releases)
    fig = timeline.k_step_timeline(kernel="matmul_tiled", steps=1)
    assert "B1 (line" in fig.alt and "simdgroup 7" in fig.alt
    with pytest.raises(FigureError, match="steps= must be 1 to 4"):  # the range its annotation declares
        generate("k-step-timeline", {"steps": "9"}, use_cache=False)


def test_pyramid_numbers_follow_the_defines():
    default = generate("tile-pyramid", use_cache=False)
    assert "threadgroup tile 64×64" in texts(default.svg)
    small = generate("tile-pyramid", {"TM": "2", "TN": "2"}, use_cache=False)
    assert "threadgroup tile 32×32" in texts(small.svg) and "`-DTM=2`" in small.source
    with pytest.raises(FigureError, match="no -D constant Q|has no argument 'Q'"):
        generate("tile-pyramid", {"Q": "1"}, use_cache=False)


class _TestKernel(KERNELS["matmul_tiled"].__class__):
    """A GemmKernel whose file is one of these tests' kernels."""

    @property
    def path(self):
        from pathlib import Path
        return Path(__file__).parent / "kernels" / f"{self.name}.metal"


def test_double_buffer_rhythm_alternates_two_copies(monkeypatch):
    from gemmglossary.figures import rhythm

    spec = _TestKernel("double_buffered", tile=("BM", "BN"), threadgroup=("BN", "BM", 1))
    real = rhythm.first_party
    monkeypatch.setattr(rhythm, "first_party", lambda name: spec if name == spec.name else real(name))
    fig = rhythm.double_buffer(kernel="double_buffered", steps=3)
    assert ("barrier 1 (line 31): tileA[0] loads step 1, tileA[1]" not in fig.alt)  # the second copy is still empty
    assert "barrier 1 (line 31): tileA[0] loads step 1, tileB[0] loads step 1" in fig.alt
    assert "barrier 2 (line 44): tileA[0] holds step 1, tileA[1] loads step 2" in fig.alt
    assert "barrier 3 (line 44): tileA[0] loads step 3, tileA[1] holds step 2" in fig.alt
    single = rhythm.double_buffer(kernel="tiled_gemm", steps=2)
    assert "tileA loads step 2" in single.alt and "tileA[1]" not in single.alt


def test_swizzle_order_walks_columns_of_two():
    from gemmglossary.figures import swizzle

    tiles, idle, grid = swizzle.visit_map(128, 128, 1)
    assert grid[:2] == (8, 2) and idle == 0
    assert [tuple(np.argwhere(tiles == i)[0]) for i in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    plain, _, _ = swizzle.visit_map(128, 128, 0)
    assert np.array_equal(plain, np.arange(16).reshape(4, 4))


def test_mlx_pyramids_follow_mlx_host_choices():
    from gemmglossary.mlx import matmul as mm

    nax = mm.nax_config(mm.Device("g", 17), 1024, 1024, 1024)
    fig = generate("tile-pyramid", {"kernel": "mlx-nax"}, use_cache=False)
    shown = texts(fig.svg)
    assert f"threadgroup tile {nax.bm}×{nax.bn}" in shown and f"{nax.wm}×{nax.wn} simdgroup blocks (WM×WN)" in shown
    assert f"{nax.tm}×{nax.tn} fragments of {nax.fragment}×{nax.fragment} (TM×TN)" in shown
    assert "read straight from device memory" in fig.alt
    with pytest.raises(FigureError, match="come from MLX's host choice"):
        generate("tile-pyramid", {"kernel": "mlx-nax", "TM": "2"}, use_cache=False)
