"""What each argument of a GPU dispatch becomes, checked against the kernel's declared types.

The GPU reads a buffer as whatever the kernel declares: a float64 array bound to
``device float*`` is read as pairs of meaningless floats, and a float64 output gets
float32 bit patterns.  So the rules are the emulator's (issue 13, item 1), with the
emulator's wording, so that a reader gets the same error from both backends:

- a numpy array is the parameter's memory: its dtype must be the declared scalar's
  (``float`` -> float32, ``half`` -> float16 or its uint16 bit patterns, ``bfloat`` ->
  uint16 bit patterns or ml_dtypes' bfloat16; vectors, matrices and atomics: their
  scalar's), else a TypeError naming the kernel, the parameter, its type and the dtype,
  with the conversion to make; a 3-vector that is not ``packed_`` takes 4 lanes of
  room, so an array whose last axis is 3 is refused;
- Python and numpy scalars are values, converted to the declared type; a value the type
  cannot hold (2.5 or -1 for a ``uint``, 3 for a ``bool``) is a ValueError;
- parameters whose type is unknown here (structs, template parameters) take any numpy
  value, structured arrays and bytes.

This restates the emulator's ``binding`` module for the types the Metal backend can
read from the source; it goes once the backend can call the emulator's rules directly.

Small constant data goes with ``setBytes``, which Apple documents for data smaller
than 4 KB only; anything larger goes in its own buffer (for a ``constant T&`` or
``constant T*`` parameter the kernel cannot tell the difference).
"""

from __future__ import annotations

import numpy as np

from .parameters import BFLOAT, BufferParameter

#: ``setBytes:length:atIndex:`` takes data smaller than this (Apple's MTLComputeCommandEncoder docs).
SET_BYTES_LIMIT = 4096


def _where(param: BufferParameter) -> str:
    return f"parameter '{param.name}' [[buffer({param.index})]] ({param.declared})"


def _accepted(dtype: np.dtype, param: BufferParameter) -> bool:
    want = param.dtype
    if want == BFLOAT:
        return dtype == np.uint16 or dtype.name == "bfloat16"
    return dtype == want or (want == np.float16 and dtype == np.uint16)


def _wanted(param: BufferParameter) -> str:
    if param.dtype == BFLOAT:
        return "uint16 (bfloat bit patterns; numpy has no bfloat16 dtype) or ml_dtypes.bfloat16"
    extra = " (or uint16 bit patterns)" if param.dtype == np.float16 else ""
    what = "its components" if param.element.lanes > 1 or param.element.atomic else "its elements"
    return f"{param.dtype.name}{extra} for {what}"


def check_array(kernel: str, param: BufferParameter | None, array: np.ndarray) -> None:
    """TypeError unless the array's memory is what the kernel reads through ``param``."""
    if param is None or param.element is None:
        return
    if not _accepted(array.dtype, param):
        fix = ""
        if param.dtype != BFLOAT and array.dtype.fields is None:
            want = param.dtype.name
            fix = f"; convert it with .astype(np.{want})" + ("" if param.read_only else (
                f" (for an output, create it as np.{want} so that the results land in your array)"))
        raise TypeError(
            f"kernel '{kernel}': {_where(param)} needs {_wanted(param)}, but the array's dtype is "
            f"{array.dtype}{fix}. numpy arrays are bound as memory, never converted")
    element = param.element
    if element.lanes == 3 and not element.packed and array.ndim and array.shape[-1] == 3:
        raise TypeError(
            f"kernel '{kernel}': {_where(param)} has 3-component vectors, which take the room of 4 (the 4th "
            f"is padding), but the array's last axis has 3; pad it to 4 (np.pad(a, [(0, 0)] * (a.ndim - 1) "
            f"+ [(0, 1)])) or declare the parameter packed_")


def bfloat_bits(value: float) -> bytes:
    """float -> bfloat, rounded to nearest (ties to even), as its two little-endian bytes."""
    bits = int(np.asarray(value, np.float32).view(np.uint32))
    if (bits & 0x7FFFFFFF) > 0x7F800000:  # NaN stays a (quiet) NaN
        return np.uint16((bits >> 16) | 0x0040).tobytes()
    return np.uint16(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF).tobytes()


def value_bytes(kernel: str, index: int, param: BufferParameter | None, value) -> bytes:
    """A Python or numpy scalar as the parameter's declared scalar type, refusing what it cannot hold."""
    if param is None or param.element is None:
        if isinstance(value, np.generic):  # its own bytes: the type is the caller's to choose
            return value.tobytes()
        raise TypeError(
            f"kernel '{kernel}': buffer {index}: cannot tell the kernel's type for the Python scalar {value!r}"
            + (f" ({_where(param)})" if param is not None else "")
            + "; pass a numpy scalar (e.g. np.uint32(...)) or bytes")
    if param.element.lanes > 1:
        raise TypeError(f"kernel '{kernel}': {_where(param)} has {param.element.lanes} components: pass a numpy "
                        f"array of them, not the scalar {value!r}")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if param.dtype == BFLOAT:
        if not isinstance(value, (bool, int, float, np.integer, np.floating)):
            raise TypeError(f"kernel '{kernel}': cannot pass {type(value).__name__} {value!r} to {_where(param)}")
        return bfloat_bits(float(value))
    dtype = param.dtype
    if dtype.kind in "iu":
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        elif isinstance(value, (float, np.floating)):
            raise ValueError(f"kernel '{kernel}': {_where(param)} is an integer parameter, but got {value!r} "
                             f"({type(value).__name__}); pass an int")
        elif not isinstance(value, (int, np.integer)):
            raise TypeError(f"kernel '{kernel}': cannot pass {type(value).__name__} {value!r} to {_where(param)}")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            why = "a negative value" if int(value) < 0 and info.min == 0 else "a value out of range"
            raise ValueError(f"kernel '{kernel}': {why} {int(value)} for {_where(param)}, whose values are "
                             f"{info.min}..{info.max}")
        return dtype.type(int(value)).tobytes()
    if dtype.kind == "b":
        if not isinstance(value, (bool, np.bool_, int, np.integer)) or int(value) not in (0, 1):
            raise ValueError(f"kernel '{kernel}': {_where(param)} is bool, but got {value!r}")
        return np.bool_(bool(value)).tobytes()
    if not isinstance(value, (bool, int, float, np.generic)) or isinstance(value, (np.complexfloating, complex)):
        raise TypeError(f"kernel '{kernel}': cannot pass {type(value).__name__} {value!r} to {_where(param)}")
    return dtype.type(value).tobytes()
