"""The roofline and memory-hierarchy figures against what they are drawn from:
gemmglossary.traffic's byte counts, the kernels' own tile constants, and
gemmglossary.hardware.HIERARCHY."""

from __future__ import annotations

import re

import pytest

from gemmglossary import hardware, traffic
from gemmglossary.figures import generate
from gemmglossary.figures import roofline as rf
from gemmglossary.kernels import KERNELS


def test_tiled_gemm_bytes_worked_by_hand():
    # 64^3 with 16x16 tiles: A read by 4 columns of tiles, B by 4 rows, C written once.
    t = traffic.tiled_gemm(64, 64, 64, 16, 16, "float32")
    assert t.flops == 2 * 64 ** 3
    assert t.bytes == (64 * 64 * 4 + 64 * 64 * 4 + 64 * 64) * 4
    # A ragged edge still reads whole panels: 65 columns are two 64-wide tiles.
    assert traffic.tiled_gemm(64, 65, 64, 64, 64).bytes == (64 * 64 * 2 + 64 * 65 * 1 + 64 * 65) * 4
    with pytest.raises(ValueError, match="BM must be at least 1"):
        traffic.tiled_gemm(64, 64, 64, 0, 16)


def test_a_bigger_tile_is_a_higher_intensity_and_never_beats_the_fewest_bytes():
    n = 4096
    best = traffic.gemm(n, n, n, "float32").flop_per_byte
    values = [traffic.tiled_gemm(n, n, n, t, t).flop_per_byte for t in (8, 16, 32, 64, 128)]
    assert values == sorted(values) and values[-1] < best


def test_every_first_party_kernel_is_placed_with_its_own_tile():
    pts = {p.label: p for p in rf.points(4096)}
    for name, spec in KERNELS.items():
        c = spec.constants()
        bm, bn = (c[spec.tile[0]], c[spec.tile[1]])
        p = pts[f"{name}.metal ({bm}×{bn})"]
        assert p.traffic == traffic.tiled_gemm(4096, 4096, 4096, bm, bn, "float32")
    assert pts["matmul_tiled.metal (16×16)"].intensity < pts["tiled_gemm.metal (64×64)"].intensity


def test_the_points_sit_on_the_roof():
    m = traffic.MACHINE
    for p in rf.points(2048):
        assert p.attainable == pytest.approx(min(p.intensity * m.read_bytes_per_s, m.gemm_flop_per_s))
    pts = {p.label: p for p in rf.points(4096)}
    assert pts["gemv.metal"].intensity < 1 < m.ridge < pts["GEMM, fewest bytes"].intensity
    assert pts["gemv.metal"].intensity < pts["qmv4.metal (4-bit)"].intensity < m.ridge


def test_the_roofline_figure_names_every_point_and_the_machine():
    fig = generate("roofline", {"n": "1024"}, use_cache=False)
    for p in rf.points(1024):
        assert p.label in fig.alt and p.label in fig.svg
    assert fig.svg.count("<circle") == 2 * len(rf.points(1024))  # a point and its legend mark
    assert traffic.MACHINE.name in fig.alt and "n = 1024" in fig.source


def test_the_hierarchy_draws_each_level_and_dashes_the_measured_ones():
    fig = generate("memory-hierarchy", {}, use_cache=False)
    for level in hardware.HIERARCHY:
        assert level.name in fig.svg and level.name in fig.alt
    dashed = len(re.findall(r'class="outline dash"', fig.svg))
    assert dashed == sum(not lv.documented for lv in hardware.HIERARCHY)
    assert 0 < dashed < len(hardware.HIERARCHY)
