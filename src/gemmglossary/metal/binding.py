"""What each argument of a GPU dispatch becomes, by the emulator's rules.

The GPU reads a buffer as whatever the kernel declares: a float64 array bound to
``device float*`` is read as pairs of meaningless floats, and a float64 output gets
float32 bit patterns.  The emulator refuses such arguments (issue 13, item 1) in
:mod:`gemmglossary.emulator.binding`, from each parameter's element kind, size, lanes
and address space; the Metal backend applies those very rules -- the same checks, the
same conversions of scalars, lists and tuples, the same TypeError and ValueError texts
-- by describing each parameter the same way from its declared type
(:func:`element_info`).  A parameter whose type cannot be resolved from the source (a
template parameter, a macro, a struct whose layout msl cannot compute) is not checked:
an array, numpy value or bytes is bound as it is.

Arrays whose bytes overlap (the same array twice, overlapping views of one base) are one
buffer, bound at each array's offset, as on the emulator: Metal binds buffers, not copies.

Small constant data goes with ``setBytes``, which Apple documents for data smaller
than 4 KB only; anything larger goes in its own buffer (for a ``constant T&`` or
``constant T*`` parameter the kernel cannot tell the difference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..emulator import binding as _rules
from ..emulator import device_memory as _memory
from ..emulator.abi import abi
from .parameters import BFLOAT, BufferParameter

#: ``setBytes:length:atIndex:`` takes data smaller than this (Apple's MTLComputeCommandEncoder docs).
SET_BYTES_LIMIT = 4096


@dataclass(frozen=True)
class ElementInfo:
    """A parameter as the emulator's rules read it (the fields of its ParamInfo they use)."""

    elem_kind: int
    elem_size: int  # bytes of one element, padding included
    lane_size: int  # bytes of one scalar
    lanes: int
    is_atomic: bool
    address_space: int


def element_info(param: BufferParameter, structs: dict[str, np.dtype]) -> ElementInfo | None:
    """``param`` described for :mod:`gemmglossary.emulator.binding`; None when unknown."""
    a = abi()
    words = param.tokens.split()
    space = a["AS_CONSTANT"] if "constant" in words else a["AS_DEVICE"]
    element = param.element
    if element is None:
        if param.value_type == "void":
            return ElementInfo(a["EK_VOID"], 1, 1, 1, False, space)
        struct = structs.get(param.value_type)
        if struct is None:
            return None
        return ElementInfo(a["EK_STRUCT"], struct.itemsize, struct.itemsize, 1, False, space)
    if element.dtype == BFLOAT:
        kind, lane_size = a["EK_BFLOAT"], 2
    else:
        kind = {"i": a["EK_SINT"], "u": a["EK_UINT"], "f": a["EK_FLOAT"], "b": a["EK_BOOL"]}[element.dtype.kind]
        lane_size = element.dtype.itemsize
    room = 4 if element.lanes == 3 and not element.packed else element.lanes  # a 3-vector takes 4 lanes
    return ElementInfo(kind, lane_size * room, lane_size, element.lanes, element.atomic, space)


def _p(param: BufferParameter) -> dict:
    return {"name": param.name, "index": param.index, "type": param.tokens}


def check_array(kernel: str, param: BufferParameter | None, array: np.ndarray, structs: dict) -> None:
    """The emulator's TypeError unless the array's memory is what the kernel reads."""
    info = None if param is None else element_info(param, structs)
    if info is not None:
        _rules.check_array(array, _p(param), info, kernel)


def shared_memory(kernel: str, arrays: dict[int, np.ndarray], params: dict, structs: dict) -> dict:
    """{buffer index: (Memory, byte offset)}: arrays whose bytes overlap share one memory, as
    on the emulator (:mod:`gemmglossary.emulator.device_memory`), so the GPU gets one buffer
    for them, bound at each array's offset."""
    bound = []
    for index, array in arrays.items():
        param = params.get(index)
        info = None if param is None else element_info(param, structs)
        name = param.name if param is not None else f"buffer {index}"
        where = f"parameter '{param.name}' [[buffer({index})]]" if param is not None else f"buffer {index}"
        bound.append(_memory.Bound(name, where, array, info.elem_size if info is not None else 0))
    return dict(zip(arrays, _memory.share(kernel, bound)))


def value_bytes(kernel: str, index: int, param: BufferParameter | None, value, structs: dict) -> bytes:
    """The bytes of a non-array argument: a value converted to the declared type, bytes, a struct item."""
    info = None if param is None else element_info(param, structs)
    if info is not None:
        return _rules.to_bytes(value, _p(param), info, kernel)[0]
    if isinstance(value, (bytes, bytearray, memoryview, np.generic)):  # its own bytes: the caller's type
        return bytes(value) if not isinstance(value, np.generic) else value.tobytes()
    raise TypeError(
        f"kernel '{kernel}': buffer {index}: cannot tell the kernel's type for the {type(value).__name__} "
        f"{value!r}" + (f" (parameter '{param.name}' is '{param.declared}')" if param is not None else "")
        + "; pass a numpy scalar (e.g. np.uint32(...)), a numpy array or bytes")


def bfloat_bits(value: float) -> bytes:
    """float -> bfloat rounded to nearest (ties to even), as its two bytes: the emulator's rounding."""
    return _rules._bfloat_bits(np.array([value], np.float32)).tobytes()
