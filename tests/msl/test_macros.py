"""Kernel instantiations written through a macro are read as written, on their lines."""

import pytest

from gemmglossary.msl.macros import MacroError, expand_kernel_macros
from gemmglossary.msl.signature import kernels

SOURCE = """\
template <typename T>
[[kernel]] void scale(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] *= 2; }

#define ONE(name, T)                                                 \\
    template [[host_name("scale_" #name)]] [[kernel]]                \\
    decltype(scale<T>) scale<T>;
#define BOTH(a, b) ONE(a ## _x, a) ONE(b ## _x, b)
#define NOT_A_KERNEL(v) (v + 1)

BOTH(float,
     half)
ONE(int, int)
int y = NOT_A_KERNEL(2);
"""


def test_instantiations_through_macros_are_kernels_on_the_invocation_line():
    found = [(k.name, k.line, k.template_arguments) for k in kernels(SOURCE, "s.metal")]
    assert found == [("scale_float_x", 10, "float"), ("scale_half_x", 10, "half"), ("scale_int", 12, "int")]


def test_lines_and_other_macros_are_kept():
    out = expand_kernel_macros(SOURCE)
    assert out.count("\n") == SOURCE.count("\n")
    assert out.split("\n")[10] == ""  # the second line of BOTH(...), left blank
    assert "NOT_A_KERNEL(2)" in out.split("\n")[12]
    assert expand_kernel_macros("kernel void f() {}\n") == "kernel void f() {}\n"


def test_a_wrong_argument_count_names_the_line():
    with pytest.raises(MacroError, match=r"s.metal:10: error: macro BOTH takes 2 arguments, given 1"):
        kernels(SOURCE.replace("BOTH(float,\n     half)", "BOTH(float)\n"), "s.metal")


def test_a_string_argument_is_not_substituted_inside_literals():
    src = ('#define K(T) template [[host_name("T_" #T)]] [[kernel]] decltype(f<T>) f<T>;\n'
           'template <typename T> [[kernel]] void f(device T* x [[buffer(0)]]) {}\nK(float)\n')
    assert [k.name for k in kernels(src)] == ["T_float"]
