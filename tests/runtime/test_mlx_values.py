"""Without mlx, ``gg.metal_kernel`` converts its inputs as ``mx.array`` would
(src/gemmglossary/runtime/mlx_values.py): each rule is checked here against the installed
mlx itself, and the numpy-only path is driven with mlx hidden."""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.runtime import mlx_values

mx = pytest.importorskip("mlx.core", reason="the oracle of these rules is mlx's own mx.array")

#: Values a test passes as inputs: Python numbers and lists, numpy scalars, arrays and views.
VALUES = [
    "3", "2**31", "-2**31 - 1", "2**40", "1.5", "True", "1 + 2j", "[1, 2]", "[1.0, 2]", "[True, 1]",
    "[True, False]", "[[1, 2], [3, 4]]", "[2**40, 1]", "[]", "np.float64(1.5)", "np.float32(1.5)", "np.int64(3)",
    "np.int8(3)", "np.uint64(3)", "np.bool_(True)", "np.float16(1)", "np.complex128(1)", "np.arange(3)",
    "np.arange(3.0)", "np.arange(3, dtype=np.uint8)", "np.zeros(2, bool)", "np.zeros(2, np.complex128)",
    "np.zeros(2, np.float16)", "np.zeros((2, 0))", "np.array(5.0)",
    "np.arange(16, dtype=np.float32).reshape(4, 4)[::2, 1:]", "np.arange(6, dtype=np.int32).reshape(2, 3).T",
    "np.arange(12.0).reshape(3, 4)[:, ::2]", "np.arange(12.0).reshape(3, 4)[1:, 1::2].T",
    "np.arange(6.0).reshape(2, 3).T", "np.arange(12, dtype=np.complex128).reshape(3, 4)[:, ::2]",
]


def element_strides(view: np.ndarray) -> tuple[int, ...]:
    return tuple(s // view.itemsize for s in view.strides) if view.size > 1 else ()


@pytest.mark.parametrize("expr", VALUES)
def test_numpy_restatement_converts_as_mlx_does(expr, monkeypatch):
    value = eval(expr, {"np": np})
    by_mlx = mlx_values.as_bound(value)
    monkeypatch.setattr(mlx_values, "mlx_core", lambda: None)
    by_numpy = mlx_values.as_bound(eval(expr, {"np": np}))
    assert by_numpy[:2] == by_mlx[:2], expr  # dtype name and shape
    assert element_strides(by_numpy[2]) == element_strides(by_mlx[2]), expr
    np.testing.assert_array_equal(by_numpy[2], by_mlx[2])


@pytest.mark.parametrize("expr", ["2**63", "np.zeros(2, np.longdouble)", "np.arange(4.0)[::-1]", "np.arange(4)[::-1]"])
def test_what_mlx_refuses_is_refused(expr, monkeypatch):
    with pytest.raises(Exception):
        mlx_values.as_bound(eval(expr, {"np": np}))
    monkeypatch.setattr(mlx_values, "mlx_core", lambda: None)
    with pytest.raises((OverflowError, TypeError, ValueError), match=r"\[metal_kernel\]"):
        mlx_values.as_bound(eval(expr, {"np": np}))


def test_numpy_dtypes_stand_in_for_mlx_dtypes_only_without_mlx(monkeypatch):
    with pytest.raises(ValueError, match="Must be `mlx.core.Dtype`"):
        mlx_values.template_arguments([("T", np.float32)])  # as MLX's binding refuses it
    assert mlx_values.template_arguments([("T", mx.float16), ("N", 3)]) == [("T", "float16"), ("N", 3)]
    monkeypatch.setattr(mlx_values, "mlx_core", lambda: None)
    assert mlx_values.template_arguments([("T", np.float32), ("U", np.dtype("int8")), ("B", True)]) == [
        ("T", "float32"), ("U", "int8"), ("B", True)]
    with pytest.raises(ValueError, match="Must be a numpy dtype"):
        mlx_values.template_arguments([("T", "float32")])


def test_a_kernel_without_mlx_takes_numpy_and_gives_numpy(monkeypatch):
    import gemmglossary as gg

    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    monkeypatch.setattr(mlx_values, "mlx_core", lambda: None)
    k = gg.metal_kernel(name="scale", input_names=["x", "s"], output_names=["y"],
                        source="uint i = thread_position_in_grid.x; y[i] = T(s) * x[i];")
    x = np.arange(8, dtype=np.float64)  # narrowed to float32, as MLX narrows it
    (y,) = k(inputs=[x, 2.5], template=[("T", np.float32)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
             output_shapes=[(8,)], output_dtypes=[np.float32])
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    np.testing.assert_array_equal(y, 2.5 * np.arange(8, dtype=np.float32))
    assert "const device float* x" in k.last_source and "const constant float& s" in k.last_source
