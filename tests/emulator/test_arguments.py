"""Arguments are checked against the kernel's parameter types: an array of the wrong dtype,
a value a parameter cannot hold, a fractional launch size, a file name mistaken for source
(issue #13, items 1 and 6) are errors naming the parameter; the good paths stay good."""

from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import ArgumentTypeError, ArgumentValueError, CompileError, LaunchError, load_kernel

KERNELS = Path(__file__).parent / "kernels"
N = 8
PARAMS = np.dtype([("n", "<u4"), ("scale", "<f4")], align=True)


@pytest.fixture(scope="module")
def types():
    return load_kernel(KERNELS / "arguments.metal", "types")


def _bf16(x):
    """float32 -> bfloat bit patterns (x is exactly representable in these tests)."""
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _args(**over):
    p = np.zeros((), PARAMS)
    p["n"], p["scale"] = 7, 3.0
    a = dict(f=np.arange(N, dtype=np.float32), h=np.arange(N, dtype=np.float16), b=_bf16(np.arange(N)),
             v4=np.zeros((N, 4), np.float32), v3=np.ones((N, 4), np.float32), p3=np.ones((N, 3), np.float32),
             a=np.zeros(1, np.uint32), flags=np.zeros(N, np.bool_), p=p, raw=np.zeros(N, np.uint8), n=5,
             out=np.zeros(3, np.int32), sc=(0.5, 9.0))
    a.update(over)
    return a


def _run(k, a):
    k(*a.values(), threads=N, threads_per_threadgroup=N)


def test_every_element_type_binds_when_the_dtype_matches(types):
    a = _args()
    _run(types, a)
    assert np.array_equal(a["f"], 3.0 * np.arange(N))
    assert np.array_equal(a["h"], np.arange(N, dtype=np.float16) + 1)
    assert np.array_equal(a["b"], _bf16(2.0 * np.arange(N)))
    assert np.array_equal(a["v4"], np.ones((N, 4)))
    assert np.array_equal(a["v3"][:, :3], 2 * np.ones((N, 3)))
    assert np.array_equal(a["p3"], 1.5 * np.ones((N, 3)))
    assert a["a"][0] == N and a["flags"].all() and np.array_equal(a["raw"], np.arange(N))
    assert list(a["out"]) == [5, 7, 9]


def test_other_legitimate_forms(types):
    """uint16 bit patterns for half, struct bytes, any dtype for device void*, numpy scalars as values."""
    a = _args(h=np.arange(N, dtype=np.float16).view(np.uint16), raw=np.zeros(2, np.float32),
              n=np.int64(5), sc=[0.5, 9])
    a["p"] = a["p"].tobytes()
    _run(types, a)
    assert np.array_equal(a["h"].view(np.float16), np.arange(N) + 1)
    assert list(a["out"]) == [5, 7, 9]


@pytest.mark.parametrize("name, bad, words", [
    # numpy's default float64 for device float*: an input and, written back, an output
    ("f", np.arange(N, dtype=np.float64), ["'f'", "device float *", "float32", "float64", ".astype(np.float32)"]),
    ("out", np.zeros(3, np.float64), ["'out'", "device int *", "int32", "float64"]),
    ("h", np.arange(N, dtype=np.float32), ["'h'", "float16", "uint16 bit patterns", "float32"]),
    # float16 is not bfloat (same size, different bits)
    ("b", np.arange(N, dtype=np.float16), ["'b'", "bfloat", "uint16", "float16"]),
    ("v4", np.zeros((N, 4), np.float64), ["'v4'", "float32 for its components", "float64"]),
    ("a", np.zeros(1, np.int32), ["'a'", "atomic_uint", "uint32", "int32"]),
    ("flags", np.zeros(N, np.uint8), ["'flags'", "bool", "uint8"]),
    ("p", np.zeros((), np.dtype([("n", "<u4"), ("scale", "<f8")])), ["'p'", "its items are 12 bytes", "struct has 8"]),
    ("p", np.zeros(2, np.float32), ["'p'", "structured array with 8-byte items", "float32", ".tobytes()"]),
    ("v3", np.ones((N, 3), np.float32), ["'v3'", "16-byte elements", "padding", "packed_float3"]),
])
def test_a_mismatched_array_is_a_type_error(types, name, bad, words):
    a = _args(**{name: bad})
    before = {k: v.copy() for k, v in a.items() if isinstance(v, np.ndarray)}
    with pytest.raises(ArgumentTypeError) as e:
        _run(types, a)
    assert isinstance(e.value, TypeError) and isinstance(e.value, LaunchError)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    for k, v in before.items():
        assert np.array_equal(a[k], v), f"{k} was written although the launch was refused"


@pytest.mark.parametrize("value, words", [
    (-1, ["negative value -1", "'n'", "0..4294967295"]),
    (2 ** 32, ["out of range", "4294967296"]),
    (2.5, ["integer parameter", "2.5"]),
    (3.0, ["integer parameter"]),
])
def test_a_value_a_uint_cannot_hold_is_a_value_error(types, value, words):
    with pytest.raises(ArgumentValueError) as e:
        _run(types, _args(n=value))
    assert isinstance(e.value, ValueError)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_a_vector_value_needs_all_its_components(types):
    with pytest.raises(ArgumentValueError, match="'sc'.*2 components, but got 3 values"):
        _run(types, _args(sc=(1.0, 2.0, 3.0)))


@pytest.mark.parametrize("kw", [dict(threads_per_threadgroup=16.5), dict(threads_per_threadgroup=(8.0, 1)),
                                dict(threads=(8, 1.5)), dict(threads=True)])
def test_fractional_launch_sizes_are_refused_not_truncated(types, kw):
    launch = dict(threads=N, threads_per_threadgroup=N)
    launch.update(kw)
    with pytest.raises(LaunchError, match="must be 1 to 3 non-negative integers"):
        types(*_args().values(), **launch)


def test_unknown_buffer_index_in_a_dict_is_refused(types):
    a = _args()
    by_index = dict(enumerate(a.values()))
    by_index[20] = np.zeros(1, np.float32)
    with pytest.raises(LaunchError, match="no buffer parameter at index 20"):
        types(by_index, threads=N, threads_per_threadgroup=N)


SRC = "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* o [[buffer(0)]]) { o[0] = 4.0f; }\n"


def test_a_string_without_a_newline_is_a_file_name(tmp_path, monkeypatch):
    # a file with another extension is read as a file ...
    f = tmp_path / "kernel.txt"
    f.write_text(SRC)
    o = np.zeros(1, np.float32)
    load_kernel(str(f), "k")(o, threads=1, threads_per_threadgroup=1)
    assert o[0] == 4.0
    # ... a missing one is an error naming it, never compiled as source
    for missing in [str(tmp_path / "nope.metl"), "kernels/none.metal", "matmul"]:
        with pytest.raises(CompileError, match="no such file.*a str without a newline is read as a file name"):
            load_kernel(missing, "k")
    with pytest.raises(CompileError, match="is a directory"):
        load_kernel(str(tmp_path), "k")
    with pytest.raises(TypeError, match="path or Metal source"):
        load_kernel(b"kernel void k() {}\n", "k")
