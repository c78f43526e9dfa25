"""Snippet figures (matplotlib) made readable: column width, large chrome, one SVG per scheme."""

from __future__ import annotations

import re

import pytest

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

from gemmglossary.figures import matplotlib_schemes as ms  # noqa: E402


def wide_figure():
    fig = Figure(figsize=(12, 4), layout="constrained")
    a, b = fig.subplots(1, 2)
    a.plot([0, 1, 2], [2, 1, 3], label="a line")
    a.set_title("a title long enough that it has to wrap to the width of its axes at column width", fontsize=8)
    a.set_xlabel("x label", fontsize=7)
    a.legend()
    b.imshow([[0, 1], [2, 3]])
    b.text(0, 0, "cell", color="black", fontsize=6)  # a label chosen for the data: kept
    fig.suptitle("A figure")
    return fig


def test_fit_sizes_for_the_column_and_raises_small_chrome():
    fig = wide_figure()
    ms.fit(fig)
    w, _ = fig.get_size_inches()
    assert w * 96 <= ms.COLUMN_PX + 1
    a, b = fig.axes[:2]
    assert a.title.get_fontsize() >= ms.MIN_POINTS and a.xaxis.label.get_fontsize() >= ms.MIN_POINTS
    assert "\n" in a.title.get_text(), "a long title is wrapped"
    assert all(t.get_fontsize() >= ms.MIN_POINTS for t in a.get_xticklabels())
    assert b.texts[0].get_fontsize() < 6, "data labels keep their size relative to the data"


def test_one_svg_per_scheme_differing_only_in_the_chrome_colour():
    images = ms.scheme_images(wide_figure())
    light, dark = images["light"].decode(), images["dark"].decode()
    assert set(images) == {"light", "dark"} and light != dark
    assert ms.SCHEMES["light"] in light and ms.SCHEMES["dark"] in dark and "#010203" not in light + dark
    assert light.replace(ms.SCHEMES["light"], "X") == dark.replace(ms.SCHEMES["dark"], "X")
    assert re.search(r"<text[^>]*>[^<]*A figure", light), "text stays text (selectable)"
    cell = re.search(r'<text style="([^"]*)"[^>]*>cell</text>', light)
    assert cell and "fill" not in cell.group(1), "the black label on the data stays black (SVG's default)"
    assert 'fill: #ffffff' not in light, "no white background"
