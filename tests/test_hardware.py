"""The chip table and the limits of gemmglossary.hardware: every row sourced, the rows
consistent with each other and with MLX's reading of an architecture name, the rendered
tables the pages show, and the measured rows' line anchors against the measurement's text
where a mirror of it is at hand."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gemmglossary import hardware
from gemmglossary.docs_hooks.facts import FactError, evaluate
from gemmglossary.mlx.matmul import Device

LINK = re.compile(r"\[(?P<text>[^\]]+)\]\((?P<url>https://[^)\s]+)\)")


def test_every_chip_row_is_sourced_and_the_families_come_in_order():
    families = [c.family for c in hardware.CHIPS if c.family is not None]
    assert families == sorted(families) and families[0] == 7
    for chip in hardware.CHIPS:
        for value, source in ((chip.family, chip.family_source), (chip.generation, chip.generation_source)):
            assert (value is None) == (source is None), chip
            assert source is None or source.startswith("https://"), chip


def test_generations_rise_with_the_mac_chips_and_mlx_reads_each_back():
    macs = [c for c in hardware.CHIPS if c.kind == "Mac" and c.generation is not None]
    assert [c.generation for c in macs] == sorted({c.generation for c in macs})
    for chip in macs:
        for letter in hardware.CLASS_LETTERS:
            device = Device.from_architecture(f"applegpu_g{chip.generation}{letter}")
            assert (device.generation, device.letter) == (chip.generation, letter)


def test_a_row_without_its_source_is_refused():
    with pytest.raises(ValueError, match="needs its source"):
        hardware.Chip("M9", 12, None, None, None, "Mac")
    with pytest.raises(ValueError, match="needs its source"):
        hardware.Chip("M9", None, None, 21, None, "Mac")


def test_family_of_a_generation():
    assert hardware.family_of(13) == 7
    assert hardware.family_of(15) == 9
    assert hardware.family_of(17) is None  # the M5's family is not in the tables we read
    assert hardware.family_of(99) is None


def test_the_chip_table_fact_links_every_sourced_cell():
    table = evaluate("hardware.table table=chips")
    rows = table.splitlines()[2:]
    assert len(rows) == len(hardware.CHIPS)
    for chip, row in zip(hardware.CHIPS, rows):
        urls = [m["url"] for m in LINK.finditer(row)]
        assert urls == [u for u in (chip.family_source, chip.generation_source) if u], row
        assert row.startswith(f"| {chip.name} |")


def test_the_limits_fact_marks_what_apple_does_not_document():
    table = evaluate("hardware.table table=limits")
    rows = table.splitlines()[2:]
    assert len(rows) == len(hardware.LIMITS)
    for limit, row in zip(hardware.LIMITS, rows):
        assert ("measured, not documented by Apple" in row) == (not limit.metal_documented), row
        assert [m["url"] for m in LINK.finditer(row)] == [limit.metal_source, limit.cuda_source]
    assert evaluate("hardware.limit key=threads link=false") == "1024"
    assert evaluate("hardware.limit key=tg_memory side=cuda").startswith("[48 KB static")
    with pytest.raises(FactError, match="key must be one of"):
        evaluate("hardware.limit key=warps")


def test_the_class_letters_fact_links_mlx_s_comments_at_the_pinned_tag():
    from gemmglossary.mlx import matmul as mm

    rows = evaluate("hardware.table table=classes").splitlines()[2:]
    assert [r.split("`")[1] for r in rows] == list(hardware.CLASS_LETTERS)
    for row in rows:
        url = LINK.search(row)["url"]
        assert f"/blob/{mm.MLX_TAG}/mlx/backend/metal/device.cpp#L" in url, url


MIRROR = Path("/work/.mirror/philipturner+metal-benchmarks/repo")
#: What each measured row's anchored range must hold: the table's header, then the row.
ROW_TEXT = {"registers": "Register File", "resident": "Max Threads", "core_shared": "Shared Memory",
            "l1": "Data Cache"}


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no mirror of philipturner/metal-benchmarks on this machine")
@pytest.mark.parametrize("key", sorted(ROW_TEXT))
def test_measured_rows_anchor_the_lines_they_cite(key):
    limit = hardware.LIMIT[key]
    m = re.search(r"/blob/(?P<rev>[0-9a-f]{40})/README\.md#L(?P<a>\d+)-L(?P<b>\d+)$", limit.metal_source)
    assert m, limit.metal_source
    text = subprocess.run(["git", "-C", str(MIRROR), "show", f"{m['rev']}:README.md"], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    first, last = text[int(m["a"]) - 1], text[int(m["b"]) - 1]
    assert first.startswith("| Per Core") and "Apple 7, 8" in first
    assert last.startswith(f"| {ROW_TEXT[key]}"), last
    value = re.search(r"\d+", limit.metal).group(0)
    assert value in last.split("|")[2], (limit.metal, last)


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no mirror of philipturner/metal-benchmarks on this machine")
def test_the_hierarchy_s_cache_sizes_are_the_m1_rows_of_the_chip_table():
    level = next(lv for lv in hardware.HIERARCHY if lv.name == "L2 cache")
    m = re.search(r"/blob/(?P<rev>[0-9a-f]{40})/README\.md#L(?P<a>\d+)-L(?P<b>\d+)$", level.source)
    text = subprocess.run(["git", "-C", str(MIRROR), "show", f"{m['rev']}:README.md"], capture_output=True,
                          text=True, check=True).stdout.splitlines()[int(m["a"]) - 1:int(m["b"])]
    assert "L2 $" in text[0] and "L3 $" in text[0]
    m1 = [row.split("|") for row in text if re.match(r"\| M1", row)]
    assert [r[1].strip() for r in m1] == ["M1", "M1P", "M1M", "M1U"]
    l2 = sorted(r[8].strip() for r in m1)
    assert {"256K", "1M"} <= set(l2) and {r[9].strip() for r in m1} >= {"8M", "96M"}
