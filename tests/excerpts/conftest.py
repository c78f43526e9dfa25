"""A throw-away project root (docs/, kernels/, an empty excerpts.lock.json) for each test.

``GEMMGLOSSARY_ROOT`` points the tooling at it, so nothing here touches the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gemmglossary import paths, vendor

REPO = Path(__file__).resolve().parents[2]

#: Twelve numbered lines; line 5 carries a comment, 8–9 a block comment.
KERNEL = """\
// 1 A small kernel for the tests.
#include <metal_stdlib>
using namespace metal;

kernel void add(device float* a [[buffer(0)]],  // input buffer
                uint i [[thread_position_in_grid]]) {
    a[i] += 1.0f;
    /* a block
       comment */
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
// 12 end
"""

PAGE = """\
# Adding one

The kernel body:

```metal annotate="5 7" hl_lines="7"
--8<-- "kernels/add.metal:5:11"
```

1.  The buffer.
2.  The add.

More text.
"""


EMPTY_LOCK = '{"version": 1, "excerpts": []}\n'


class Project:
    def __init__(self, root: Path):
        self.root = root

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def page(self, name: str, text: str) -> Path:
        return self.write(f"docs/{name}", text)

    def kernel(self, name: str, text: str) -> Path:
        return self.write(f"kernels/{name}", text)

    def insert_lines(self, rel: str, at: int, new: list[str]) -> None:
        """Insert ``new`` before 1-based line ``at`` of a file."""
        lines = self.read(rel).split("\n")
        lines[at - 1 : at - 1] = new
        self.write(rel, "\n".join(lines))

    def replace_line(self, rel: str, n: int, text: str) -> None:
        lines = self.read(rel).split("\n")
        lines[n - 1] = text
        self.write(rel, "\n".join(lines))


@pytest.fixture
def project(tmp_path, monkeypatch) -> Project:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "kernels").mkdir()
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(root))
    assert paths.project_root() == root.resolve()
    p = Project(root.resolve())
    p.kernel("add.metal", KERNEL)
    p.page("index.md", PAGE)
    p.write("excerpts.lock.json", EMPTY_LOCK)  # as in the repository: a lock, here with no entries yet
    return p


@pytest.fixture
def with_mlx(project) -> Project:
    """The project with the pinned upstream files (MLX's, llama.cpp's) materialized into its
    kernels/vendor/."""
    shutil.copy(REPO / "kernels" / "vendor.toml", project.root / "kernels" / "vendor.toml")
    vendor.ensure()
    return project
