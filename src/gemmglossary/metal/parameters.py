"""A kernel's ``[[buffer(i)]]`` parameters and function constants, read from its source.

The GPU path needs the declared element type of every buffer parameter (to refuse a
numpy array of another dtype, which the GPU would silently reinterpret, and to encode
Python scalars with ``setBytes``) and of every function constant (to pick its
MTLDataType and encode the value).  The source is read after includes are inlined;
types the reader cannot resolve (template parameters, macros, structs) are reported
as unknown, and nothing is checked for them.

Buffer parameters come from :mod:`gemmglossary.msl.signature`, the project's one
kernel-signature reader; this module only says what their types mean for a numpy
value, and the same for function constant declarations (msl.declarations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..msl import declarations as _declarations
from ..msl import signature as _signature

#: Element types with no numpy dtype: numpy has no bfloat16, so its 16-bit patterns travel as uint16.
BFLOAT_TYPES = frozenset({"bfloat", "bfloat16_t"})
BFLOAT = "bfloat16"

_QUALIFIERS = {"const", "volatile", "device", "constant", "threadgroup", "thread", "restrict", "__restrict"}
_ATOMIC = {"atomic_int": "int", "atomic_uint": "uint", "atomic_float": "float", "atomic_bool": "bool"}
_VECTOR = re.compile(r"^(packed_)?([a-z_]+?)([234])(?:x([234]))?$")


def scalar_dtype(type_name: str):
    """numpy dtype of a scalar type name, :data:`BFLOAT` for bfloat, None when unknown."""
    name = " ".join(type_name.replace("metal::", "").split())
    if name in BFLOAT_TYPES:
        return BFLOAT
    scalar = _signature.SCALAR_TYPES.get(name)
    return None if scalar is None else np.dtype(scalar)


@dataclass(frozen=True)
class Element:
    """What one element of a buffer is: its scalar's dtype, how many of them, atomic or not."""

    dtype: object  # numpy dtype of the scalar, or BFLOAT
    lanes: int = 1  # 2-4 for vectors, rows x columns for matrices
    atomic: bool = False
    packed: bool = False  # packed_ vectors have no padding; a 3-vector otherwise takes 4 lanes of room


def element_type(element: str) -> Element | None:
    """The :class:`Element` of a buffer whose element type is ``element``, None when unknown.

    Vector and packed types (``float4``, ``packed_half3``) and matrices (``float4x4``)
    are arrays of their scalar; atomics (``atomic_uint``, ``atomic<float>``) of their value.
    """
    words = [w for w in element.replace("metal::", "").replace("metal ::", "").split() if w not in _QUALIFIERS]
    name = " ".join(words)
    atomic = re.fullmatch(r"atomic\s*<\s*(.+?)\s*>", name)
    name = atomic.group(1) if atomic else _ATOMIC.get(name, name)
    is_atomic = bool(atomic) or name != " ".join(words)
    known = scalar_dtype(name)
    if known is not None:
        return Element(known, 1, is_atomic)
    vector = _VECTOR.match(name)
    if not vector:
        return None
    base = scalar_dtype(vector.group(2))
    if base is None:
        return None
    lanes = int(vector.group(3)) * (int(vector.group(4)) if vector.group(4) else 1)
    return Element(base, lanes, is_atomic, bool(vector.group(1)))


@dataclass(frozen=True)
class BufferParameter:
    index: int
    name: str
    declared: str  # the declared type as written, whitespace normalized: "device const float*"
    element: Element | None  # None when unknown (a struct, a template parameter, a macro)
    reference: bool  # `T&` (one value) rather than `T*`
    tokens: str = ""  # the type's tokens joined by spaces, as msl and the emulator print it
    value_type: str = ""  # the type pointed or referred to: "float", "GemmParams", "void"

    @property
    def dtype(self):
        """numpy dtype of its scalars, BFLOAT, or None when unknown."""
        return None if self.element is None else self.element.dtype


def buffer_parameters(source: str, kernel: str) -> dict[int, BufferParameter]:
    """{buffer index: parameter} of kernel ``kernel`` in ``source`` (empty if not found)."""
    sig = _signature.find_kernel(source, kernel)
    out: dict[int, BufferParameter] = {}
    for p in (sig.parameters or ()) if sig else ():
        if p.attribute("buffer") is None or not (p.is_pointer or p.is_reference):
            continue
        declared = _as_written(p.type)
        index = p.buffer
        out[index] = BufferParameter(index, p.name, declared, element_type(p.value_type), p.is_reference,
                                     p.type, p.value_type)
    return out


def _as_written(tokens: str) -> str:
    """A type's tokens joined the way a reader writes them:
    ``device metal :: atomic < int > *`` -> ``device metal::atomic<int>*``."""
    text = re.sub(r"\s*(::|<|>|\*|&)\s*", r"\1", tokens)
    text = re.sub(r"\s*,\s*", ", ", text)
    return re.sub(r"(?<=[*&>])(?=[A-Za-z_])", " ", text)


@dataclass(frozen=True)
class FunctionConstant:
    name: str
    index: int | None  # None when the index is not plain arithmetic
    type_name: str  # as written: "metal::uint"
    dtype: object  # as in BufferParameter


def function_constants(source: str) -> list[FunctionConstant]:
    """Every ``constant T name [[function_constant(i)]];`` declaration in ``source``, with
    the numpy dtype of its type (from :func:`gemmglossary.msl.declarations.function_constants`)."""
    out = []
    for c in _declarations.function_constants(source):
        type_name = _as_written(c.type)
        out.append(FunctionConstant(c.name, c.index, type_name, scalar_dtype(type_name)))
    return out
