"""The real site renders every snippet page with its outputs and figures (tests/snippets/
test_snippets.py runs the snippets themselves; this file is apart because it looks at the
session's build of the site, which a test session that measures coverage makes only after
the snippets' own runs: see tests/conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gemmglossary.docs_hooks import snippets as snippets_hook

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = snippets_hook.snippet_paths(ROOT)

#: Figures each snippet draws (at least), all with alt text.
FIGURES = {
    "cooperative_load": 1, "register_blocking": 1, "simdgroup_matrix": 1, "barriers": 0,
    "epilogue_fusion": 1, "max_total_threads": 0, "tiled_gemm": 2, "tiled_to_simdgroup": 1,
    "gemv": 1, "quantized_matmul": 1, "simdgroup_reductions": 1,
    "double_buffering": 1, "threadgroup_swizzle": 1, "split_k": 1, "half_precision": 1, "how_mlx_picks": 1,
}


@pytest.mark.slow
def test_real_site_renders_every_snippet(mkdocs_site):
    proc, site = mkdocs_site.run, mkdocs_site.site
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    for path in SNIPPETS:
        page = site / "snippets" / path.stem / "index.html"
        text = page.read_text(encoding="utf-8")
        assert text.count("<h1") == 1, f"{path.stem}: one h1"
        assert "jp-OutputArea-output" in text, f"{path.stem}: no outputs rendered"
        assert "Traceback" not in text, f"{path.stem}: a traceback in the page"
        stderr = re.findall(r'<div[^>]*data-mime-type="application/vnd.jupyter.stderr"', text)
        assert not stderr, f"{path.stem}: output on stderr"
        assert f"python snippets/{path.name}" in text
        imgs = re.findall(r"<img\b[^>]*>", text)
        assert len(imgs) >= FIGURES.get(path.stem, 0), f"{path.stem}: {len(imgs)} figures"
        for tag in imgs:
            alt = re.search(r'\balt="([^"]*)"', tag)
            assert alt and alt.group(1).strip(), f"{path.stem}: image without alt text"
        assert (page.parent / path.name).is_file(), f"{path.stem}: source not published"
