"""From the arguments of a launch to the bytes of each kernel parameter.

A numpy array is the parameter's memory: its bytes are bound as they are and written back
after a successful launch, so its dtype must be what the kernel reads. Arrays whose bytes
overlap (the same array twice, overlapping views of one base) are one memory, each bound
at its offset, as Metal binds one buffer at two indices (device_memory.py). The emulator knows
each parameter's element type (ParamInfo, from the compiled kernel) and refuses a
mismatch with a TypeError naming the parameter, the kernel's type and the array's dtype,
instead of letting the kernel reinterpret the bytes. The rules:

- ``bool``, ``char`` ... ``ulong``, ``half``, ``float``: the numpy dtype of that kind and
  size (``int8`` ... ``uint64``, ``float16``, ``float32``); ``bool`` is ``np.bool_``.
- 16-bit floats also take ``uint16`` arrays holding their bit patterns. For ``bfloat``,
  which numpy lacks, that is the usual way (or an ``ml_dtypes.bfloat16`` array).
- Vectors (``float4``, ``packed_half3``), ``atomic<T>`` (``atomic_uint``...): arrays of
  the component type, any shape. A 3-component vector that is not packed takes 4
  components of room; an array whose last axis is 3 is refused with that explanation.
- Structs: numpy structured arrays whose itemsize is the struct's size (``np.dtype(...,
  align=True)`` follows C's layout), or raw bytes (``bytes``, a ``uint8`` array).
- ``device void*``: any array.

Python and numpy scalars, lists and tuples are values: they are converted to the
parameter's type, and a value the type cannot hold (a negative ``uint``, 2.5 for an
``int``, 300 for a ``uchar``) is a ValueError naming the parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .abi import abi
from .device_memory import Bound, Memory, share
from .errors import ArgumentTypeError, ArgumentValueError, LaunchError


@dataclass
class Blob:
    """One buffer parameter: its [[buffer(n)]] index, parameter name, the device memory it is
    bound to (None: left unbound, as MLX's host code leaves buffers a kernel does not read)
    and where in that memory it starts and how many bytes it has. Arguments that share memory
    share one Memory (device_memory.py)."""

    index: int
    name: str
    memory: Memory | None
    offset: int = 0
    size: int = 0


def _kind_names():
    a = abi()
    return {a["EK_SINT"]: "signed integer", a["EK_UINT"]: "unsigned integer", a["EK_FLOAT"]: "floating-point",
            a["EK_BOOL"]: "bool", a["EK_BFLOAT"]: "bfloat"}


def component_dtype(kind: int, size: int) -> np.dtype | None:
    """The numpy dtype of one scalar of the kernel's type (None: numpy has none, e.g. bfloat)."""
    a = abi()
    table = {(a["EK_SINT"], 1): np.int8, (a["EK_SINT"], 2): np.int16, (a["EK_SINT"], 4): np.int32,
             (a["EK_SINT"], 8): np.int64, (a["EK_UINT"], 1): np.uint8, (a["EK_UINT"], 2): np.uint16,
             (a["EK_UINT"], 4): np.uint32, (a["EK_UINT"], 8): np.uint64, (a["EK_FLOAT"], 2): np.float16,
             (a["EK_FLOAT"], 4): np.float32, (a["EK_FLOAT"], 8): np.float64, (a["EK_BOOL"], 1): np.bool_}
    t = table.get((kind, size))
    return np.dtype(t) if t is not None else None


def _where(p: dict) -> str:
    return f"parameter '{p['name']}' [[buffer({p['index']})]] ({p['type']})"


def _accepted(dt: np.dtype, info) -> bool:
    """Whether an array of dtype `dt` holds the parameter's elements as the kernel reads them."""
    a = abi()
    kind = info.elem_kind
    if kind == a["EK_VOID"]:
        return True
    if kind == a["EK_STRUCT"]:
        return (dt.fields is not None and dt.itemsize == info.elem_size) or dt == np.uint8 or \
            (dt.kind == "V" and dt.itemsize == info.elem_size)
    if kind == a["EK_UNKNOWN"]:
        return dt.itemsize == info.elem_size or dt == np.uint8
    if kind == a["EK_BFLOAT"]:
        return dt == np.uint16 or dt.name == "bfloat16"
    if kind == a["EK_FLOAT"] and info.lane_size == 2 and dt == np.uint16:
        return True
    want = component_dtype(kind, info.lane_size)
    return want is not None and dt == want


def _wanted(info) -> str:
    a = abi()
    kind = info.elem_kind
    if kind == a["EK_STRUCT"]:
        return (f"a numpy structured array with {info.elem_size}-byte items (the struct's size; "
                f"np.dtype([...], align=True) lays fields out as C does), or its bytes (.tobytes())")
    if kind == a["EK_BFLOAT"]:
        return "uint16 (bfloat bit patterns; numpy has no bfloat16 dtype) or ml_dtypes.bfloat16"
    if kind == a["EK_UNKNOWN"]:
        return f"{info.elem_size}-byte items, or raw bytes (uint8)"
    want = component_dtype(kind, info.lane_size)
    extra = " (or uint16 bit patterns)" if kind == a["EK_FLOAT"] and info.lane_size == 2 else ""
    what = "its components" if info.lanes > 1 or info.is_atomic else "its elements"
    return f"{want.name}{extra} for {what}"


def check_array(arr: np.ndarray, p: dict, info, kernel: str) -> None:
    """TypeError unless the array's memory is what the kernel reads through this parameter."""
    a = abi()
    dt = arr.dtype
    if not _accepted(dt, info):
        if info.elem_kind == a["EK_STRUCT"] and dt.fields is not None:
            problem = f"its items are {dt.itemsize} bytes but the struct has {info.elem_size}"
        else:
            problem = f"the array's dtype is {dt}"
        fix = ""
        want = component_dtype(info.elem_kind, info.lane_size)
        if want is not None and dt.fields is None:
            read_only = info.address_space == abi()["AS_CONSTANT"] or re.search(r"\bconst\b", p["type"])
            fix = f"; convert it with .astype(np.{want.name})" + ("" if read_only else (
                f" (for an output, create it as np.{want.name} so that the results land in your array)"))
        elif info.elem_kind == a["EK_STRUCT"]:
            fix = "; pass .tobytes() or .view(np.uint8) to bind the bytes as they are"
        raise ArgumentTypeError(
            f"kernel '{kernel}': {_where(p)} needs {_wanted(info)}, but {problem}{fix}. numpy arrays are bound as "
            f"memory, never converted")
    if info.lanes == 3 and info.elem_size == 4 * info.lane_size and arr.ndim and arr.shape[-1] == 3:
        raise ArgumentTypeError(
            f"kernel '{kernel}': {_where(p)} has {info.elem_size}-byte elements: a 3-component vector takes the room "
            f"of 4 (the 4th is padding), but the array's last axis has 3; pad it to 4 (np.pad(a, [(0, 0)] * "
            f"(a.ndim - 1) + [(0, 1)])) or declare the parameter {_packed_name(p['type'])}")


def _packed_name(cxx_type: str) -> str:
    m = re.search(r"\b([a-z]+)3\b", cxx_type)
    return f"packed_{m.group(1)}3" if m else "a packed_ type"


def _scalar_value(v, dt: np.dtype, p: dict, kernel: str):
    """A Python/numpy scalar as a value of dtype `dt` (numpy scalar), refusing what `dt` cannot hold."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if dt.kind in "iu":
        if isinstance(v, (bool, np.bool_)):
            v = int(v)
        elif isinstance(v, (float, np.floating)):
            raise ArgumentValueError(f"kernel '{kernel}': {_where(p)} is an integer parameter, but got {v!r} "
                                     f"({type(v).__name__}); pass an int")
        elif not isinstance(v, (int, np.integer)):
            raise ArgumentTypeError(f"kernel '{kernel}': cannot pass {type(v).__name__} {v!r} to {_where(p)}")
        info = np.iinfo(dt)
        if not info.min <= int(v) <= info.max:
            why = "a negative value" if int(v) < 0 and info.min == 0 else "a value out of range"
            raise ArgumentValueError(f"kernel '{kernel}': {why} {int(v)} for {_where(p)}, whose values are "
                                     f"{info.min}..{info.max}")
        return dt.type(int(v))
    if dt.kind == "b":
        if not isinstance(v, (bool, np.bool_, int, np.integer)) or int(v) not in (0, 1):
            raise ArgumentValueError(f"kernel '{kernel}': {_where(p)} is bool, but got {v!r}")
        return np.bool_(bool(v))
    if not isinstance(v, (bool, int, float, np.generic)) or isinstance(v, (np.complexfloating, complex)):
        raise ArgumentTypeError(f"kernel '{kernel}': cannot pass {type(v).__name__} {v!r} to {_where(p)}")
    return dt.type(v)


def _bfloat_bits(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat (to nearest, ties to even), as uint16 bit patterns."""
    u = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def values_to_bytes(obj, p: dict, info, kernel: str) -> bytes:
    """Scalars, lists and tuples as the parameter's type (one element, or an array of them)."""
    a = abi()
    if info.elem_kind == a["EK_STRUCT"]:
        raise ArgumentTypeError(f"kernel '{kernel}': {_where(p)} is a struct: pass a numpy structured array (or "
                                f"one item of it) or bytes, not {type(obj).__name__}")
    bfloat = info.elem_kind == a["EK_BFLOAT"]
    dt = np.dtype(np.float32) if bfloat else component_dtype(info.elem_kind, info.lane_size)
    if dt is None:
        raise LaunchError(f"kernel '{kernel}': cannot pass the value {obj!r} to {_where(p)}; pass a numpy array or bytes")
    flat = list(np.asarray(obj, dtype=object).reshape(-1)) if isinstance(obj, (list, tuple)) else [obj]
    vals = np.array([_scalar_value(v, dt, p, kernel) for v in flat], dtype=dt)
    if info.lanes > 1:
        if isinstance(obj, (list, tuple)) and np.ndim(np.asarray(obj, dtype=object)) == 1 and len(vals) == info.lanes:
            pass  # one vector
        elif len(vals) % info.lanes:
            raise ArgumentValueError(f"kernel '{kernel}': {_where(p)} has {info.lanes} components, but got "
                                     f"{len(vals)} values")
        vals = vals.reshape(-1, info.lanes)
        pad = info.elem_size // info.lane_size - info.lanes
        if pad:
            vals = np.concatenate([vals, np.zeros((len(vals), pad), dt)], axis=1)
    return (_bfloat_bits(vals) if bfloat else vals).tobytes()


def to_bytes(obj, p: dict, info, kernel: str):
    """(bytes, array to write back or None) for one buffer argument."""
    if isinstance(obj, np.ndarray):
        check_array(obj, p, info, kernel)
        return np.ascontiguousarray(obj).tobytes(), obj
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj), None
    if isinstance(obj, np.void):
        if info.elem_kind == abi()["EK_STRUCT"] and obj.dtype.itemsize != info.elem_size:
            raise ArgumentTypeError(f"kernel '{kernel}': {_where(p)} is a {info.elem_size}-byte struct, but the "
                                    f"structured value has {obj.dtype.itemsize} bytes")
        return obj.tobytes(), None
    if isinstance(obj, (bool, int, float, np.generic, list, tuple)):
        return values_to_bytes(obj, p, info, kernel), None
    raise ArgumentTypeError(f"kernel '{kernel}': cannot bind {type(obj).__name__} to {_where(p)}")


def bind_buffers(kernel: str, bparams: list, buffers: tuple) -> list[Blob]:
    """One Blob per buffer parameter; `buffers` is positional (declaration order) or one
    {index: value} dict. A parameter given None, or missing from the dict, is unbound: an
    access to it is an OutOfBoundsError naming it."""
    if len(buffers) == 1 and isinstance(buffers[0], dict):
        by_index = dict(buffers[0])
    else:
        if len(buffers) != len(bparams):
            names = ", ".join(f"{p['name']} [[buffer({p['index']})]]" for p, _ in bparams)
            raise LaunchError(f"kernel '{kernel}' takes {len(bparams)} buffers ({names}), got {len(buffers)}")
        by_index = {p["index"]: b for (p, _), b in zip(bparams, buffers)}
    known = {p["index"] for p, _ in bparams}
    extra = sorted(k for k in by_index if k not in known)
    if extra:
        names = ", ".join(f"{p['name']} [[buffer({p['index']})]]" for p, _ in bparams) or "none"
        raise LaunchError(f"kernel '{kernel}' has no buffer parameter at index {', '.join(map(str, extra))} "
                          f"(its buffers: {names})")
    blobs: list[Blob] = []
    arrays: list[tuple[int, Bound]] = []  # numpy arrays are memory: bound after all are known, shared if they overlap
    for p, info in bparams:
        value = by_index.get(p["index"])
        if value is None:
            blobs.append(Blob(p["index"], p["name"], None))
        elif isinstance(value, np.ndarray):
            check_array(value, p, info, kernel)
            arrays.append((len(blobs), Bound(p["name"], _where(p), value, info.elem_size)))
            blobs.append(Blob(p["index"], p["name"], None, size=value.nbytes))
        else:
            data, _ = to_bytes(value, p, info, kernel)
            blobs.append(Blob(p["index"], p["name"], Memory(data), size=len(data)))
    for (i, _), (memory, offset) in zip(arrays, share(kernel, [b for _, b in arrays])):
        blobs[i].memory, blobs[i].offset = memory, offset
    return blobs
