"""The values ``gg.metal_kernel`` binds, with mlx installed or without it.

With mlx importable, an input is converted by MLX itself (``mx.array``), whatever version
is installed: the array the emulator binds is the one ``mx.fast.metal_kernel`` would bind on
the user's own MLX. Without mlx, numpy stands in for it, and :func:`as_bound` restates
MLX's conversion (``python/src/convert.cpp``; each rule below is checked against the
installed mlx by ``tests/runtime/test_mlx_values.py``):

* a Python ``bool`` is a 0-d ``bool``, an ``int`` a 0-d ``int32`` (``int64`` when it does not
  fit), a ``float`` a 0-d ``float32``, a ``complex`` a 0-d ``complex64``;
* a list of them is an array of the same kinds (any float makes it ``float32``; ints are
  ``int32`` unless one does not fit); an empty list is a ``float32`` array of shape (0,);
* numpy ``float64`` becomes ``float32`` and ``complex128`` ``complex64``; every other numpy
  dtype is kept; a view keeps its element strides (converted, it is a copy of the memory it
  spans); negative strides are refused, as MLX refuses them;
* ``ml_dtypes.bfloat16`` arrays, when ml_dtypes is installed, are bfloat16.

Dtype template arguments are ``mx.float32`` and the like with mlx, numpy dtypes
(``np.float32``) without it: MLX's binding refuses numpy types, so with mlx installed so
does this one, and a test that passes here passes the same checks on the GPU.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..mlx import custom_kernel as ms

INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


@lru_cache(maxsize=1)
def mlx_core():
    """``mlx.core``, or None when mlx is not installed (or does not import here)."""
    try:
        import mlx.core as mx
    except ImportError:
        return None
    return mx


def is_mlx_array(x) -> bool:
    return type(x).__module__.startswith("mlx") and type(x).__name__ == "array"


def as_bound(value) -> tuple[str, tuple[int, ...], np.ndarray]:
    """(dtype name, shape, numpy array over the memory) of ``value`` as MLX binds it.

    bfloat16 comes back as its 16-bit patterns (``uint16``); the array may be a strided view.
    """
    mx = mlx_core()
    if mx is not None:
        array = value if is_mlx_array(value) else mx.array(value)  # MLX's own conversion
        dtype = ms.dtype_name(array.dtype)
        # np.asarray shares the mlx array's memory: its data pointer and strides are MLX's.
        view = np.asarray(array.view(mx.uint16) if dtype == "bfloat16" else array)
        return dtype, tuple(int(d) for d in array.shape), view
    view = _numpy_conversion(value)
    if view.dtype.name == "bfloat16":
        return "bfloat16", view.shape, view.view(np.uint16)
    return ms.dtype_name(view.dtype), view.shape, view


def _numpy_conversion(value) -> np.ndarray:
    """MLX's ``mx.array(value)``, in numpy."""
    if isinstance(value, (bool, np.bool_)):
        return np.asarray(value, dtype=np.bool_)
    if isinstance(value, int) and not isinstance(value, np.integer):
        return np.asarray(value, dtype=_int_type([value]))
    if isinstance(value, float) and not isinstance(value, np.floating):
        return np.asarray(value, dtype=np.float32)
    if isinstance(value, complex) and not isinstance(value, np.complexfloating):
        return np.asarray(value, dtype=np.complex64)
    if isinstance(value, (list, tuple)):
        array = np.array(value)
        if array.size == 0:
            return array.astype(np.float32)
        if array.dtype.kind in "iu":  # Python ints: int32 unless one does not fit
            return array.astype(_int_type(array.ravel().tolist()))
        if array.dtype.kind not in "bfc":
            raise TypeError(f"[metal_kernel] cannot convert the list {value!r} to an array: "
                            "expected (nested lists of) bools, ints, floats or complex numbers")
        return _narrowed(array)
    if isinstance(value, (np.ndarray, np.generic)):
        return _narrowed(np.asarray(value))
    raise TypeError(f"[metal_kernel] an input must be an array or a number; got {type(value).__name__} "
                    "(without mlx installed, numpy arrays, numpy scalars and Python numbers are accepted)")


def _int_type(values) -> type:
    lo, hi = min(values), max(values)
    if INT32_MIN <= lo and hi <= INT32_MAX:
        return np.int32
    if INT64_MIN <= lo and hi <= INT64_MAX:
        return np.int64
    raise OverflowError(f"[metal_kernel] the integer {hi if hi > INT64_MAX else lo} does not fit in int64, "
                        "the widest integer MLX converts a Python int to")


def _narrowed(array: np.ndarray) -> np.ndarray:
    """numpy's 64-bit floats as MLX narrows them; any other dtype as it is."""
    if array.size > 1 and any(s < 0 for s in array.strides):
        raise ValueError("[metal_kernel] a numpy array with negative strides cannot be an input: mx.array "
                         "refuses it (\"Cannot convert DLPack arrays with negative strides\"); pass a copy")
    if array.dtype == np.float64:
        return _converted(array, np.float32)
    if array.dtype == np.complex128:
        return _converted(array, np.complex64)
    if array.dtype.kind == "f" and array.dtype.itemsize > 8 or array.dtype.kind == "c" and array.dtype.itemsize > 16:
        raise TypeError(f"[metal_kernel] numpy {array.dtype} has no MLX dtype (MLX converts float64 to float32, "
                        "and has no wider float)")
    return array


def _converted(array: np.ndarray, dtype) -> np.ndarray:
    """``array`` in ``dtype`` with its element strides kept, as MLX converts a view: the
    memory it spans from its first element is converted, gaps and all."""
    item = array.itemsize
    if array.flags.c_contiguous or array.size <= 1 or any(s % item for s in array.strides):
        return array.astype(dtype)
    strides = [s // item for s in array.strides]
    span = 1 + sum((d - 1) * s for d, s in zip(array.shape, strides))
    memory = np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(item,)).astype(dtype)
    return np.lib.stride_tricks.as_strided(memory, shape=array.shape, strides=[s * memory.itemsize for s in strides],
                                           writeable=False)


def template_arguments(template) -> list[tuple[str, object]]:
    """``template=`` checked as MLX's binding checks it; without mlx, a numpy dtype stands
    in for an ``mx.Dtype``."""
    if mlx_core() is not None or not template:
        return ms.template_arguments(template)
    out = []
    for name, value in template:
        if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
            out.append((str(name), ms.dtype_name(value)))
        else:
            try:
                out += ms.template_arguments([(name, value)])
            except ValueError:
                raise ValueError("[metal_kernel] Invalid template argument. Must be a numpy dtype (mlx is not "
                                 "installed here: np.float32 stands in for mx.float32), `int` or `bool`.") from None
    return out
