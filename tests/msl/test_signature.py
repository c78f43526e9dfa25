"""The kernel-signature reader: declarations found, parameters read as the compiler reads them."""

from __future__ import annotations

import pytest

from gemmglossary import paths
from gemmglossary.msl.declarations import constants
from gemmglossary.msl.expressions import evaluate
from gemmglossary.msl.signature import find_kernel, kernels, parse_parameters
from gemmglossary.msl.tokens import SourceError

SOURCE = """\
#include <metal_stdlib>
using namespace metal;
// kernel void in_a_comment(device float* x [[buffer(0)]]) {}
struct P { uint n; };
inline float helper(float x) { return x.kernel; }

kernel void plain(device const float* a [[buffer(0)]],  // a comment
                  device float*       out [[buffer(1)]],
                  constant P&         p   [[buffer(2)]],
                  threadgroup float*  tmp [[threadgroup(0)]],
                  uint2 gid [[thread_position_in_grid]])
{
    out[gid.x] = a[gid.x] + p.n;
}

[[kernel, max_total_threads_per_threadgroup(64)]]
void attributed(device vec<float, 4>* v [[buffer(1 + 1)]],
                constant uint& n [[buffer(0), function_constant(has_n)]]) {}

template <typename T, int N>
[[kernel]] void tmpl(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {}

template [[host_name("tmpl_float_4")]] [[kernel]] decltype(tmpl<float, 4>) tmpl<float, 4>;
"""


def test_every_kernel_is_found_and_nothing_else():
    found = kernels(SOURCE, "k.metal")
    assert [k.name for k in found] == ["plain", "attributed", "tmpl_float_4"]
    assert find_kernel(SOURCE, "in_a_comment") is None and find_kernel(SOURCE, "helper") is None


def test_parameters_names_types_attributes_and_lines():
    plain = find_kernel(SOURCE, "plain", "k.metal")
    assert [(p.name, p.type, p.line) for p in plain.parameters] == [
        ("a", "device const float *", 7), ("out", "device float *", 8), ("p", "constant P &", 9),
        ("tmp", "threadgroup float *", 10), ("gid", "uint2", 11)]
    a, out, p, tmp, gid = plain.parameters
    assert (a.address_space, a.value_type, a.is_pointer, a.buffer) == ("device", "float", True, 0)
    assert (p.address_space, p.value_type, p.is_reference, p.buffer) == ("constant", "P", True, 2)
    assert tmp.index("threadgroup") == 0 and tmp.buffer is None
    assert gid.attribute("thread_position_in_grid") == "" and gid.address_space is None
    assert [b.name for b in plain.buffers] == ["a", "out", "p"]
    assert plain.file == "k.metal" and plain.line == 7


def test_kernel_attributes_expressions_and_function_constants():
    k = find_kernel(SOURCE, "attributed")
    assert k.attribute("max_total_threads_per_threadgroup") == "64"
    v, n = k.parameters
    assert v.type == "device vec < float , 4 > *" and v.buffer == 2  # buffer(1 + 1)
    assert n.attribute("function_constant") == "has_n" and n.buffer == 0


def test_template_instantiation_takes_the_templates_parameters():
    k = find_kernel(SOURCE, "tmpl_float_4")
    assert (k.function, k.template_arguments, k.template_parameters) == ("tmpl", "float , 4", "typename T , int N")
    assert [p.name for p in k.parameters] == ["x", "i"]


def test_instantiation_of_a_template_from_another_file_has_no_parameters():
    src = 'template [[host_name("g1")]] [[kernel]] decltype(gemm<float, 1>) gemm<float, 1>;\n'
    [k] = kernels(src)
    assert (k.name, k.function, k.parameters) == ("g1", "gemm", None)


def test_unbalanced_parenthesis_is_an_error_naming_the_line():
    with pytest.raises(SourceError, match=r"^bad.metal:2: error: unbalanced '\('"):
        kernels("\nkernel void f(device float* x [[buffer(0)]]\n", "bad.metal")


def test_buffer_index_that_is_not_arithmetic_is_an_error():
    [k] = kernels("kernel void f(device float* x [[buffer(IDX)]]) {}", "f.metal")
    with pytest.raises(ValueError, match=r"f.metal:1: error: cannot evaluate the index of \[\[buffer\(IDX\)\]\]"):
        k.parameters[0].buffer


def test_a_kernel_file_read_as_written_gives_what_the_emulator_compiles():
    """gemmglossary.kernels reads the first-party files as written; the emulator reads
    them preprocessed (through the same reader): names, types, lines and the
    max_total_threads expression agree."""
    from gemmglossary.emulator.build import preprocess
    from gemmglossary.emulator.rewrite import rewrite

    for path in sorted(p for p in paths.kernels_dir().glob("*.metal") if '#include "mlx/' not in p.read_text()):
        pre = preprocess(path.read_text(), str(path), [], None)
        emulated = rewrite(pre, str(path)).kernels
        as_written = {k.name: k for k in kernels(path.read_text(), str(path))}
        assert emulated and set(emulated) == set(as_written), path
        for name, decl in emulated.items():
            assert [(p.name, p.type, p.line, p.file) for p in decl.params] == [
                (p.name, p.type, p.line, p.file) for p in as_written[name].parameters], (path, name)
            written = as_written[name].attribute("max_total_threads_per_threadgroup")
            if written is None:
                assert decl.mtt_expr is None
            else:  # the emulator sees the macros expanded (WM * WN * 32 is 2 * 2 * 32 there),
                # and a constexpr constant by its name (THREADS), resolved in the preprocessed file
                assert evaluate(written, constants(path.read_text()).values) == evaluate(
                    decl.mtt_expr, constants(pre).values)


def test_the_emulator_reports_an_unbalanced_bracket_as_a_compile_error():
    from gemmglossary.emulator.errors import CompileError
    from gemmglossary.emulator.rewrite import rewrite

    with pytest.raises(CompileError, match=r"^bad.metal:2: error: unbalanced '\('"):
        rewrite("\nkernel void f(device float* x [[buffer(0)]]\n", "bad.metal")


def test_parse_parameters_on_a_token_range():
    from gemmglossary.msl.lexer import assign_lines, tokenize

    toks = tokenize("f(device float* x [[buffer(0)]], uint i [[thread_index_in_threadgroup]])")
    assign_lines(toks, "t")
    lp = next(i for i, t in enumerate(toks) if t.text == "(")
    rp = len(toks) - 1
    assert [(p.name, p.attributes) for p in parse_parameters(toks, lp, rp)] == [
        ("x", (("buffer", "0"),)), ("i", (("thread_index_in_threadgroup", ""),))]
