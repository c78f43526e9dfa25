"""``mkdocs build --strict`` of the real site, inside the test suite (the session's build,
tests/conftest.py's ``mkdocs_site``, shared with the suites that look at the site).

The hook (docs/.hooks/excerpts.py) checks every kernel excerpt against
excerpts.lock.json, so this also fails when an excerpt drifted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmglossary.mlx.matmul import MLX_TAG

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_site_builds_strictly(mkdocs_site):
    run, site = mkdocs_site.run, mkdocs_site.site
    assert run.returncode == 0, run.stdout + run.stderr
    # Quiet: nothing from the notebook kernels (they run over IPC, see docs_hooks/snippet_pages.py).
    assert "without encryption" not in mkdocs_site.log and "[IPKernelApp]" not in mkdocs_site.log
    # Nor mkdocs-jupyter's lines for every snippet page (docs_hooks/snippets.py PLUGIN_LOGGERS).
    assert "Cache hit" not in mkdocs_site.log and "Converting notebook" not in mkdocs_site.log
    glossary = ["barriers", "cooperative-load", "register-blocking", "simdgroup-matrix",
                "epilogue-fusion", "max-total-threads", "neural-accelerators", "double-buffering",
                "threadgroup-swizzle", "split-k", "half-precision"]
    for page in [f"glossary/{g}" for g in glossary] + ["case-studies/tiled-gemm", "case-studies/tiled-to-simdgroup",
                                                       "how-mlx-picks-a-gemm"]:
        html = (site / page / "index.html").read_text(encoding="utf-8")
        assert 'class="excerpt-source"' in html, f"{page}: no kernel excerpt"
        # each excerpt says how much of it the coverage run executed (gemmglossary.coverage.site)
        assert html.count('class="excerpt-coverage"') == html.count('class="excerpt-source"'), page
        if page != "how-mlx-picks-a-gemm":  # its one excerpt holds no executable line (coverage-exemptions.toml)
            assert "lines executed" in html or "line executed" in html, f"{page}: no line coverage shown"
        if page.startswith("glossary/"):
            # Each entry quotes a first-party kernel (published with the site) and MLX steel.
            assert 'href="../../kernels/' in html, f"{page}: no first-party kernel excerpt"
            assert f"https://github.com/ml-explore/mlx/blob/{MLX_TAG}/" in html, f"{page}: no MLX excerpt"
    # Quoted first-party kernels are published next to the pages, so source links work offline.
    for kernel in (site / "kernels").glob("*.metal"):
        assert kernel.read_bytes() == (REPO / "kernels" / kernel.name).read_bytes()
    assert list((site / "kernels").glob("*.metal")), "no first-party kernel published"
