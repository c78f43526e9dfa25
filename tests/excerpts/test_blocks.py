from gemmglossary.excerpts.blocks import find_blocks, parse_numbers, parse_excerpt_line


def test_finds_block_with_attrs_and_annotation_list():
    text = """\
# T
```metal annotate="36 44" hl_lines="40"
--8<-- "kernels/matmul_tiled.metal:31:52"
```

1.  First
    continued.
2.  Second

After.
"""
    [b] = find_blocks(text)
    assert (b.file, b.start, b.end) == ("kernels/matmul_tiled.metal", 31, 52)
    assert b.attrs == [("annotate", "36 44"), ("hl_lines", "40")]
    assert (b.open_index, b.line_index, b.close_index, b.page_line) == (1, 2, 3, 3)
    assert b.list_items == 2
    assert b.error is None


def test_single_quotes_tilde_fence_and_indentation():
    text = """\
!!! note

    ~~~~metal
    --8<-- 'kernels/a.metal:1:2'
    ~~~~
"""
    [b] = find_blocks(text)
    assert (b.file, b.start, b.end, b.indent, b.fence) == ("kernels/a.metal", 1, 2, "    ", "~~~~")


def test_blocks_inside_other_fences_are_not_excerpts():
    text = """\
````markdown
```metal
--8<-- "kernels/a.metal:1:2"
```
````

```cpp
--8<-- "kernels/a.metal:1:2"
```

```metal
int x;
```
"""
    assert find_blocks(text) == []


def test_malformed_snippet_lines():
    for spec in ['"kernels/a.metal"', '"kernels/a.metal:3"', '"kernels/a.metal:a:b"', "kernels/a.metal:1:2"]:
        [b] = find_blocks(f"```metal\n--8<-- {spec}\n```\n")
        assert b.error and "malformed excerpt line" in b.error, spec


def test_extra_content_and_unclosed_fence_are_errors():
    [b] = find_blocks('```metal\n--8<-- "kernels/a.metal:1:2"\nint x;\n```\n')
    assert "only its excerpt line" in b.error
    [b] = find_blocks('```metal\n--8<-- "kernels/a.metal:1:2"\n')
    assert "never closed" in b.error


def test_parse_helpers():
    assert parse_excerpt_line('--8<-- "k/x.metal:3:9"') == ("k/x.metal", 3, 9, None)
    assert parse_excerpt_line('--8<-- "k/x.metal:9:3"')[1:3] == (9, 3)
    assert parse_numbers("3-5 8", ranges=True).numbers == [3, 4, 5, 8]
    assert parse_numbers("3-5", ranges=False).error
    assert parse_numbers("x", ranges=False).error
    assert parse_numbers(None, ranges=False).numbers == []
