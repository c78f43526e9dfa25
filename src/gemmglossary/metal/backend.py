"""The Apple GPU backend of ``gg.load_kernel``: Metal through PyObjC.

Written to Apple's documented Metal API (MTLDevice, MTLLibrary, MTLFunction-
ConstantValues, MTLComputePipelineState, MTLComputeCommandEncoder, MTLCommandBuffer)
and to PyObjC's bridging of it.  It has NOT been run by us: the development machines
are Linux with no Apple GPU, and the macOS workflow (.github/workflows/test-macos.yml),
written to run it, has never run either.

Design:

* the file is compiled verbatim with ``newLibraryWithSource:options:error:``;
  ``defines`` become ``MTLCompileOptions.preprocessorMacros``; quoted ``#include``s
  are inlined first (see :mod:`gemmglossary.msl.includes`: Metal's runtime compiler has no include
  path), searching the file's directory, ``include_dirs`` and then the vendored MLX
  headers (``kernels/vendor``);
* it is compiled with MLX's MTLCompileOptions: safe math and MLX's language version
  (:mod:`.compile_options`); MTLCompileOptions' own default is fast math;
* the device is the one MLX uses (:mod:`.device`); a kernel that needs a GPU family the
  device lacks (simdgroup matrices: Apple7) is refused with
  :class:`~.device.UnsupportedOnDevice` before it is compiled;
* ``function_constants`` ({index or name: value}) become MTLFunctionConstantValues;
  the constant's declared type picks the MTLDataType (else the value's numpy dtype);
* numpy arrays become shared-storage MTLBuffers (a copy in, a copy back into the
  caller's array after the command buffer completes: the arrays behave like Metal
  buffers written in place); an array whose dtype is not the declared element type is
  a TypeError, and a scalar is converted to the declared type, refusing a value it
  cannot hold (:mod:`.binding`, the emulator's rules); scalars, structured arrays and
  bytes go with ``setBytes`` when smaller than 4 KB, in a buffer otherwise;
* ``threadgroup_memory={n: bytes}`` -> ``setThreadgroupMemoryLength:atIndex:``
  (rounded up to 16 bytes as Metal requires); with the kernel's own threadgroup arrays
  it must fit the device's ``maxThreadgroupMemoryLength``;
* ``threads=`` -> ``dispatchThreads``, ``threadgroups=`` -> ``dispatchThreadgroups``;
* after ``waitUntilCompleted`` the GPU time of the dispatch is
  ``GPUEndTime - GPUStartTime`` (seconds), kept in ``kernel.last_gpu_time``;
* compiling and each dispatch run inside their own autorelease pool: command buffers
  are autoreleased and retain their MTLBuffers, so without a pool every dispatch's
  buffers would live until the process exits.

Every selector called here, with the argument conventions PyObjC's metadata gives it,
is listed in tests/runtime/metal_conventions.py; the fakes in tests/runtime accept
nothing else, and a test checks that list against the pinned pyobjc-framework-Metal.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from .. import paths
from .binding import SET_BYTES_LIMIT, bfloat_bits, check_array, shared_memory, value_bytes
from .compile_options import compile_options
from .device import UnsupportedOnDevice, check_kernel_runs, device_info, pick_device
from ..msl.declarations import struct_dtypes
from ..msl.includes import inline_includes
from .parameters import BFLOAT, buffer_parameters, function_constants as declared_constants


class MetalError(RuntimeError):
    """Compilation, pipeline creation or execution failed on the GPU."""


#: numpy dtype name (or BFLOAT) -> MTLDataType enum name, for function constants.
CONSTANT_TYPES = {
    "bool": "MTLDataTypeBool",
    "int8": "MTLDataTypeChar", "uint8": "MTLDataTypeUChar",
    "int16": "MTLDataTypeShort", "uint16": "MTLDataTypeUShort",
    "int32": "MTLDataTypeInt", "uint32": "MTLDataTypeUInt",
    "int64": "MTLDataTypeLong", "uint64": "MTLDataTypeULong",
    "float16": "MTLDataTypeHalf", BFLOAT: "MTLDataTypeBFloat", "float32": "MTLDataTypeFloat",
}

_state: dict = {}


def _metal():
    import Metal  # pyobjc-framework-Metal

    return Metal


def _objc():
    import objc  # pyobjc-core

    return objc


def _device():
    if "device" not in _state:
        Metal = _metal()
        device = pick_device(Metal)
        if device is None:
            raise MetalError("no Metal device: MTLCopyAllDevices() is empty and "
                             "MTLCreateSystemDefaultDevice() returned nil")
        _state["device"] = device
        _state["queue"] = device.newCommandQueue()
        _state["info"] = device_info(device, Metal)
    return _state["device"], _state["queue"], _state["info"]


def _scalar_value(value) -> np.ndarray:
    """A Python/numpy scalar as a 0-d numpy array with a definite dtype."""
    if isinstance(value, (bool, np.bool_)):
        return np.asarray(value, dtype=np.bool_)
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        return np.asarray(value, dtype=np.int32 if isinstance(value, int) else np.float32)
    return np.asarray(value)


def constant_bytes(key, value, declared) -> tuple[bytes, str]:
    """(bytes, CONSTANT_TYPES key) of a function constant's value.

    The declared type decides when it is known; a value it cannot hold exactly (a
    fraction for an integer, an int out of range, a non-bool for a bool) is refused.
    """
    dtype = getattr(declared, "dtype", None)
    if dtype is None:
        arr = _scalar_value(value)
        if arr.dtype.name not in CONSTANT_TYPES:
            raise MetalError(f"function constant {key!r}: unsupported type {arr.dtype}")
        return arr.tobytes(), arr.dtype.name
    what = f"function constant {key!r} ('{declared.type_name} {declared.name}')"
    if dtype == BFLOAT:
        return bfloat_bits(float(value)), BFLOAT
    if dtype.kind == "b":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{what} is a bool; got {value!r}")
        return np.asarray(value, np.bool_).tobytes(), "bool"
    if dtype.kind in "iu":
        if isinstance(value, (float, np.floating)) and float(value) != int(value):
            raise TypeError(f"{what} is an integer; {value!r} is not")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"{what} cannot hold {value!r} (range {info.min}..{info.max})")
        return np.asarray(int(value), dtype).tobytes(), dtype.name
    return np.asarray(value, dtype).tobytes(), dtype.name


_libobjc: dict = {}


def _msg_send(receiver: int, selector: bytes, argtypes: list, args: list) -> None:
    """``objc_msgSend(receiver, selector, *args)`` returning void, through ctypes."""
    if "lib" not in _libobjc:
        lib = ctypes.CDLL("/usr/lib/libobjc.A.dylib")
        lib.sel_registerName.restype = ctypes.c_void_p
        lib.sel_registerName.argtypes = [ctypes.c_char_p]
        _libobjc["lib"] = lib
    lib = _libobjc["lib"]
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, *argtypes)
    send = proto(("objc_msgSend", lib))
    send(ctypes.c_void_p(receiver), ctypes.c_void_p(lib.sel_registerName(selector)), *args)


def _objc_set_constant(values, data: bytes, mtl_type: int, key) -> None:
    """``[values setConstantValue:&data type:mtl_type atIndex:/withName:key]``.

    Sent through the Objective-C runtime with ctypes: PyObjC has no metadata giving
    the length of the ``const void*`` value, so it cannot pass it itself.  ctypes needs
    the object ids: ``objc.pyobjc_id`` takes Objective-C objects only, and PyObjC turns
    every NSString it returns into a Python ``str`` subclass, so the name's NSString is
    taken back out of it with ``nsstring()``.
    """
    objc = _objc()
    buf = ctypes.create_string_buffer(data, len(data))
    receiver = objc.pyobjc_id(values)
    pointer = ctypes.cast(buf, ctypes.c_void_p)
    if isinstance(key, str):
        from Foundation import NSString

        name = NSString.stringWithString_(key).nsstring()  # keeps the NSString alive for the call
        _msg_send(receiver, b"setConstantValue:type:withName:",
                  [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p],
                  [pointer, ctypes.c_uint64(mtl_type), ctypes.c_void_p(objc.pyobjc_id(name))])
    else:
        _msg_send(receiver, b"setConstantValue:type:atIndex:",
                  [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64],
                  [pointer, ctypes.c_uint64(mtl_type), ctypes.c_uint64(int(key))])


def _function_constant_values(function_constants: dict, source: str):
    Metal = _metal()
    declared = declared_constants(source)
    by_name = {c.name: c for c in declared}
    by_index = {c.index: c for c in declared if c.index is not None}
    values = Metal.MTLFunctionConstantValues.alloc().init()
    for key, value in function_constants.items():
        constant = by_name.get(key) if isinstance(key, str) else by_index.get(int(key))
        data, type_key = constant_bytes(key, value, constant)
        _objc_set_constant(values, data, int(getattr(Metal, CONSTANT_TYPES[type_key])), key)
    return values


def _struct_layouts(source: str, label: str) -> dict:
    """{struct name: numpy dtype with Metal's layout}; {} when msl cannot lay the file's
    structs out (its parameters of struct type are then bound unchecked)."""
    try:
        return struct_dtypes(source, label)
    except (KeyError, ValueError):
        return {}


def _macro_value(value) -> str:
    if value is None or value is True:
        return "1"
    if value is False:
        return "0"
    return str(value)


def _read_source(path_or_source) -> tuple[str, Path | None, str]:
    if isinstance(path_or_source, Path) or (
        isinstance(path_or_source, str) and "\n" not in path_or_source
        and path_or_source.endswith((".metal", ".h"))
    ):
        path = Path(path_or_source)
        try:
            return path.read_text(encoding="utf-8"), path.resolve().parent, str(path)
        except UnicodeDecodeError as exc:
            raise MetalError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise MetalError(f"{path}: cannot be read ({exc.strerror})") from None
    return str(path_or_source), None, "<source>"


def _size3(value, what: str) -> tuple[int, int, int]:
    """1 to 3 positive integers up to UINT32_MAX, padded with 1s: a float is refused, not
    truncated, and a size the kernel's 32-bit grid attributes cannot count is refused, as the
    emulator refuses them (emulator/launch_checks.py)."""
    from ..emulator.launch_checks import UINT32_MAX

    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items)
    if not ints or not 1 <= len(items) <= 3 or min(items) < 1 or max(items) > UINT32_MAX:
        raise ValueError(f"{what} must be 1 to 3 integers from 1 to {UINT32_MAX}, got {value!r}")
    return tuple(int(v) for v in items) + (1,) * (3 - len(items))


def _describe_error(error) -> str:
    return str(error.localizedDescription()) if error is not None else "?"


class MetalKernel:
    """A compiled compute pipeline; call it with buffers and a dispatch."""

    backend = "metal"

    def __init__(self, path_or_source, name, *, defines=None, function_constants=None, include_dirs=None):
        Metal = _metal()
        device, self._queue, self.device = _device()
        text, here, label = _read_source(path_or_source)
        dirs = list(include_dirs or ())
        if paths.vendor_dir().is_dir():
            dirs.append(paths.vendor_dir())
        self.source = inline_includes(text, dirs, base_dir=here, filename=label)
        self.name = name
        if self.device.missing():  # only then is the source read for what it needs
            check_kernel_runs(self.device, self.source, label, name)
        self._params = buffer_parameters(self.source, name)
        unresolved = any(p.element is None and p.value_type != "void" for p in self._params.values())
        self._structs = _struct_layouts(self.source, label) if unresolved else {}

        with _objc().autorelease_pool():
            macros = {str(k): _macro_value(v) for k, v in dict(defines or {}).items()}
            options = compile_options(Metal, macros)
            library, error = device.newLibraryWithSource_options_error_(self.source, options, None)
            if library is None:
                raise MetalError(f"{label}: Metal compilation failed:\n{_describe_error(error)}")

            if function_constants:
                values = _function_constant_values(dict(function_constants), self.source)
                function, error = library.newFunctionWithName_constantValues_error_(name, values, None)
            else:
                function, error = library.newFunctionWithName_(name), None
            if function is None:
                names = ", ".join(str(n) for n in library.functionNames())
                detail = f": {_describe_error(error)}" if error is not None else ""
                raise MetalError(f"{label}: no kernel named {name!r} (library has: {names}){detail}")

            pipeline, error = device.newComputePipelineStateWithFunction_error_(function, None)
            if pipeline is None:
                raise MetalError(f"{label}: pipeline creation for {name!r} failed: {_describe_error(error)}")
        self._device, self._pipeline = device, pipeline
        self.max_total_threads_per_threadgroup = int(pipeline.maxTotalThreadsPerThreadgroup())
        self.thread_execution_width = int(pipeline.threadExecutionWidth())
        self.static_threadgroup_memory = int(pipeline.staticThreadgroupMemoryLength())
        self.last_gpu_time: float | None = None

    def _constant_data(self, index: int, value) -> bytes:
        """The bytes of a non-array argument (numpy scalar, Python scalar, bytes)."""
        return value_bytes(self.name, index, self._params.get(index), value, self._structs)

    def __call__(self, *buffers, threads=None, threadgroups=None, threads_per_threadgroup=None,
                 threadgroup_memory=None, **emulator_options):
        # ``schedule``, ``timeout``, ``race_check``... steer the emulator; the GPU ignores them.
        if len(buffers) == 1 and isinstance(buffers[0], dict):  # {buffer index: value}
            by_index = {int(k): v for k, v in buffers[0].items()}
        else:
            by_index = dict(enumerate(buffers))
        if (threads is None) == (threadgroups is None):
            raise ValueError("give exactly one of threads=(x,y,z) or threadgroups=(x,y,z)")
        if threads_per_threadgroup is None:
            raise ValueError("threads_per_threadgroup=(x,y,z) is required")
        tpg = _size3(threads_per_threadgroup, "threads_per_threadgroup")
        if tpg[0] * tpg[1] * tpg[2] > self.max_total_threads_per_threadgroup:
            raise MetalError(
                f"threadgroup of {tpg[0] * tpg[1] * tpg[2]} threads exceeds this pipeline's "
                f"maxTotalThreadsPerThreadgroup ({self.max_total_threads_per_threadgroup})"
            )
        tg_memory = {int(i): (int(n) + 15) // 16 * 16 for i, n in (threadgroup_memory or {}).items()}
        # Past the device's limit a dispatch is undefined (Metal checks it only with API
        # validation on), so it is refused here: the kernel's own threadgroup arrays count too.
        limit = int(self._device.maxThreadgroupMemoryLength())
        total = self.static_threadgroup_memory + sum(tg_memory.values())
        if total > limit:
            raise MetalError(f"threadgroup memory of {total} bytes ({self.static_threadgroup_memory} declared in "
                             f"the kernel, threadgroup_memory {tg_memory} rounded up to 16 bytes); "
                             f"this device allows {limit}")
        # Everything checked and encoded before the GPU is asked for anything.
        arrays, constants = {}, {}
        for index, value in sorted(by_index.items()):
            if isinstance(value, np.ndarray):  # a buffer binds to `T*` and `constant T&` alike
                check_array(self.name, self._params.get(index), value, self._structs)
                arrays[index] = value
            else:
                constants[index] = self._constant_data(index, value)
                if not constants[index]:
                    raise ValueError(f"{self.name}: buffer {index}: no bytes to bind")
        memories = shared_memory(self.name, arrays, self._params, self._structs)

        with _objc().autorelease_pool():
            return self._dispatch(memories, constants, tg_memory, tpg, threads, threadgroups)

    def _new_buffer(self, index: int, data: bytes):
        mtl_buffer = self._device.newBufferWithBytes_length_options_(
            data, len(data), _metal().MTLResourceStorageModeShared
        )
        if mtl_buffer is None:
            raise MetalError(f"buffer {index}: could not allocate {len(data)} bytes")
        return mtl_buffer

    def _dispatch(self, memories, constants, tg_memory, tpg, threads, threadgroups):
        Metal = _metal()
        command_buffer = self._queue.commandBuffer()
        encoder = command_buffer.computeCommandEncoder()
        encoder.setComputePipelineState_(self._pipeline)
        copies = {}  # id(Memory) -> (Memory, MTLBuffer): one buffer per memory the arrays share
        for index, (memory, offset) in memories.items():
            if id(memory) not in copies:
                copies[id(memory)] = (memory, self._new_buffer(index, memory.data or b"\0"))
            encoder.setBuffer_offset_atIndex_(copies[id(memory)][1], offset, index)
        for index, data in constants.items():
            if len(data) < SET_BYTES_LIMIT:
                encoder.setBytes_length_atIndex_(data, len(data), index)
            else:  # setBytes is for data smaller than 4 KB
                encoder.setBuffer_offset_atIndex_(self._new_buffer(index, data), 0, index)
        for index, nbytes in tg_memory.items():
            encoder.setThreadgroupMemoryLength_atIndex_(nbytes, index)

        if threads is not None:
            encoder.dispatchThreads_threadsPerThreadgroup_(
                Metal.MTLSizeMake(*_size3(threads, "threads")), Metal.MTLSizeMake(*tpg)
            )
        else:
            encoder.dispatchThreadgroups_threadsPerThreadgroup_(
                Metal.MTLSizeMake(*_size3(threadgroups, "threadgroups")), Metal.MTLSizeMake(*tpg)
            )
        encoder.endEncoding()
        command_buffer.commit()
        command_buffer.waitUntilCompleted()
        if command_buffer.status() == Metal.MTLCommandBufferStatusError:
            raise MetalError(f"{self.name}: GPU execution failed: {_describe_error(command_buffer.error())}")
        self.last_gpu_time = float(command_buffer.GPUEndTime() - command_buffer.GPUStartTime())

        results = [(memory, bytes(mtl_buffer.contents().as_buffer(len(memory.data))))
                   for memory, mtl_buffer in copies.values() if memory.data]
        for memory, new in results:  # every memory checked before any array is written
            memory.check(new, self.name)
        for memory, new in results:
            memory.write_back(new)
        return self.last_gpu_time


def load_kernel(path_or_source, name, *, defines=None, function_constants=None, include_dirs=None):
    return MetalKernel(path_or_source, name, defines=defines, function_constants=function_constants,
                       include_dirs=include_dirs)


__all__ = ["MetalError", "MetalKernel", "UnsupportedOnDevice", "load_kernel"]
