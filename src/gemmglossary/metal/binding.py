"""What each argument of a GPU dispatch becomes, checked against the kernel's declared types.

The GPU reads a buffer as whatever the kernel declares: a float64 array bound to
``device float*`` is read as pairs of meaningless floats, and a float64 output gets
float32 bit patterns.  So an array or numpy scalar whose dtype is not the declared
element type is a :class:`TypeError` naming the kernel, the parameter, the declared
type and the value's dtype, with the conversion to make (issue 13, item 1; the
emulator raises the same message).  Python scalars are encoded in the declared type,
refusing values that type cannot hold.  Parameters whose type is unknown here
(structs, template parameters) take any numpy value, structured arrays and bytes.

Small constant data goes with ``setBytes``, which Apple documents for data smaller
than 4 KB only; anything larger goes in its own buffer (for a ``constant T&`` or
``constant T*`` parameter the kernel cannot tell the difference).
"""

from __future__ import annotations

import numpy as np

from .parameters import BFLOAT, BufferParameter

#: ``setBytes:length:atIndex:`` takes data smaller than this (Apple's MTLComputeCommandEncoder docs).
SET_BYTES_LIMIT = 4096


def dtype_mismatch(kernel: str, param: str, index: int, declared: str, expected: str, actual: str,
                   what: str = "array") -> TypeError:
    """The error for a value of dtype ``actual`` bound to a parameter whose elements are ``expected``."""
    if expected == BFLOAT:
        wanted, fix = "uint16 bit patterns of bfloat16 (numpy has no bfloat16)", "x.view(np.uint16)"
    else:
        wanted, fix = f"numpy {expected}", f"x.astype(np.{expected})"
    return TypeError(
        f"{kernel}: parameter '{param}' [[buffer({index})]] is '{declared}' ({wanted}), but the {what} "
        f"bound to it is {actual}; convert it first, e.g. {fix}"
    )


def _matches(dtype: np.dtype, expected) -> bool:
    if expected == BFLOAT:
        return dtype == np.uint16 or dtype.name == "bfloat16"
    return dtype == expected


def check_dtype(kernel: str, param: BufferParameter | None, value) -> None:
    """Raise :func:`dtype_mismatch` when a numpy array or scalar does not fit ``param``."""
    if param is None or param.dtype is None:
        return
    if not _matches(value.dtype, param.dtype):
        what = "array" if isinstance(value, np.ndarray) else "numpy scalar"
        expected = param.dtype if param.dtype == BFLOAT else param.dtype.name
        raise dtype_mismatch(kernel, param.name, param.index, param.declared, expected, value.dtype.name, what)


def python_scalar_bytes(kernel: str, index: int, param: BufferParameter | None, value) -> bytes:
    """A Python bool, int or float encoded as the parameter's declared scalar type."""
    if param is None or param.dtype is None or param.dtype == BFLOAT:
        raise TypeError(
            f"{kernel}: buffer {index}: cannot tell the kernel's type for the Python scalar {value!r}"
            + (f" (parameter '{param.name}' is '{param.declared}')" if param is not None else "")
            + "; pass a numpy scalar (e.g. np.uint32(...)) or bytes"
        )
    dtype = param.dtype
    if isinstance(value, float) and dtype.kind in "biu":
        raise TypeError(f"{kernel}: parameter '{param.name}' [[buffer({index})]] is '{param.declared}'; "
                        f"the float {value!r} would be truncated: pass an int")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"{kernel}: parameter '{param.name}' [[buffer({index})]] is '{param.declared}', "
                             f"which cannot hold {value!r} (range {info.min}..{info.max})")
    return np.asarray(value, dtype=dtype).tobytes()
