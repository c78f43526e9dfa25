"""A real ``mkdocs build`` of a tiny site that uses the hook and the repo's Markdown config."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from gemmglossary import vendor
from gemmglossary.excerpts.update import update

from .conftest import REPO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mkdocs_cli  # noqa: E402 - MkDocs' command in this process (tests/mkdocs_cli.py)

pytestmark = pytest.mark.slow

MLX_PAGE = """\
# MLX

```metal annotate="34"
--8<-- "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h:32:40"
```

1.  The fragment is 8 by 8.
"""

LLAMA_PAGE = """\
# llama.cpp

```metal annotate="196"
--8<-- "kernels/vendor/llama.cpp/ggml/src/ggml-common.h:194:198"
```

1.  The block's one scale.
"""


@pytest.fixture
def site(with_mlx):
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    config["site_name"] = "Tiny"
    config["nav"] = [{"Home": "index.md"}, {"MLX": "glossary/mlx.md"}, {"llama.cpp": "glossary/llama.md"}]
    # The repo's theme and Markdown extensions, with only this hook and no other plugin.
    config["hooks"] = ["docs/.hooks/excerpts.py"]
    config["plugins"] = ["search"]
    (with_mlx.root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    hook = REPO / "docs" / ".hooks" / "excerpts.py"
    (with_mlx.root / "docs" / ".hooks").mkdir()
    shutil.copy(hook, with_mlx.root / "docs" / ".hooks" / "excerpts.py")
    with_mlx.page("glossary/mlx.md", MLX_PAGE)
    with_mlx.page("glossary/llama.md", LLAMA_PAGE)
    assert update().ok
    return with_mlx


def build(root, *args):
    env = {**os.environ, "GEMMGLOSSARY_ROOT": str(root), "NO_MKDOCS_2_WARNING": "1"}
    return mkdocs_cli.build([*args, "-d", str(root / "site")], cwd=root, env=env)


def test_strict_build_expands_excerpts(site):
    run = build(site.root, "--strict")
    assert run.returncode == 0, run.stderr
    html = (site.root / "site" / "index.html").read_text()
    # Title, the file's own line numbers, the highlighted line, the annotation markers.
    assert '<span class="filename">kernels/add.metal · lines 5–11</span>' in html
    assert '<a href="#__codelineno-0-5"><span class="linenos" data-linenos=" 5 "></span></a>' in html
    assert '<a href="#__codelineno-0-11"><span class="linenos" data-linenos="11 "></span></a>' in html
    assert '<span class="c1">// input buffer (1)</span>' in html
    assert '<span class="c1">// (2)!</span>' in html
    assert '<span class="hll">' in html
    assert '<a class="excerpt-source" href="kernels/add.metal">kernels/add.metal, lines 5–11</a>' in html
    # The first-party kernel is published with the site, byte for byte.
    assert (site.root / "site" / "kernels" / "add.metal").read_text() == site.read("kernels/add.metal")
    pins = vendor.load_pins()
    mlx = (site.root / "site" / "glossary" / "mlx" / "index.html").read_text()
    assert (f'href="https://github.com/ml-explore/mlx/blob/{pins.mlx.rev}/mlx/backend/metal/kernels/'
            'steel/gemm/mma.h#L32-L40"') in mlx
    assert "(1)" in mlx
    # llama.cpp's files go through the same extension: locked, numbered, linked at the commit.
    llama = (site.root / "site" / "glossary" / "llama" / "index.html").read_text()
    commit = pins.source("llama_cpp").rev
    assert (f'href="https://github.com/ggml-org/llama.cpp/blob/{commit}/ggml/src/ggml-common.h#L194-L198"'
            in llama)
    assert '<span class="filename">llama.cpp/ggml/src/ggml-common.h · lines 194–198</span>' in llama
    assert "block_q4_0" in llama and "(1)" in llama


def test_drifted_excerpt_fails_the_build_even_without_strict(site):
    site.insert_lines("kernels/add.metal", 3, ["// a", "// b"])
    run = build(site.root)
    assert run.returncode != 0
    assert "docs/index.md:6: kernels/add.metal lines 5–11: moved: now at lines 7–13; run `gemmglossary excerpts update`" in run.stderr
    assert update().ok
    assert build(site.root, "--strict").returncode == 0


def test_changed_excerpt_and_stray_excerpt_line_fail_the_build(site):
    site.replace_line("kernels/add.metal", 7, "    a[i] += 2.0f;")
    site.page("cpp.md", '# C++\n\n```cpp\n--8<-- "kernels/add.metal:1:3"\n```\n')
    run = build(site.root, "--strict")
    assert run.returncode != 0
    assert "docs/index.md:6: kernels/add.metal lines 5–11: text changed; review the page, then `gemmglossary excerpts update --accept-changes`" in run.stderr
    assert """docs/cpp.md:4: excerpt line '--8<-- "kernels/add.metal:1:3"' in a 'cpp' fence is not quoted""" in run.stderr


def test_missing_vendor_manifest_fails_clearly(site):
    (site.root / "kernels" / "vendor.toml").unlink()
    shutil.rmtree(site.root / "kernels" / "vendor")
    run = build(site.root)
    assert run.returncode != 0
    assert "the upstream files the pages quote" in run.stderr and "vendor.toml: missing" in run.stderr


def test_pages_left_out_of_the_build_do_not_fail_it(site):
    config = yaml.safe_load((site.root / "mkdocs.yml").read_text())
    config["exclude_docs"] = "drafts/\n"
    (site.root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    site.page("drafts/wip.md", '# WIP\n\n```metal\n--8<-- "kernels/add.metal:1:3"\n```\n')
    assert update().ok  # the CLI locks every page under docs/
    run = build(site.root, "--strict")
    assert run.returncode == 0, run.stderr
    site.page("drafts/wip.md", "# WIP\n")  # the lock entry becomes unused: only the CLI cares
    assert build(site.root, "--strict").returncode == 0
    (site.root / "docs" / "drafts" / "wip.md").unlink()  # a deleted page's entry fails the build
    run = build(site.root)
    assert run.returncode != 0
    assert "excerpts.lock.json: docs/drafts/wip.md: kernels/add.metal lines 1–3: lock entry that no page uses (no such page)" in run.stderr
