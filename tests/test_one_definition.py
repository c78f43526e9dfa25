"""Helpers that every part of the project shares are defined once: ``cdiv`` lives in
gemmglossary/tiles.py, and the emulator's dispatches, MLX's and llama.cpp's host rules, the
exercises and the snippets import it (a fourth copy had grown in the llama.cpp launcher)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cdiv_is_defined_only_in_tiles():
    found = sorted(str(p.relative_to(ROOT)) for folder in ("src", "snippets", "exercises")
                   for p in (ROOT / folder).rglob("*.py") if re.search(r"^\s*def cdiv\(", p.read_text(), re.M))
    assert found == ["src/gemmglossary/tiles.py"], found
