"""Links from the pages to upstream sources point at what was actually checked.

- Every ``github.com/ml-explore/mlx/blob/…`` link names the pinned tag (kernels/vendor.toml),
  the one release whose headers are quoted and whose host code gemmglossary.mlx restates.
- A line anchor into a file of the pinned wheel must be one a reviewer checked against its
  text: :data:`VERIFIED_LINKS` holds the hash of each linked range, so a new link, or a new
  pin under an old one, fails here until someone reads the lines again.
- A line anchor into MLX's host source (not in the wheel), and every range a host rule of
  gemmglossary.mlx follows, must be in :data:`HOST_LINES` with the hash of its text at the
  tag; where the MLX source mirror is at hand the hashes are checked, so a bump of the pin
  fails here until each changed range is read again (CI has no mirror: there only the
  record itself is checked).
- m5-gemm links point at the pinned commit.
- The lane table of the simdgroup_matrix entry is the layout MLX's ``get_coord`` computes.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

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
    ("steel/gemm/kernels/steel_gemm_fused_nax.h", 86, 86): "391401342004ff84",  # max_total_threads(WM*WN*32)
    ("steel/gemm/nax.h", 12, 12): "a520376e11583261",                         # MetalPerformancePrimitives
    ("steel/gemm/nax.h", 27, 29): "2fd8bbd713e2fb0d",                         # 16x16 NAX fragments
    ("steel/gemm/nax.h", 401, 411): "e11fdec58e971deb",                       # matmul2d over a simdgroup
}


#: (file of MLX's repository, start, end) -> sha256 prefix of those lines at the pinned tag,
#: for host code linked by a page or followed by a rule of gemmglossary.mlx. Each was read
#: against the page's statement or the rule's restatement.
HOST_LINES = {
    ("CMakeLists.txt", 199, 212): "9163f9645150acab",                          # NAX: SDK and target 26.2
    ("mlx/backend/common/utils.cpp", 117, 146): "87902811f88286ce",
    ("mlx/backend/metal/custom_kernel.cpp", 23, 30): "9083062eb80faaa5",   # every output allocated fresh
    ("mlx/backend/metal/custom_kernel.cpp", 61, 61): "5fc33645dd80e7eb",   # each input bound as it is
    ("mlx/backend/metal/custom_kernel.cpp", 84, 93): "59074026bf18461e",
    ("mlx/backend/metal/custom_kernel.cpp", 99, 99): "9c11b97773614303",
    ("mlx/backend/metal/device.cpp", 589, 624): "424ee4f45250ad62",
    ("mlx/backend/metal/device.cpp", 947, 965): "52bda3b0ca6577fe",
    ("mlx/backend/metal/kernels/CMakeLists.txt", 161, 185): "128927e13c9550c4",  # NAX build condition
    ("mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_fused.metal", 9, 13): "e726408fc8296615",
    ("mlx/backend/metal/matmul.cpp", 56, 82): "35ab6fab8a0253eb",
    ("mlx/backend/metal/matmul.cpp", 90, 171): "c860344a551c7e91",
    ("mlx/backend/metal/matmul.cpp", 205, 216): "64e9ebdd29a4f3ee",
    ("mlx/backend/metal/matmul.cpp", 276, 284): "3cfb2f36078ae37a",
    ("mlx/backend/metal/matmul.cpp", 302, 308): "3ed2bf104aeacd41",
    ("mlx/backend/metal/matmul.cpp", 370, 375): "19ab3c399034376f",
    ("mlx/backend/metal/matmul.cpp", 392, 393): "5ab256f298aab067",
    ("mlx/backend/metal/matmul.cpp", 435, 440): "6647798173bbc92f",
    ("mlx/backend/metal/matmul.cpp", 458, 464): "3ed2bf104aeacd41",
    ("mlx/backend/metal/matmul.cpp", 523, 537): "8e61c7b909209d2c",
    ("mlx/backend/metal/matmul.cpp", 599, 600): "a976dc71c3eda226",
    ("mlx/backend/metal/matmul.cpp", 646, 649): "afae4defe1e1cca2",
    ("mlx/backend/metal/matmul.cpp", 680, 701): "3b9b393e1efe23e7",
    ("mlx/backend/metal/matmul.cpp", 753, 784): "ee849b26fedf0f5d",
    ("mlx/backend/metal/matmul.cpp", 779, 784): "7acd994b6d8608ea",
    ("mlx/backend/metal/matmul.cpp", 910, 1038): "6712e75ef1504ff9",
    ("mlx/backend/metal/matmul.cpp", 917, 919): "766c74ca52780523",
    ("mlx/backend/metal/matmul.cpp", 920, 926): "2dee4eb5293dde3d",
    ("mlx/backend/metal/matmul.cpp", 947, 950): "f37ae752a7753382",
    ("mlx/backend/metal/matmul.cpp", 1044, 1090): "44463fda01386314",
    ("mlx/backend/metal/matmul.cpp", 1134, 1182): "e29dfd679665f6b4",
    ("mlx/backend/metal/matmul.cpp", 1210, 1212): "ea194a26c0b912bd",
    ("mlx/backend/metal/matmul.cpp", 1299, 1354): "9580709330ea17fc",
    ("mlx/backend/metal/matmul.cpp", 1396, 1397): "8fa2b68d956cbb5d",
    ("mlx/backend/metal/matmul.cpp", 1451, 1587): "fedad35075eb8642",
    ("mlx/backend/metal/matmul.cpp", 1492, 1502): "6ce239b2d07fcdd9",
    ("mlx/backend/metal/matmul.cpp", 2145, 2276): "fac632c1baf90875",
    ("mlx/backend/metal/matmul.cpp", 2180, 2181): "707c23b78243a2df",
    ("mlx/backend/metal/matmul.cpp", 2247, 2262): "5bbedbca03d09477",
    ("mlx/backend/metal/matmul.cpp", 2265, 2275): "8bcdafdf1cd23bf1",
    ("mlx/backend/metal/matmul.cpp", 2672, 2809): "087c1769dbfd5acc",
    ("mlx/backend/metal/matmul.cpp", 2692, 2700): "0b59cd1fe8d85951",
    ("mlx/backend/metal/matmul.cpp", 2770, 2785): "d4c57b65c8612328",
    ("mlx/backend/metal/matmul.cpp", 2787, 2808): "96db6e30dc453733",
    ("mlx/backend/metal/matmul.cpp", 2811, 2864): "b30336ea28f7f76e",
    ("mlx/backend/metal/quantized.cpp", 85, 145): "ba181e08983187b9",
    ("mlx/backend/metal/quantized.cpp", 147, 149): "f7ac47f3909571f7",
    ("mlx/backend/metal/quantized.cpp", 403, 459): "c7ea8845395eba1f",
    ("mlx/backend/metal/quantized.cpp", 461, 535): "e9d02e1e38643dcb",
    ("mlx/backend/metal/quantized.cpp", 484, 484): "c3bd4c3d7b86b8e3",
    ("mlx/backend/metal/quantized.cpp", 537, 540): "a639f30eb09c4a73",
    ("mlx/backend/metal/quantized.cpp", 748, 812): "0086dea9855068bc",
    ("mlx/backend/metal/quantized.cpp", 1038, 1041): "3eeebdc6dbb6f6bb",
    ("mlx/backend/metal/quantized.cpp", 1119, 1154): "95a85cae21883f42",
    ("mlx/backend/metal/quantized.cpp", 1738, 1779): "598c3d48fba4f205",
    ("mlx/backend/metal/quantized.cpp", 1781, 1874): "25994825cba4e46b",
    ("mlx/backend/metal/quantized.cpp", 1798, 1800): "b252a04fdc85c11c",
    ("mlx/backend/metal/quantized.cpp", 1803, 1803): "b43b8aac2bc9a0c0",
    ("mlx/backend/metal/quantized.cpp", 1852, 1872): "34ab471dbbd1df59",
    ("mlx/ops.cpp", 79, 108): "c6a123d70c5acb97",
    ("mlx/ops.cpp", 6131, 6219): "d8fa3657c681dec7",
    ("mlx/utils.h", 161, 170): "ee55c4a170ec4dd8",
    ("mlx/utils.h", 214, 217): "9584729d1077be9c",
}
MLX_MIRROR = Path("/work/.mirror/ml-explore+mlx/repo")


def _lines_hash(lines: list[str], start: int, end: int) -> str:
    return hashlib.sha256(("\n".join(lines[start - 1:end]) + "\n").encode()).hexdigest()[:16]


def _range_hash(path: Path, start: int, end: int) -> str:
    return _lines_hash(path.read_text(encoding="utf-8").split("\n"), start, end)


def restated_host_ranges() -> set[tuple[str, int, int]]:
    """Every range of MLX's host source a rule of gemmglossary.mlx names."""
    from gemmglossary.mlx import gather, quantized

    out = {("mlx/backend/metal/matmul.cpp", a, b) for a, b in mm.LINES.values()}
    out |= set(mm.OTHER_LINES.values())
    out |= {("mlx/backend/metal/matmul.cpp", a, b) for a, b in gather.LINES.values()}
    out |= {("mlx/ops.cpp", a, b) for a, b in gather.OPS_LINES.values()}
    out |= {(quantized.HOST_PATH, a, b) for a, b in quantized.LINES.values()}
    return out


def linked_host_ranges() -> dict[tuple[str, int, int], str]:
    """Every line-anchored link of a page into MLX's source outside the pinned wheel."""
    pinned = {f"{vendor.MLX_KERNELS_SUBPATH}/{f.path}" for f in vendor.load_pins().mlx.files}
    out = {}
    for where, _, m in page_links(MLX_BLOB):
        if m["a"] and m["path"] not in pinned:
            out[(m["path"], int(m["a"]), int(m["b"] or m["a"]))] = where
    return out


#: Facts whose links are sites the tests' own run names (the emulator page's list of kernels
#: that warned links each warning's line): what they point at is the emulator's finding, not
#: a statement a reviewer checked, and the list changes with every report.
MEASURED_LINKS = ("{{fact emulator.warnings}}",)


def page_links(pattern: re.Pattern) -> list[tuple[str, int, re.Match]]:
    """Every match on every page, after expanding facts (links are often facts), but for
    :data:`MEASURED_LINKS`."""
    found = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        for number, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            for fact in MEASURED_LINKS:
                line = line.replace(fact, "")
            for m in pattern.finditer(facts.expand_line(line)):
                found.append((f"docs/{page.relative_to(REPO / 'docs')}:{number}", number, m))
    return found


def test_mlx_links_point_at_the_pinned_tag_and_checked_lines():
    pins = vendor.load_pins().mlx
    pinned = {f"{vendor.MLX_KERNELS_SUBPATH}/{f.path}": f for f in pins.files}
    links = page_links(MLX_BLOB)
    assert links, "no MLX links found"
    for where, _, m in links:
        rev, path = m["rev"], m["path"]
        assert rev == pins.rev, f"{where}: MLX link at {rev!r}; every MLX link names the pinned tag {pins.rev}"
        if path in pinned and m["a"]:
            start, end = int(m["a"]), int(m["b"] or m["a"])
            key = (pinned[path].path, start, end)
            assert key in VERIFIED_LINKS, (
                f"{where}: a link to {path} lines {start}-{end} that no one has checked; read them "
                f"in the pinned file, then add their hash to VERIFIED_LINKS")
            assert _range_hash(pinned[path].vendored, start, end) == VERIFIED_LINKS[key], (
                f"{where}: {path} lines {start}-{end} changed under the link; check what the page says")


def test_every_linked_or_restated_host_range_was_read_at_the_tag():
    """A host range a page links or a rule follows is in HOST_LINES (checked in CI too)."""
    for key, where in linked_host_ranges().items():
        assert key in HOST_LINES, f"{where}: a link to {key[0]} lines {key[1]}-{key[2]} that no one has read; " \
                                  "read it at the pinned tag, then add its hash to HOST_LINES"
    for key in restated_host_ranges():
        assert key in HOST_LINES, f"gemmglossary.mlx follows {key[0]} lines {key[1]}-{key[2]}, not in HOST_LINES"


@pytest.mark.skipif(not MLX_MIRROR.is_dir(), reason="no MLX source mirror here: the host lines cannot be read")
def test_host_ranges_are_unchanged_at_the_pinned_tag():
    """The recorded text of every host range is the text at the pinned tag: after a bump,
    each range that changed fails until it is read again (README, bumping MLX)."""
    texts: dict[str, list[str]] = {}
    changed = []
    for (path, start, end), recorded in sorted(HOST_LINES.items()):
        if path not in texts:
            texts[path] = subprocess.run(["git", "--git-dir", str(MLX_MIRROR), "show", f"{mm.MLX_TAG}:{path}"],
                                         capture_output=True, text=True, check=True).stdout.split("\n")
        if _lines_hash(texts[path], start, end) != recorded:
            changed.append(f"{path} lines {start}-{end}")
    assert not changed, f"changed at {mm.MLX_TAG} (read them again): " + ", ".join(changed)


def test_every_mlx_module_names_the_host_files_it_restates():
    """docs/sources.md's table of what was read at the tag covers every module of the package."""
    import pkgutil

    from gemmglossary import mlx as package

    modules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    listed = [m for m, _, _ in package.HOST_SOURCES]
    assert sorted(listed) == sorted(modules), "gemmglossary.mlx.HOST_SOURCES lists each module once"
    text = (REPO / "docs" / "sources.md").read_text(encoding="utf-8")
    assert "{{fact mlx.host_sources}}" in text


@pytest.mark.skipif(not MLX_MIRROR.is_dir(), reason="no MLX source mirror here: the host files cannot be listed")
def test_every_listed_host_file_exists_at_the_tag():
    from gemmglossary import mlx as package

    files = {f for _, _, fs in package.HOST_SOURCES for f in fs}
    tree = subprocess.run(["git", "--git-dir", str(MLX_MIRROR), "ls-tree", "-r", "--name-only", mm.MLX_TAG],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    assert not files - set(tree), sorted(files - set(tree))


def test_host_record_has_no_stale_entries():
    used = set(linked_host_ranges()) | restated_host_ranges()
    assert not set(HOST_LINES) - used, sorted(set(HOST_LINES) - used)


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
