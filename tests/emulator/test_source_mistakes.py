"""Metal source that Metal compiles compiles here, and a bracket mistake is reported where
it was made (issue #36)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary.emulator import CompileError, load_kernel
from gemmglossary.msl.lexer import assign_lines, tokenize
from gemmglossary.msl.tokens import SourceError, match


def test_a_kernel_without_metal_stdlib_compiles():
    # scalar and vector types, address spaces and attributes are the language's own
    src = ("kernel void twice(device float* a [[buffer(0)]], constant uint& n [[buffer(1)]],\n"
           "                  uint i [[thread_position_in_grid]]) {\n"
           "    float2 v = float2(a[i], 1.0f);\n"
           "    if (i < n) a[i] = v.x * 2.0f;\n"
           "}\n")
    k = load_kernel(src, "twice")
    a = np.arange(4, dtype=np.float32)
    k(a, np.uint32(4), threads=4, threads_per_threadgroup=4)
    assert a.tolist() == [0, 2, 4, 6]


def test_an_unclosed_parenthesis_is_named_at_its_line():
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void f(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           "    float x = (a[i] + 1.0f\n"
           "    a[i] = x;\n"
           "}\n")
    with pytest.raises(CompileError) as info:
        load_kernel(src, "f")
    assert "<source>:4: error: unclosed '('" in str(info.value) and "unbalanced '{'" not in str(info.value)


@pytest.mark.parametrize("text, line, what", [
    ("{\n a[(1];\n}\n", 2, "unclosed '('"),
    ("{\n f(x[1);\n}\n", 2, "unclosed '['"),
    ("{\n {\n", 2, "unbalanced '{'"),
])
def test_the_bracket_left_open_is_the_one_named(text, line, what):
    toks = tokenize(text)
    assign_lines(toks, "<t>")
    with pytest.raises(SourceError, match=f"^<t>:{line}: error: {re.escape(what)}"):
        match(toks, next(i for i, t in enumerate(toks) if t.text == "{"))
