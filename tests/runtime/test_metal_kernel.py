"""``gg.metal_kernel`` runs kernels the way ``mx.fast.metal_kernel`` does, on every backend.

The kernels are the examples of MLX's "Custom Metal Kernels" guide
(docs/src/dev/custom_metal_kernels.rst at the pinned MLX tag) and small kernels that each
exercise one rule of mlx/backend/common/metal_kernel.cpp and
mlx/backend/metal/custom_kernel.cpp at that version: constant/device inputs, 0-d
inputs, shape/strides/ndim, atomic outputs with init_value, templates, and the
dispatch (grid in threads, threadgroup clamped to the grid, the size check).
"""

from __future__ import annotations

import numpy as np
import pytest

import gemmglossary as gg
from gemmglossary.emulator.errors import CompileError
from gemmglossary.mlx import custom_kernel as ms

mx = pytest.importorskip("mlx.core")

EXP = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""

EXP_STRIDED = """
    uint elem = thread_position_in_grid.x;
    // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    T tmp = inp[loc];
    out[elem] = metal::exp(tmp);
"""


def test_docs_exp_numpy_in_numpy_out(backend_name):
    a = np.random.default_rng(0).normal(size=(4, 16)).astype(np.float16)
    k = gg.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=EXP)
    (b,) = k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[a.shape], output_dtypes=[mx.float16])
    assert isinstance(b, np.ndarray) and b.dtype == np.float16 and b.shape == (4, 16)
    np.testing.assert_allclose(b.astype(np.float32), np.exp(a.astype(np.float32)), rtol=2e-3)


def test_docs_exp_mlx_in_mlx_out(backend_name):
    a = mx.random.normal(shape=(4, 16), key=mx.random.key(1)).astype(mx.float16)
    k = gg.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=EXP)
    (b,) = k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[a.shape], output_dtypes=[a.dtype])
    assert isinstance(b, mx.array) and b.dtype == mx.float16
    assert mx.allclose(b, mx.exp(a), rtol=2e-3).item()


@pytest.mark.parametrize("row_contiguous", [False, True])
def test_docs_strided_exp(backend_name, row_contiguous):
    base = np.random.default_rng(2).normal(size=(8, 16)).astype(np.float32)
    a = base[::2].T  # non-contiguous: every other row, transposed
    k = gg.metal_kernel(name="myexp_strided", input_names=["inp"], output_names=["out"],
                        source=EXP_STRIDED, ensure_row_contiguous=row_contiguous)
    (b,) = k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[a.shape], output_dtypes=[mx.float32])
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-6)


def test_docs_strided_exp_mlx_slice(backend_name):
    a = mx.random.normal(shape=(4, 16), key=mx.random.key(3))[::2]
    k = gg.metal_kernel(name="myexp_strided", input_names=["inp"], output_names=["out"],
                        source=EXP_STRIDED, ensure_row_contiguous=False)
    (b,) = k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[a.shape], output_dtypes=[a.dtype])
    assert mx.allclose(b, mx.exp(a)).item()


def test_scalars_and_constant_inputs(backend_name):
    # s: Python float -> 0-d float32 (const constant float&), n: int -> 0-d int32,
    # c: 3 elements -> const constant int32_t*, x: 10 elements -> const device float*.
    src = """
        uint i = thread_position_in_grid.x;
        out[i] = x[i] * s + c[i % 3] + n;
    """
    x = np.arange(10, dtype=np.float32)
    c = np.array([100, 200, 300], dtype=np.int32)
    k = gg.metal_kernel("affine", ["x", "s", "c", "n"], ["out"], src)
    (out,) = k(inputs=[x, 2.0, c, 3], grid=(10, 1, 1), threadgroup=(32, 1, 1),
               output_shapes=[(10,)], output_dtypes=[np.float32])
    np.testing.assert_array_equal(out, x * 2 + c[np.arange(10) % 3] + 3)


def test_atomic_outputs_and_init_value(backend_name):
    src = """
        uint i = thread_position_in_grid.x;
        atomic_fetch_add_explicit(&total[0], inp[i], memory_order_relaxed);
        atomic_fetch_add_explicit(&count[i % 4], 1, memory_order_relaxed);
    """
    inp = np.arange(1, 101, dtype=np.int32)
    k = gg.metal_kernel("reduce", ["inp"], ["total", "count"], src, atomic_outputs=True)
    total, count = k(inputs=[inp], grid=(100, 1, 1), threadgroup=(64, 1, 1),
                     output_shapes=[(1,), (4,)], output_dtypes=[mx.int32, mx.int32], init_value=5)
    assert int(total[0]) == 5050 + 5
    np.testing.assert_array_equal(count, [30, 30, 30, 30])


def test_an_output_without_init_value_holds_no_zeros_it_was_not_given():
    """MLX leaves an output without init_value undefined; on the emulator every byte of it is
    the fill for undefined memory, so an element the kernel skips is NaN (float), -1 (int)."""
    src = """
        uint i = thread_position_in_grid.x;
        if (i % 2 == 0) { f[i] = inp[i]; n[i] = int(inp[i]); }
    """
    inp = np.arange(6, dtype=np.float32)
    k = gg.metal_kernel("skips_odd", ["inp"], ["f", "n"], src)
    f, n = k(inputs=[inp], grid=(6, 1, 1), threadgroup=(6, 1, 1), output_shapes=[(6,), (6,)],
             output_dtypes=[np.float32, np.int32])
    assert np.isnan(f[1::2]).all() and (f[::2] == inp[::2]).all()
    np.testing.assert_array_equal(n, [0, -1, 2, -1, 4, -1])


def test_template_int_bool_dtype(backend_name):
    src = """
        uint i = thread_position_in_grid.x;
        out[i] = static_cast<U>(inp[i]) * N + (B ? 1 : 0);
    """
    inp = np.arange(8, dtype=np.float32)
    k = gg.metal_kernel("tmpl", ["inp"], ["out"], src)
    (out,) = k(inputs=[inp], template=[("U", mx.int32), ("N", 3), ("B", True)], grid=(8, 1, 1),
               threadgroup=(8, 1, 1), output_shapes=[(8,)], output_dtypes=[mx.int32])
    np.testing.assert_array_equal(out, np.arange(8) * 3 + 1)


def test_grid_counts_threads_and_threadgroup_is_clamped(backend_name):
    # grid (5, 3, 1) threads; threadgroup (256, 2, 1) is clamped per dimension to (5, 2, 1).
    src = """
        uint2 p = thread_position_in_grid.xy;
        uint i = p.y * threads_per_grid.x + p.x;
        tpg[i] = threads_per_threadgroup.x * 10 + threads_per_threadgroup.y;
    """
    k = gg.metal_kernel("clamp", ["dummy"], ["tpg"], src)
    (tpg,) = k(inputs=[np.zeros(1, np.float32)], grid=(5, 3, 1), threadgroup=(256, 2, 1),
               output_shapes=[(15,)], output_dtypes=[mx.uint32], init_value=0)
    # rows 0-1 form full threadgroups of height 2; row 2 is an edge threadgroup of height 1
    np.testing.assert_array_equal(tpg.reshape(3, 5), [[52] * 5, [52] * 5, [51] * 5])


def test_threadgroup_too_large(backend_name):
    k = gg.metal_kernel("big", ["a"], ["b"], "b[thread_position_in_grid.x] = a[0];")
    # MLX raises std::invalid_argument (ValueError) when the kernel is evaluated
    with pytest.raises((ValueError, RuntimeError), match=r"Thread group size \(2048\) is greater than"):
        k(inputs=[np.zeros(8, np.float32)], grid=(2048, 1, 1), threadgroup=(2048, 1, 1),
          output_shapes=[(2048,)], output_dtypes=[mx.float32])


def test_wrong_number_of_inputs(backend_name):
    k = gg.metal_kernel("n", ["a", "b"], ["c"], "c[0] = a[0] + b[0];")
    with pytest.raises(ValueError, match=r"Expected `inputs` to have size 2 but got size 1"):
        k(inputs=[np.zeros(8, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
          output_shapes=[(1,)], output_dtypes=[mx.float32])


def test_verbose_prints_the_generated_source(backend_name, capfd):
    a = np.ones((4, 16), np.float16)
    k = gg.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=EXP)
    k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
      output_shapes=[a.shape], output_dtypes=[mx.float16], verbose=True)
    expected = ms.generate("myexp", ["inp"], ["out"], EXP, [ms.InputSpec("float16", (4, 16))],
                           ["float16"], template=[("T", "float32")])
    assert capfd.readouterr().out == ms.verbose_text("myexp", expected.source)


def test_bfloat16_through_mlx(backend_name):
    src = """
        uint i = thread_position_in_grid.x;
        out[i] = static_cast<bfloat16_t>(static_cast<float>(inp[i]) * 2.0f);
    """
    a = mx.array([1.5, -2.0, 0.25, 3.0] * 4).astype(mx.bfloat16)
    k = gg.metal_kernel("bf", ["inp"], ["out"], src)
    (b,) = k(inputs=[a], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(16,)],
             output_dtypes=[mx.bfloat16])
    assert b.dtype == mx.bfloat16
    assert mx.array_equal(b, a * 2).item()


def test_emulator_diagnostics_name_lines_of_the_generated_source(monkeypatch):
    from gemmglossary.emulator import OutOfBoundsError

    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    k = gg.metal_kernel("oob", ["a"], ["b"], "uint i = thread_position_in_grid.x;\nb[i] = a[i + 1];")
    with pytest.raises(OutOfBoundsError) as info:
        k(inputs=[np.zeros(8, np.float32)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
          output_shapes=[(8,)], output_dtypes=[np.float32])
    # line 6 of the source verbose=True prints: signature (4 lines), then the body
    assert "/metal_kernel/custom_kernel_oob_float_float.metal:6" in str(info.value)
    assert k.last_source.split("\n")[5] == "b[i] = a[i + 1];"


# --- ensure_row_contiguous=False: the view's own memory and strides, as MLX binds them ---

RAW = """
    uint elem = thread_position_in_grid.x;
    out[elem] = inp[elem];  // ignores the strides on purpose
    if (elem < 2) strides[elem] = inp_strides[elem];
"""


def _base():
    return np.arange(32, dtype=np.float32).reshape(4, 8)


@pytest.mark.parametrize("kind", ["mlx", "numpy"])
def test_view_bound_as_it_is_without_row_contiguous(backend_name, kind):
    # rows 1 and 3, columns 2..7: its first element is base[1, 2] (offset 10), strides (16, 1).
    view = mx.array(_base())[1::2, 2:] if kind == "mlx" else _base()[1::2, 2:]
    k = gg.metal_kernel("raw", ["inp"], ["out", "strides"], RAW, ensure_row_contiguous=False)
    out, strides = k(inputs=[view], grid=(12, 1, 1), threadgroup=(12, 1, 1),
                     output_shapes=[(12,), (2,)], output_dtypes=[mx.float32, mx.int64])
    # A body that ignores the strides reads the memory after the view's first element.
    np.testing.assert_array_equal(np.array(out), _base().reshape(-1)[10:22])
    np.testing.assert_array_equal(np.array(strides), [16, 1])


def test_view_copied_with_row_contiguous(backend_name):
    view = mx.array(_base())[1::2, 2:]
    k = gg.metal_kernel("raw", ["inp"], ["out", "strides"], RAW, ensure_row_contiguous=True)
    out, strides = k(inputs=[view], grid=(12, 1, 1), threadgroup=(12, 1, 1),
                     output_shapes=[(12,), (2,)], output_dtypes=[mx.float32, mx.int64])
    np.testing.assert_array_equal(np.array(out), _base()[1::2, 2:].reshape(-1))
    np.testing.assert_array_equal(np.array(strides), [6, 1])


def test_negative_strides_are_refused_by_the_emulator(monkeypatch):
    from gemmglossary.runtime.custom_kernels import EmulatorCannotBind

    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    k = gg.metal_kernel("raw", ["inp"], ["out", "strides"], RAW, ensure_row_contiguous=False)
    with pytest.raises(EmulatorCannotBind, match=r"input 'inp' has negative strides \(-8, 1\)"):
        k(inputs=[mx.array(_base())[::-1]], grid=(32, 1, 1), threadgroup=(32, 1, 1),
          output_shapes=[(32,), (2,)], output_dtypes=[mx.float32, mx.int64])


def test_compile_options_are_checked_when_the_kernel_is_made(backend_name):
    with pytest.raises(ValueError, match="Unknown compile option `mathmode`"):
        gg.metal_kernel("c", ["a"], ["b"], "b[0] = a[0];", compile_options={"mathmode": "fast"})
    with pytest.raises(ValueError, match="Expected math_mode to be 'safe', 'relaxed', or 'fast'"):
        gg.metal_kernel("c", ["a"], ["b"], "b[0] = a[0];", compile_options={"math_mode": "precise"})


def test_fast_math_on_the_emulator_warns(monkeypatch):
    from gemmglossary.emulator import PortabilityWarning

    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    with pytest.warns(PortabilityWarning, match="math_mode='fast'.*the emulator computes IEEE"):
        gg.metal_kernel("c", ["a"], ["b"], "b[0] = a[0];", compile_options={"math_mode": "fast"})


def test_template_values_are_checked_as_mlx_checks_them(backend_name):
    k = gg.metal_kernel("tmpl", ["inp"], ["out"], "out[0] = inp[0] * N;")
    for bad in (np.int64(3), np.float32, "float32"):
        with pytest.raises(ValueError, match="Invalid template argument"):
            k(inputs=[np.ones(8, np.float32)], template=[("N", bad)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
              output_shapes=[(1,)], output_dtypes=[mx.float32])


def test_negative_template_int_does_not_compile_as_in_mlx(backend_name):
    """The pinned MLX keeps a negative template int's '-' in the kernel's name
    (make_template_hash), which is also the kernel function's name in the source it
    writes: no identifier, so the source does not compile (checked against the wheel's text
    in tests/mlx/test_custom_kernel_source.py). The emulator refuses it as MLX's build would."""
    k = gg.metal_kernel("neg", ["inp"], ["out"], "uint i = thread_position_in_grid.x;\nout[i] = inp[i] * N;")
    with pytest.raises((CompileError, RuntimeError), match=r"custom_kernel_neg__-3|compil"):
        k(inputs=[np.arange(8, dtype=np.float32)], template=[("N", -3)], grid=(8, 1, 1),
          threadgroup=(8, 1, 1), output_shapes=[(8,)], output_dtypes=[mx.float32])


# --- inputs that share memory: MLX binds one buffer at both indices, each at its offset ---

DISTANCE = """
    out[0] = b - a;
    out[1] = a == b;
"""


@pytest.mark.parametrize("second, distance, same", [
    (lambda x: x, 0, 1),          # the same mlx array twice: one buffer
    (lambda x: x[3:], 3, 0),      # a slice of it: the same buffer at the slice's offset
])
def test_an_mlx_array_given_twice_is_one_memory(backend_name, second, distance, same):
    x = mx.arange(16).astype(mx.float32)
    mx.eval(x)
    k = gg.metal_kernel("distance", ["a", "b"], ["out"], DISTANCE)
    (out,) = k(inputs=[x, second(x)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
               output_shapes=[(2,)], output_dtypes=[mx.int64])
    assert np.array(out).tolist() == [distance, same]


def test_a_numpy_array_given_twice_is_two_memories(backend_name):
    """mx.array copies a numpy array each time it is given: two buffers, as in MLX."""
    x = np.arange(16, dtype=np.float32)
    k = gg.metal_kernel("distance", ["a", "b"], ["out"], DISTANCE)
    (out,) = k(inputs=[x, x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(2,)],
               output_dtypes=[mx.int64])
    assert out[1] == 0


def test_a_strided_view_and_its_array_are_one_memory(backend_name):
    """ensure_row_contiguous=False binds the view's own memory, which is its array's."""
    base = mx.arange(32).astype(mx.float32).reshape(4, 8)
    mx.eval(base)
    k = gg.metal_kernel("distance", ["a", "b"], ["out"], DISTANCE, ensure_row_contiguous=False)
    (out,) = k(inputs=[base, base[1::2, 2:]], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(2,)],
               output_dtypes=[mx.int64])
    assert np.array(out).tolist() == [10, 0]
