"""What the excerpts extension emits for an excerpt block (title, linenums, markers, source link)."""

from __future__ import annotations

import pytest

from gemmglossary import vendor
from gemmglossary.docs_hooks.excerpts import ExcerptError, expand_page
from gemmglossary.docs_hooks.page import PageRef
from gemmglossary.excerpts.render import add_markers, comment_states
from gemmglossary.excerpts.update import update

from .conftest import PAGE


def render(markdown, src_uri="index.md", *, lock=True):
    """The expansion of ``markdown`` as page ``src_uri``, written to docs/ and locked first."""
    from gemmglossary.paths import project_root

    path = project_root() / "docs" / src_uri
    if lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown, encoding="utf-8")
        assert update().ok
    return expand_page(markdown, PageRef(src_uri, path if lock else None, "test"))


def test_comment_states():
    lines = ["int a; // c", 'x = "//"; ', "/* open", "still */ y;", "z; /* one */", "'/'; /*"]
    assert comment_states(lines) == [
        (False, True), (False, False), (True, False), (False, False), (False, False), (True, False),
    ]


def test_markers():
    assert add_markers("  x = 1;  ", [1], False, False) == "  x = 1; // (1)!"
    assert add_markers("x; // why", [2], False, True) == "x; // why (2)"
    assert add_markers("   inside a comment", [3], True, False) == "   inside a comment (3)"
    assert add_markers("x; y;", [1, 2], False, False) == "x; y; // (1) (2)"
    assert add_markers("#define F(x) \\", [1], False, False) == "#define F(x) /* (1) */ \\"


def test_expansion_of_a_first_party_excerpt(project):
    out = render(PAGE, "glossary/add.md")
    expected = """\
# Adding one

The kernel body:

Source: [kernels/add.metal, lines 5–11](../kernels/add.metal){ .excerpt-source }

```metal title="kernels/add.metal · lines 5–11" linenums="5" hl_lines="3"
kernel void add(device float* a [[buffer(0)]],  // input buffer (1)
                uint i [[thread_position_in_grid]]) {
    a[i] += 1.0f; // (2)!
    /* a block
       comment */
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
```

1.  The buffer.
2.  The add.
"""
    assert out.startswith(expected)


def test_expansion_keeps_indentation_and_other_attributes(project):
    page = '!!! note\n    Text.\n    ```metal .extra data-x="1"\n    --8<-- "kernels/add.metal:12:12"\n    ```\n'
    out = render(page)
    assert out.split("\n") == [
        "!!! note",
        "    Text.",
        "",
        "    Source: [kernels/add.metal, line 12](kernels/add.metal){ .excerpt-source }",
        "",
        '    ```metal data-x="1" .extra title="kernels/add.metal · line 12" linenums="12"',
        "    // 12 end",
        "    ```",
        "",
    ]


def test_expansion_of_an_mlx_excerpt_links_upstream(with_mlx):
    page = '```metal\n--8<-- "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h:32:40"\n```\n'
    out = render(page)
    tag = vendor.load_pins().mlx.rev
    link = (f"https://github.com/ml-explore/mlx/blob/{tag}/mlx/backend/metal/kernels/"
            "steel/gemm/mma.h#L32-L40")
    assert f"Source: [mlx/backend/metal/kernels/steel/gemm/mma.h, lines 32–40 (MLX {tag})]({link})" in out
    assert 'title="mlx/backend/metal/kernels/steel/gemm/mma.h · lines 32–40" linenums="32"' in out


def test_expansion_of_a_llama_cpp_excerpt_links_the_pinned_commit(with_mlx):
    llama = vendor.load_pins().source("llama_cpp")
    page = '```metal\n--8<-- "kernels/vendor/llama.cpp/ggml/src/ggml-common.h:194:198"\n```\n'
    out = render(page)
    link = f"https://github.com/ggml-org/llama.cpp/blob/{llama.rev}/ggml/src/ggml-common.h#L194-L198"
    assert (f"Source: [llama.cpp/ggml/src/ggml-common.h, lines 194–198 (llama.cpp {llama.rev[:7]})]({link})"
            in out)
    assert 'title="llama.cpp/ggml/src/ggml-common.h · lines 194–198" linenums="194"' in out
    assert "} block_q4_0;" in out


def test_code_containing_fences_gets_a_longer_fence(project):
    project.kernel("f.metal", "// ```\n```\nint x;\n")
    out = render('```metal\n--8<-- "kernels/f.metal:1:3"\n```\n')
    assert '\n````metal title=' in out and out.rstrip().endswith("````")


def test_pages_without_excerpts_are_untouched(project):
    page = "# T\n\n```metal\nint x;\n```\n"
    assert render(page) is page


def test_invalid_excerpt_fails_the_page(project):
    with pytest.raises(ExcerptError, match=r"docs/index.md:2: kernels/add.metal lines 5–99: range past the end"):
        render('```metal\n--8<-- "kernels/add.metal:5:99"\n```\n', lock=False)
