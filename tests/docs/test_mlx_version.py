"""One MLX version everywhere: the release pinned in kernels/vendor.toml.

The site quotes that release's headers and restates that release's host code, and every
link to MLX's source names its tag. A page, docstring, comment or link that names another
MLX version (``0.32.4``, ``v0.32.2-dev``), links another revision of MLX's repository, or
names an MLX commit fails here, with the file and line, until it is brought to the pinned
release or reworded. Scanned: the pages (as written and with their facts expanded), the
README, the package's sources, the kernels, snippets and exercises, and the project files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gemmglossary import vendor
from gemmglossary.docs_hooks import facts

REPO = Path(__file__).resolve().parents[2]
PINNED = vendor.load_pins().mlx

#: A version of MLX's 0.x line with a two-digit minor (MLX's numbering since 0.10), with an
#: optional ``v`` and development suffix; other dependencies' versions do not look like this.
VERSION = re.compile(r"(?<![\w.])v?(0\.[1-9]\d\.\d+)((?:[.-]?(?:dev|rc|post)\w*)?)(?![\w.]*\d)")
MLX_REV = re.compile(r"github\.com/ml-explore/mlx/(?:blob|tree|commit|releases/tag)/([^/\s)#\"'`]+)")
#: A commit-like hex word (7 to 40 digits, at least one a-f and one 0-9).
HEX = re.compile(r"(?<![0-9a-fA-F])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![0-9a-fA-Z])")
MENTIONS_MLX = re.compile(r"\bmlx\b|ml-explore", re.I)

SCANNED = ["docs/**/*.md", "README.md", "mkdocs.yml", "pyproject.toml", "coverage-exemptions.toml",
           "kernels/*.metal", "kernels/vendor.toml", "src/**/*.py", "snippets/*.py", "exercises/**/*.metal",
           "exercises/**/*.toml", "exercises/**/*.md", ".github/workflows/*.yml", "tests/**/*.py"]
#: Files whose version-like strings are test data, not statements about MLX.
NOT_SCANNED = {"tests/docs/test_mlx_version.py",  # the examples below
               "tests/snippets/test_snippets.py",  # stand-in manifests whose text is only hashed
               # installs an mlx other than the pin on purpose: a user's mlx need not be the site's
               "tests/linux_ci/test_wheel.py"}


def scanned_files() -> list[Path]:
    files = {p for pattern in SCANNED for p in REPO.glob(pattern) if p.is_file()}
    return sorted(p for p in files if p.relative_to(REPO).as_posix() not in NOT_SCANNED)


def other_commits() -> set[str]:
    """Commits of other projects the files may name beside MLX (llama.cpp's, m5-gemm's)."""
    pins = vendor.load_pins()
    return {s.rev for s in pins.sources if s.key != "mlx"} | {"29414bebb522ddacaa009959f2bcdad9f5b3e5cf"}


def problems_in(where: str, line: str, commits: bool = True) -> list[str]:
    """What is stale in one line (``commits``: look for commit-like words too; not in a page's
    expanded facts, whose tables list sha256 prefixes)."""
    out = []
    for m in VERSION.finditer(line):
        version, suffix = m.group(1), m.group(2)
        if version != PINNED.version or suffix:
            out.append(f"{where}: names MLX version {m.group(0)!r}; the pin is {PINNED.version} "
                       f"(kernels/vendor.toml)")
    for m in MLX_REV.finditer(line):
        if m.group(1) != PINNED.rev and not m.group(1).startswith(("{{fact", "…", "<")) and "{" not in m.group(1):
            out.append(f"{where}: links MLX at {m.group(1)!r}, not the pinned tag {PINNED.rev}")
    if commits and MENTIONS_MLX.search(line):
        allowed = other_commits()
        for m in HEX.finditer(line):
            if not any(c.startswith(m.group(0)) for c in allowed):
                out.append(f"{where}: names {m.group(0)!r} beside MLX: a commit? MLX is read at the "
                           f"tag {PINNED.rev}, never at a commit")
    return out


def test_no_file_names_another_mlx_version_or_commit():
    problems = []
    for path in scanned_files():
        rel = path.relative_to(REPO).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            # (tests hold sha256 prefixes of MLX's lines: there only versions and links count)
            problems += problems_in(f"{rel}:{number}", line, commits=not rel.startswith("tests/"))
            if rel.startswith("docs/") and "{{fact" in line:
                problems += problems_in(f"{rel}:{number} (facts expanded)", facts.expand_line(line), commits=False)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("line, found", [
    ("the MLX 0.32.4 wheel", "0.32.4"),
    ("read at 0.32.2-dev", "0.32.2-dev"),
    ("https://github.com/ml-explore/mlx/blob/v0.31.0/mlx/ops.cpp#L3", "v0.31.0"),
    ("https://github.com/ml-explore/mlx/tree/846d176227a0ac13d2667e58d2bb68b322109ab0", "846d176"),
    ("MLX commit 846d17622, whose scan.h", "846d17622"),
])
def test_the_scan_catches_each_kind(line, found):
    """The test above can fail: each kind of stale reference is found."""
    assert any(found in p for p in problems_in("x", line)), line


@pytest.mark.parametrize("line", [
    f"the MLX {PINNED.version} wheel", f"https://github.com/ml-explore/mlx/blob/{PINNED.rev}/mlx/ops.cpp#L3",
    "llama-cpp-python==0.3.36", "zensical==0.0.73", "mkdocs-jupyter>=0.25", "MLX's mma.h, lines 32-40",
    "llama.cpp 0c1e570 beside mlx",
])
def test_the_scan_lets_the_pinned_release_and_other_projects_be(line):
    assert problems_in("x", line) == []
