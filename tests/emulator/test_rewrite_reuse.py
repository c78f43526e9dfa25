"""The rewriter rewrites a source once for all the values of its function constants
(emulator/rewrite.py's placeholders): what it gives for each set of values is exactly what
rewriting with those values from the start gives, on MLX's kernels as on a small one; and
a walk it makes once over a source (the namespace of each kernel) gives what a walk from the
start would."""

from __future__ import annotations

import pytest

from gemmglossary import paths, vendor
from gemmglossary.emulator import CompileError, build, rewrite

# every kind of use: a value, a gated parameter, and whether a constant was given at all
FC_SRC = """
#include <metal_stdlib>
using namespace metal;
constant bool use_bias [[function_constant(0)]];
constant int scale [[function_constant(1)]];
constant float never_given [[function_constant(2)]];
constant bool use_bias_too = is_function_constant_defined(use_bias) && use_bias;

kernel void fc(device const float* x [[buffer(0)]],
               device float* y [[buffer(1)]],
               device const float* bias [[buffer(2), function_constant(use_bias)]],
               uint i [[thread_position_in_grid]]) {
  float v = x[i] * scale;
  if (use_bias_too) v += bias[i];
  if (is_function_constant_defined(never_given)) v = never_given;
  y[i] = v;
}
"""

VALUES = [{}, {"use_bias": True, 1: 3}, {0: False, "scale": 5}, {"use_bias": False, "scale": -2, "never_given": 1.5}]

# (file, kernel, function constants by index): steel's alignment and batch constants
# (200-202, 10, 100, 110) in the combinations the tests launch, and some they do not
STEEL = "steel_gemm_nn_float32_bm32_bn32_bk16_wm2_wn2"
STEEL_VALUES = [{10: False, 100: False, 110: False, 200: True, 201: True, 202: True},
                {10: True, 100: True, 110: False, 200: False, 201: True, 202: False},
                {200: False, 201: False, 202: False}, {}]


def fresh(text: str, file: str, values: dict, only=None) -> rewrite.Rewritten:
    """What the rewriter gives with the values from the start."""
    return rewrite.Rewriter(text, file, values, only).run()


def same(a: rewrite.Rewritten, b: rewrite.Rewritten) -> None:
    assert a.text == b.text
    assert a.function_constants == b.function_constants
    assert a.all_names == b.all_names and a.kernels == b.kernels


@pytest.mark.parametrize("values", VALUES, ids=str)
def test_a_small_source_for_each_set_of_values(values):
    pre = build.preprocess(FC_SRC, "<source>", [], None)
    same(rewrite.rewrite(pre, "<source>", values), fresh(pre, "<source>", values))


def test_steel_gemm_for_each_set_of_values():
    vendor.ensure()
    path = paths.kernels_dir() / "steel_gemm.metal"
    pre = build.preprocess(path.read_text(), str(path), [str(paths.kernels_dir()), str(paths.vendor_dir())], None)
    assert "function_constant" in pre
    rewrite._memo.clear()
    for values in STEEL_VALUES:
        same(rewrite.rewrite(pre, str(path), values, {STEEL}), fresh(pre, str(path), values, {STEEL}))
    assert len(rewrite._memo) == 1  # rewritten once


def test_the_placeholders_name_cannot_be_used_by_a_source():
    src = FC_SRC.replace("float v = x[i] * scale;", "float v = x[i] * scale; int __mslemu_fc_value_0__ = 0;")
    with pytest.raises(CompileError, match="__mslemu_fc_value_0__ is reserved"):
        rewrite.rewrite(build.preprocess(src, "<source>", [], None), "<source>", {})


def test_steel_gemm_with_its_constants_read_at_load():
    # (what build.py compiles: one text for every set of values, each constant read by
    # mslemu::fc_value, in the order of the declarations)
    vendor.ensure()
    path = paths.kernels_dir() / "steel_gemm.metal"
    pre = build.preprocess(path.read_text(), str(path), [str(paths.kernels_dir()), str(paths.vendor_dir())], None)
    r = rewrite.rewrite(pre, str(path), {200: True}, {STEEL}, at_load=True)
    assert "__mslemu_fc_" not in r.text
    assert [(name, idx) for name, idx, _ in r.at_load] == [
        ("has_batch", 10), ("use_out_source", 100), ("do_axpby", 110), ("align_M", 200), ("align_N", 201),
        ("align_K", 202)]
    assert "static const bool align_M = ::mslemu::fc_value<bool>(3);" in r.text
    assert all(defined is None for _, defined in r.function_constants.values())  # (known at load)


def test_each_kernel_gets_its_own_namespace_in_one_walk():
    """Rewriter.namespace_at resumes its walk from the kernel before: kernels one after another
    in nested, reopened and anonymous-brace scopes each get the namespace they are in."""
    src = """
namespace a { namespace b {
kernel void k1(device float* o [[buffer(0)]]) { if (true) { o[0] = 1; } }
}  // b
struct S { int x; };
kernel void k2(device float* o [[buffer(0)]]) { o[0] = 2; }
}  // a
kernel void k3(device float* o [[buffer(0)]]) { o[0] = 3; }
namespace c::d {
kernel void k4(device float* o [[buffer(0)]]) { o[0] = 4; }
}
namespace a {
kernel void k5(device float* o [[buffer(0)]]) { o[0] = 5; }
}
"""
    r = rewrite.rewrite(build.preprocess(src, "<source>", [], None), "<source>")
    assert {name: k.ns for name, k in r.kernels.items()} == {"k1": "a::b::", "k2": "a::", "k3": "", "k4": "c::d::",
                                                              "k5": "a::"}
