"""Launches the GPU would refuse or could not express are refused, naming the argument:
no size wraps around, no result is thrown away, no float is truncated (issue #36).

``load_kernel``'s kernels are checked by the emulator's launch (emulator/launch_checks.py),
``gg.metal_kernel``'s calls as MLX's binding and Metal check them
(runtime/kernel_arguments.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import gemmglossary as gg
from gemmglossary.emulator import ArgumentTypeError, ArgumentValueError, CompileError, LaunchError

mx = pytest.importorskip("mlx.core")

ADD1 = """
#include <metal_stdlib>
using namespace metal;
kernel void add1(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    out[i] = a[i] + 1.0f;
}
"""


@pytest.fixture(scope="module")
def add1():
    return gg.load_kernel(ADD1, "add1", backend_name="emulator")


@pytest.fixture(autouse=True)
def _emulator(monkeypatch):
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")


A = np.arange(8, dtype=np.float32)


@pytest.mark.parametrize("value", [[0.0] * 8, (0.0,) * 8, 0.0, bytes(32)], ids=["list", "tuple", "scalar", "bytes"])
def test_a_value_for_an_output_is_refused(add1, value):
    with pytest.raises(ArgumentTypeError, match=r"parameter 'out' \[\[buffer\(1\)\]\].*may be written.*numpy array"):
        add1(A, value, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))
    with pytest.raises(ArgumentTypeError, match="parameter 'out'"):
        add1({0: A, 1: value}, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))


def test_a_list_for_a_const_parameter_is_still_a_value(add1):
    out = np.zeros(8, np.float32)
    add1(list(range(8)), out, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))
    assert out.tolist() == [float(i + 1) for i in range(8)]


@pytest.mark.parametrize("kwargs, named", [
    (dict(threadgroups=(2 ** 32, 1, 1)), r"threadgroups \(4294967296, 1, 1\): 4294967296 \(x\) is above UINT32_MAX"),
    (dict(threads=(2 ** 64 + 8, 1, 1)), r"threads \(18446744073709551624, 1, 1\).*above UINT32_MAX"),
    (dict(threads=(2 ** 32, 1, 1)), r"threads \(4294967296, 1, 1\).*above UINT32_MAX"),
    (dict(threads=(1, 1, 2 ** 32)), r"threads \(1, 1, 4294967296\): 4294967296 \(z\)"),
    (dict(threadgroups=(2 ** 31, 1, 1)), r"threadgroups \(2147483648, 1, 1\) of threads_per_threadgroup \(8, 1, 1\): "
                                         r"2147483648 x 8 = 17179869184 threads in x"),
], ids=["threadgroups", "threads-2^64", "threads-2^32", "threads-z", "threadgroups-times-size"])
def test_sizes_above_uint32_are_refused(add1, kwargs, named):
    with pytest.raises(LaunchError, match=named):
        add1(A, np.zeros(8, np.float32), threads_per_threadgroup=(8, 1, 1), **kwargs)


@pytest.mark.parametrize("kwargs", [dict(threads=(0, 1, 1)), dict(threads=(8, 0)), dict(threadgroups=(1, 1, 0))],
                         ids=["threads-x", "threads-y", "threadgroups-z"])
def test_a_dispatch_of_no_threads_is_refused(add1, kwargs):
    """A size of 0 would run nothing and return as if it had run: a mistake, said as one."""
    with pytest.raises(LaunchError, match=r"a size of 0 runs no thread at all"):
        add1(A, np.zeros(8, np.float32), threads_per_threadgroup=(8, 1, 1), **kwargs)


def test_the_largest_sizes_are_still_accepted():
    # UINT32_MAX in one dimension, and threadgroups whose threads just fit, pass the check
    from gemmglossary.emulator.launch_checks import UINT32_MAX, sizes

    sizes("threads", [1, UINT32_MAX, 1], [1, UINT32_MAX, 1], [1, 1, 1])
    sizes("threadgroups", [UINT32_MAX // 8, 1, 1], [UINT32_MAX // 8 * 8, 1, 1], [8, 1, 1])


def _copy():
    return gg.metal_kernel("copy", ["a"], ["out"], "out[thread_position_in_grid.x] = a[thread_position_in_grid.x];")


def _call(k, **kwargs):
    args = dict(inputs=[A], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1))
    args.update(kwargs)
    return k(**args)


@pytest.mark.parametrize("grid, cls, why", [
    ((2 ** 32, 1, 1), ArgumentTypeError, r"`grid` \(4294967296, 1, 1\): 4294967296 \(x\) does not fit the C int"),
    ((2 ** 31, 1, 1), ArgumentTypeError, "does not fit the C int"),
    ((8.7, 1, 1), ArgumentTypeError, r"`grid` \(8.7, 1, 1\): 8.7 \(x\) is a float"),
    ((0, 1, 1), ArgumentValueError, r"`grid` \(0, 1, 1\): 0 \(x\) must be at least 1"),
    ((-1, 1, 1), ArgumentValueError, r"`grid` \(-1, 1, 1\): -1 \(x\) must be at least 1"),
    ((8, 1), ArgumentTypeError, "`grid` must be a 3-tuple"),
])
def test_metal_kernel_grid_is_checked_as_mlx_and_metal_check_it(grid, cls, why):
    with pytest.raises(cls, match=why):
        _call(_copy(), grid=grid)


@pytest.mark.parametrize("threadgroup", [(0, 1, 1), (8.0, 1, 1), (1, 1, 2 ** 31)])
def test_metal_kernel_threadgroup_is_checked(threadgroup):
    with pytest.raises(LaunchError, match="`threadgroup`"):
        _call(_copy(), threadgroup=threadgroup)


def test_a_negative_output_shape_names_the_output():
    k = gg.metal_kernel("two", ["a"], ["first", "second"], "first[0] = a[0]; second[0] = a[0];")
    with pytest.raises(ArgumentValueError, match=r"output 'second' has shape \(-8,\)"):
        _call(k, output_shapes=[(8,), (-8,)], output_dtypes=[mx.float32, mx.float32])
    with pytest.raises(ArgumentTypeError, match=r"output 'first' has shape \(2.5,\)"):
        _call(k, output_shapes=[(2.5,), (8,)], output_dtypes=[mx.float32, mx.float32])


@pytest.mark.parametrize("template", [["T"], [("T",)], [("T", mx.float32, 1)]])
def test_a_template_that_is_not_pairs_says_so(template):
    with pytest.raises(TypeError, match=r"template: each item is a \(name, value\) pair"):
        _call(_copy(), template=template)


def test_float64_is_refused_as_metal_refuses_double():
    with pytest.raises(CompileError, match="output 'out': float64, which MLX writes as `double`"):
        _call(_copy(), output_dtypes=[mx.float64])
    with pytest.raises(CompileError, match="input 'a': float64"):
        _call(_copy(), inputs=[mx.array(A, dtype=mx.float64)])
    k = gg.metal_kernel("tcopy", ["a"], ["out"], "out[0] = T(a[0]);")
    with pytest.raises(CompileError, match="template argument T: float64"):
        _call(k, template=[("T", mx.float64)])


@pytest.mark.parametrize("value", [(8.7, 1, 1), (2 ** 32, 1, 1), (0, 1, 1), (1, 2, 3, 4), True])
def test_the_metal_backend_refuses_the_same_sizes(value):
    from gemmglossary.metal.backend import _size3

    with pytest.raises(ValueError, match="threads must be 1 to 3 integers from 1 to 4294967295"):
        _size3(value, "threads")
    assert _size3((8, 2), "threads") == (8, 2, 1) and _size3(4, "threads") == (4, 1, 1)


def test_a_kernel_file_that_is_not_utf8_is_a_compile_error(tmp_path):
    path = tmp_path / "k.metal"
    path.write_bytes(ADD1.encode().replace(b"// ", b"") + b"// caf\xe9\n")
    with pytest.raises(CompileError, match=r"k\.metal: not UTF-8 text \(invalid continuation byte"):
        gg.load_kernel(path, "add1", backend_name="emulator")
