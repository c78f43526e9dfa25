"""Links from the pages to upstream sources point at what was actually checked.

- ``github.com/ml-explore/mlx/blob/v<pinned>/…`` links name a file of the pinned wheel
  (kernels/vendor.toml). A line anchor must be one a reviewer checked against the wheel's
  text: :data:`VERIFIED_LINKS` holds the hash of each linked range, so a new link, or a new
  pin under an old one, fails here until someone reads the lines again.
- Any other MLX ``blob`` link points at the commit whose host code
  gemmglossary.mlx.matmul restates; no page links a tag whose source was never read.
- m5-gemm links point at the pinned commit.
- The lane table of the simdgroup_matrix entry is the layout MLX's ``get_coord`` computes.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from gemmglossary import vendor
from gemmglossary.docs_hooks import facts
from gemmglossary.mlx import matmul as mm

REPO = Path(__file__).resolve().parents[2]
M5_COMMIT = "29414bebb522ddacaa009959f2bcdad9f5b3e5cf"
MLX_BLOB = re.compile(r"https://github\.com/ml-explore/mlx/blob/(?P<rev>[^/\s)]+)/(?P<path>[^\s)#]+)(?:#L(?P<a>\d+)(?:-L(?P<b>\d+))?)?")
M5_LINK = re.compile(r"https://github\.com/yaroslavvb/m5-gemm/(?:blob|tree)/(?P<rev>[^/\s)]+)")


#: (file under mlx/backend/metal/kernels, start, end) -> sha256 prefix of those lines of the
#: pinned file (joined with "\n" plus a final "\n", as in excerpts.lock.json). Each entry
#: was read against what the page says about it.
VERIFIED_LINKS = {
    ("steel/gemm/kernels/steel_gemm_fused.h", 14, 16): "6c397624ae8cb6f2",    # align_* constants
    ("steel/gemm/kernels/steel_gemm_fused.h", 133, 163): "d012d8486dfb6b55",  # partial K step first
    ("steel/gemm/kernels/steel_gemm_fused.h", 167, 167): "861dece46893fe75",  # TransformAxpby<Accum, Accum>
    ("steel/gemm/kernels/steel_gemm_fused.h", 172, 345): "2166e30792da5797",  # the aligned/unaligned branches
    ("steel/gemm/kernels/steel_gemm_fused.h", 190, 190): "50ec4bf92813fceb",  # mem_none barrier after the loop
    ("steel/gemm/gemm.h", 38, 44): "67266725155da8ea",                        # 16-byte row padding
    ("steel/gemm/loader.h", 42, 42): "a259fbbd88db1042",                      # ReadVector alignment
    ("steel/gemm/mma.h", 22, 30): "f4278fb38968a191",                         # 8x8 fragments only
    ("steel/gemm/mma.h", 37, 37): "d2f6a3f51763ea71",                         # 64 elements / 32 lanes
    ("steel/gemm/mma.h", 137, 137): "9b3dbb14da200685",                       # per-element store test
    ("steel/gemm/mma.h", 497, 498): "fcdb2c81e442a22f",                       # simdgroup id / WN, % WN
}


def _range_hash(path: Path, start: int, end: int) -> str:
    lines = path.read_text(encoding="utf-8").split("\n")
    return hashlib.sha256(("\n".join(lines[start - 1:end]) + "\n").encode()).hexdigest()[:16]


def page_links(pattern: re.Pattern) -> list[tuple[str, int, re.Match]]:
    """Every match on every page, after expanding facts (links are often facts)."""
    found = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        for number, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            for m in pattern.finditer(facts.expand_line(line)):
                found.append((f"docs/{page.relative_to(REPO / 'docs')}:{number}", number, m))
    return found


def test_mlx_links_point_at_the_pinned_wheel_or_the_restated_commit():
    pins = vendor.load_pins()
    pinned = {f"{vendor.MLX_KERNELS_SUBPATH}/{f.path}": f for f in pins.files}
    links = page_links(MLX_BLOB)
    assert links, "no MLX links found"
    for where, _, m in links:
        rev, path = m["rev"], m["path"]
        if rev == f"v{pins.version}":
            assert path in pinned, f"{where}: {path} is not a file of the pinned wheel; link the commit {mm.MLX_HOST_COMMIT[:7]} instead"
            if m["a"]:
                start, end = int(m["a"]), int(m["b"] or m["a"])
                key = (pinned[path].path, start, end)
                assert key in VERIFIED_LINKS, (
                    f"{where}: a link to {path} lines {start}-{end} that no one has checked; read them "
                    f"in the pinned file, then add their hash to VERIFIED_LINKS")
                assert _range_hash(pinned[path].vendored, start, end) == VERIFIED_LINKS[key], (
                    f"{where}: {path} lines {start}-{end} changed under the link; check what the page says")
        else:
            assert rev == mm.MLX_HOST_COMMIT, f"{where}: MLX link at {rev!r}, which nothing here was checked against"


def test_m5_gemm_links_point_at_the_pinned_commit():
    links = page_links(M5_LINK)
    assert links
    for where, _, m in links:
        assert m["rev"] == M5_COMMIT, f"{where}: m5-gemm at {m['rev']!r}"


def test_the_facts_extension_is_registered_for_the_site():
    import yaml

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    names = [e if isinstance(e, str) else next(iter(e)) for e in config["markdown_extensions"]]
    assert "gemmglossary.docs_hooks.facts" in names
    assert {"Sources and versions": "sources.md"} in config["nav"]


def get_coord(lane: int) -> tuple[int, int]:
    """(row, col) of a lane's first element: mma.h's BaseMMAFrag::get_coord."""
    qid = lane // 4
    return (qid & 4) + (lane // 2) % 4, (qid & 2) * 2 + (lane % 2) * 2


def test_lane_map_on_the_simdgroup_matrix_page_is_mlx_layout():
    """The page draws the lane map as a figure computed from MLX's get_coord (run on the
    emulator, gemmglossary.figures.fragment); it must be the layout of mma.h."""
    from gemmglossary.figures import fragment

    text = (REPO / "docs" / "glossary" / "simdgroup-matrix.md").read_text(encoding="utf-8")
    assert re.search(r"^\{\{figure fragment-lanes\b", text, re.M), "the page shows the lane map figure"
    expected = [[None] * 8 for _ in range(8)]
    for lane in range(32):
        r, c = get_coord(lane)
        expected[r][c] = expected[r][c + 1] = lane
    assert fragment.mlx_lane_map().tolist() == expected
