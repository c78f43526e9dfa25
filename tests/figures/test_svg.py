"""The SVG writer (gemmglossary.figures.svg): escaping, ids, the smallest text, determinism."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from gemmglossary.figures import svg


def drawing() -> svg.Drawing:
    d = svg.Drawing(200, 100)
    d.rect(0, 0, 10.123, 20, "c0 strong", title="a <b> & c")
    d.text(5, 5, "x < y & \"z\"", anchor="start", bold=True)
    d.polyline([(0, 0), (10, 10)], arrow=True)
    d.bars([(1, 2, 3, 4), (5, 6, 7, 8)], "wait")
    return d


def test_output_is_well_formed_xml_with_escaped_text():
    out = svg.with_id(drawing().svg("Title & more", "Long <description>"), "figure-x")
    root = ET.fromstring(out)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.get("role") == "img" and root.get("aria-labelledby") == "figure-x-title figure-x-desc"
    assert root.find(f"{ns}title").text == "Title & more"
    assert root.find(f"{ns}desc").text == "Long <description>"
    text = root.find(f"{ns}text")
    assert text.text == 'x < y & "z"' and text.get("class") == "s b"
    assert root.find(f"{ns}rect").get("width") == "10.12"
    assert root.find(f"{ns}polyline").get("marker-end") == "url(#figure-x-arrow)"
    assert root.find(f"{ns}path").get("d") == "M1 2h3v4h-3zM5 6h7v8h-7z"
    assert svg.ID not in out


def test_same_drawing_same_bytes():
    assert drawing().svg("t", "d") == drawing().svg("t", "d")


def test_text_below_the_smallest_size_is_refused():
    with pytest.raises(ValueError, match="at least 12 px"):
        svg.Drawing(10, 10).text(0, 0, "tiny", size=9)


def test_ids_must_be_simple():
    with pytest.raises(ValueError, match="figure id"):
        svg.with_id("<svg/>", "Bad Id")
