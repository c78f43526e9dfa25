"""-D defaults, constexpr constants and struct layouts, read from a kernel file."""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.msl.declarations import constants, macro_defaults, struct_dtype, struct_dtypes
from gemmglossary.msl.expressions import ExpressionError, evaluate
from gemmglossary.msl.tokens import SourceError

SOURCE = """\
#ifndef WM
#define WM 2   // simdgroups per row
#endif
#ifndef TM
#  define TM \\
     4
#endif
#define SCALE 3u
constant constexpr uint SM = TM * 8;
constexpr constant uint BM = WM * SM;  // 64
static constant constexpr uint THREADS = WM * 32;
constant constexpr float RATIO = 0.5f;
void f() { constexpr uint LOCAL = 7; }
"""


def test_macro_defaults_are_the_ifndef_define_pairs():
    assert macro_defaults(SOURCE) == {"WM": "2", "TM": "4"}


def test_constants_follow_the_file_and_the_defines():
    c = constants(SOURCE)
    assert {k: c[k] for k in ("WM", "TM", "SCALE", "SM", "BM", "THREADS")} == dict(
        WM=2, TM=4, SCALE=3, SM=32, BM=64, THREADS=64)
    assert "LOCAL" not in c  # function scope is not file scope
    with pytest.raises(KeyError, match="RATIO = 0.5f"):
        c["RATIO"]
    d = constants(SOURCE, {"TM": 2, "WM": "1 + 1"})
    assert (d["SM"], d["BM"], d["WM"]) == (16, 32, 2)
    bad = constants(SOURCE, {"TM": "x"})
    assert bad["WM"] == 2
    with pytest.raises(KeyError, match=r"-DTM='x' is not an integer"):
        bad["BM"]  # BM = WM * SM, SM = TM * 8


def test_a_macro_defined_in_two_branches_has_no_value():
    c = constants("#if A\n#define X 1\n#else\n#define X 2\n#endif\n")
    with pytest.raises(KeyError, match="defined more than once"):
        c["X"]


def test_struct_layout_follows_metal_sizes_and_alignments():
    src = """
    struct Inner { float3 v; uint n; packed_float3 p; half h[3]; };
    struct [[nodiscard]] Outer { uint a, b; Inner in; metal::float2 f; bool flag; };
    """
    inner = struct_dtype(src, "Inner")
    assert [inner.fields[n][1] for n in ("v", "n", "p", "h")] == [0, 16, 20, 32]
    assert inner.itemsize == 48  # a float3 is 16 bytes and aligns the struct to 16
    outer = struct_dtype(src, "Outer")
    assert [outer.fields[n][1] for n in ("a", "b", "in", "f", "flag")] == [0, 4, 16, 64, 72]
    assert outer.itemsize == 80
    assert set(struct_dtypes(src)) == {"Inner", "Outer"}


def test_first_party_gemm_params_is_32_bytes_of_u4_and_f4():
    from gemmglossary import paths

    dt = struct_dtype((paths.kernels_dir() / "tiled_gemm.metal").read_text(), "GemmParams")
    assert dt == np.dtype([("M", "<u4"), ("N", "<u4"), ("K", "<u4"), ("lda", "<u4"),
                           ("ldb", "<u4"), ("ldc", "<u4"), ("alpha", "<f4"), ("beta", "<f4")])


def test_unsupported_member_and_missing_struct_are_errors():
    with pytest.raises(SourceError, match=r"k.metal:1: error: cannot lay out the struct member 'texture2d < float > t'"):
        struct_dtype("struct S { texture2d<float> t; };", "S", "k.metal")
    with pytest.raises(SourceError, match=r"cannot lay out a struct member of type 'float8'"):
        struct_dtype("struct S { float8 t; };", "S")
    with pytest.raises(KeyError, match="no 'struct Q"):
        struct_dtype("struct S { uint a; };", "Q")


@pytest.mark.parametrize("expr, value", [
    ("WM * WN * 32", 128), ("(7 / 2) * 2", 6), ("-7 / 2", -3), ("-7 % 2", -1), ("0x10u + 1", 17),
    ("1 << 4 | 1", 17), ("~0 & 0xff", 255), ("16UL", 16),
])
def test_integer_expressions_have_c_semantics(expr, value):
    assert evaluate(expr, {"WM": 2, "WN": 2}) == value


@pytest.mark.parametrize("expr, message", [
    ("X + 1", "unknown name 'X'"), ("f(1)", "is not integer arithmetic"), ("1.5", "is not integer arithmetic"),
    ("1 +", "is not an integer expression"), ("1 / 0", "division by zero"),
])
def test_expressions_that_are_not_integer_arithmetic_are_errors(expr, message):
    with pytest.raises(ExpressionError, match=message.replace("(", r"\(")):
        evaluate(expr, {})


def test_function_constants_are_read_from_tokens():
    from gemmglossary.msl.declarations import function_constants

    src = """\
// constant bool in_a_comment [[function_constant(9)]];
constant bool has_bias [[function_constant(0)]];
constant metal::uint tile  [[function_constant(1 + 2)]];
constant int named [[function_constant(INDEX)]];
constant constexpr uint not_one = 4;
"""
    found = function_constants(src, "k.metal")
    assert [(f.name, f.type, f.argument, f.index, f.line) for f in found] == [
        ("has_bias", "bool", "0", 0, 2), ("tile", "metal :: uint", "1 + 2", 3, 3),
        ("named", "int", "INDEX", None, 4)]
    assert found[0].file == "k.metal"
    # asked again (a launch plan asks on every launch): the same declarations, from a list
    # the caller may change; another text or file name is read anew
    again = function_constants(src, "k.metal")
    assert again == found and again is not found
    again.clear()
    assert function_constants(src, "k.metal") == found
    assert [f.file for f in function_constants(src, "other.metal")] == ["other.metal"] * 3
    assert [f.name for f in function_constants(src.replace("has_bias", "has_scale"), "k.metal")][0] == "has_scale"
