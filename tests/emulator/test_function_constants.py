"""Function constants are read when a kernel object is loaded, not compiled in (emulator/build.py):
a source is compiled once for all the values it is launched with, as Metal compiles a library
once and specializes its pipelines by the values. Each set of values is a copy of the object
with its values beside it; every initializer that reads a constant, at namespace scope too,
runs with them. A source that uses a constant where C++ wants a constant expression has its
values compiled in, one object per set, and gives the same results."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import CompileError, LaunchError, build, load_kernel

# a value of every kind, namespace-scope constants computed from them (in a namespace, and
# from whether a constant was given), and a parameter one of them switches off
SRC = """#include <metal_stdlib>
using namespace metal;
constant bool use_bias [[function_constant(0)]];
constant int scale [[function_constant(1)]];
constant half offset [[function_constant(2)]];
constant float never_given [[function_constant(3)]];
constant long big [[function_constant(4)]];
namespace derived {
constant bool bias_and_scale = use_bias && is_function_constant_defined(scale);
constant float shift = float(offset) * 2.0f + (big > 0 ? 1.0f : 0.0f);
}

kernel void fc(device const float* x [[buffer(0)]],
               device float* y [[buffer(1)]],
               device const float* bias [[buffer(2), function_constant(use_bias)]],
               uint i [[thread_position_in_grid]]) {
  float v = x[i] * scale + derived::shift;
  if (derived::bias_and_scale) v += bias[i];
  if (is_function_constant_defined(never_given)) v = never_given;
  y[i] = v;
}
"""

X = np.arange(8, dtype=np.float32)
BIAS = np.full(8, 0.5, np.float32)
# (values, what y is)
CASES = [
    ({"use_bias": True, 1: 3}, X * 3 + 0.5),
    ({0: False, "scale": 5, "offset": 0.25}, X * 5 + 0.5),
    ({"use_bias": True, "offset": -1.5, "big": 2**40}, X * 0 - 3.0 + 1.0),  # scale not given: no bias either
    ({"scale": -2, "never_given": 7.5}, np.full(8, 7.5, np.float32)),
    ({}, X * 0),
]


def launch(kernel, values):
    y = np.zeros(8, np.float32)
    buffers = (X, y, BIAS) if values.get("use_bias", values.get(0)) else (X, y)
    kernel(*buffers, threads=(8, 1, 1), threads_per_threadgroup=(4, 1, 1), workers=2)  # (two threadgroups)
    return y


def unique() -> dict:
    """A define no other compile has: its own cache entry (a test that counts the objects
    made, built or taken from an entry of the same translation unit, sees them whatever the
    cache holds)."""
    return {"GG_TEST_RUN": uuid.uuid4().hex}


def made() -> int:
    """Objects made for new cache entries: compiled, or copied from the entry that compiled
    the same translation unit (a define the source never reads changes the key only)."""
    return build.stats["compiles"] + build.stats["shared"]


def test_one_compile_for_every_set_of_values():
    before, defines = made(), unique()
    kernels = [(load_kernel(SRC, "fc", function_constants=values, defines=defines), values, want)
               for values, want in CASES]
    assert made() - before == 1
    # loaded side by side in one process, each keeps its own values
    for _ in range(2):
        for kernel, values, want in kernels:
            np.testing.assert_array_equal(launch(kernel, values), want, err_msg=str(values))
    names = {k.so.name for k, _, _ in kernels}
    assert len(names) == len(CASES) and "kernel.so" in names  # no value given: the object itself
    copy = next(k.so for k, v, _ in kernels if v == CASES[0][0])
    assert copy.with_name(copy.name + ".fc").read_text() == "0 b 1\n1 i 3\n"


def test_a_switched_off_parameter_is_not_bound():
    kernel = load_kernel(SRC, "fc", function_constants={"use_bias": False, "scale": 1})
    assert [p[0] for p in kernel.parameters][:3] == ["x", "y", "bias"]
    with pytest.raises(LaunchError):
        kernel(X, np.zeros(8, np.float32), BIAS, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))


def test_the_values_are_read_by_another_process_too():
    # a spawned worker loads the object itself (emulator/workers.py): it reads the values
    # beside the copy, as this process did
    code = (
        "import numpy as np, sys\n"
        "sys.path.insert(0, %r)\n"
        "from test_function_constants import SRC, CASES, launch\n"
        "from gemmglossary.emulator import load_kernel, build\n"
        "for values, want in CASES:\n"
        "    np.testing.assert_array_equal(launch(load_kernel(SRC, 'fc', function_constants=values), values), want)\n"
        "print(build.stats['compiles'])\n"
    ) % str(Path(__file__).parent)
    load_kernel(SRC, "fc", function_constants=CASES[0][0])
    for start in ("fork", "spawn"):
        env = dict(os.environ, GEMMGLOSSARY_EMULATOR_START=start)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["0"], "the other process compiled again"


# a constant where C++ wants a constant expression: a template argument, if constexpr
IN_CONSTANT_EXPRESSIONS = """#include <metal_stdlib>
using namespace metal;
constant int lanes [[function_constant(0)]];
template <int N> float times() { return float(N); }
kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  if constexpr (lanes > 2) y[i] = times<lanes>(); else y[i] = -1.0f;
}
"""


def test_a_constant_in_a_constant_expression_is_compiled_in():
    before, defines = made(), unique()
    out = {}
    for lanes in (1, 4, 8):
        y = np.zeros(4, np.float32)
        load_kernel(IN_CONSTANT_EXPRESSIONS, "k", function_constants={"lanes": lanes}, defines=defines)(
            y, threads=4, threads_per_threadgroup=4)
        out[lanes] = y.tolist()
    assert out == {1: [-1.0] * 4, 4: [4.0] * 4, 8: [8.0] * 4}
    # one attempt to read them at load (remembered: not made again), then one object per value
    assert made() - before == 1 + 3


def test_an_error_of_the_source_is_the_one_with_its_values():
    bad = IN_CONSTANT_EXPRESSIONS.replace("y[i] = -1.0f;", "y[i] = undeclared_name;")
    with pytest.raises(CompileError, match="undeclared_name") as e:
        load_kernel(bad, "k", function_constants={"lanes": 1})
    assert "<source>:6" in str(e.value)


def test_a_value_its_type_cannot_take_is_a_compile_error():
    src = """#include <metal_stdlib>
using namespace metal;
struct Pair { int a, b; };
constant Pair pair [[function_constant(0)]];
kernel void k(device int* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = pair.a; }
"""
    with pytest.raises(CompileError, match=r"function constant 'pair' \(Pair, index 0\): its type cannot be made"):
        load_kernel(src, "k", function_constants={"pair": 3})
    y = np.ones(2, np.int32)
    load_kernel(src, "k")(y, threads=2, threads_per_threadgroup=2)  # not given: Pair{}
    assert y.tolist() == [0, 0]


@pytest.mark.parametrize("value, why", [("three", r"'three' is not a number"), (2**64, r"does not fit in 64 bits")])
def test_a_value_that_is_no_function_constant_value_is_a_compile_error_naming_it(value, why):
    """The same check where the values are read at load and where they are compiled in."""
    with pytest.raises(CompileError, match=rf"<source>: function constant 'scale' \(int\): .*{why}"):
        load_kernel(SRC, "fc", function_constants={"scale": value})
    with pytest.raises(CompileError, match=rf"<source>: function constant 'lanes' \(int\): .*{why}"):
        load_kernel(IN_CONSTANT_EXPRESSIONS, "k", function_constants={"lanes": value})


INDEX_EXPRESSION = """
#include <metal_stdlib>
using namespace metal;
#define FC_BASE 400
constant bool has_bias [[function_constant(FC_BASE + 0)]];
constant int scale [[function_constant(FC_BASE + 1)]];
kernel void biased(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = (has_bias ? 1.0f : 0.0f) + scale;
}
"""


@pytest.mark.parametrize("at", ["index", "name"])
def test_an_index_written_as_arithmetic_is_matched_by_its_value(at):
    """llama.cpp numbers its constants `FC_MUL_MV + 0`, `FC_MUL_MV + 1`: given by index, each
    value reaches its constant (it once matched none, and the kernel ran on defaults)."""
    values = {400: True, 401: 3} if at == "index" else {"has_bias": True, "scale": 3}
    out = np.zeros(4, np.float32)
    load_kernel(INDEX_EXPRESSION, "biased", function_constants=values)(
        out, threads=(4, 1, 1), threads_per_threadgroup=(4, 1, 1))
    np.testing.assert_array_equal(out, 4.0)
