"""The Apple GPU backend of ``gg.load_kernel``: Metal through PyObjC.

Written to Apple's documented Metal API (MTLDevice, MTLLibrary, MTLFunction-
ConstantValues, MTLComputePipelineState, MTLComputeCommandEncoder, MTLCommandBuffer)
and to PyObjC's bridging of it.  It has NOT been run by us: the development machines
are Linux with no Apple GPU, and the macOS workflow (.github/workflows/test-macos.yml),
written to run it, has never run either.

Design:

* the file is compiled verbatim with ``newLibraryWithSource:options:error:``;
  ``defines`` become ``MTLCompileOptions.preprocessorMacros``; quoted ``#include``s
  are inlined first (see :mod:`.includes`: Metal's runtime compiler has no include
  path), searching the file's directory, ``include_dirs`` and then the vendored MLX
  headers (``kernels/vendor``);
* ``function_constants`` ({index or name: value}) become MTLFunctionConstantValues;
  the value's numpy dtype picks the MTLDataType;
* numpy arrays become shared-storage MTLBuffers (a copy in, a copy back into the
  caller's array after the command buffer completes: the arrays behave like Metal
  buffers written in place); scalars, structured arrays and bytes go with
  ``setBytes``;
* ``threadgroup_memory={n: bytes}`` -> ``setThreadgroupMemoryLength:atIndex:``
  (rounded up to 16 bytes as Metal requires);
* ``threads=`` -> ``dispatchThreads``, ``threadgroups=`` -> ``dispatchThreadgroups``;
* after ``waitUntilCompleted`` the GPU time of the dispatch is
  ``GPUEndTime - GPUStartTime`` (seconds), kept in ``kernel.last_gpu_time``.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from .. import paths
from .includes import inline_includes
from ..msl.signature import scalar_parameter_types


class MetalError(RuntimeError):
    """Compilation, pipeline creation or execution failed on the GPU."""


#: numpy dtype -> MTLDataType enum name, for function constants.
_CONSTANT_TYPES = {
    "bool": "MTLDataTypeBool",
    "int8": "MTLDataTypeChar", "uint8": "MTLDataTypeUChar",
    "int16": "MTLDataTypeShort", "uint16": "MTLDataTypeUShort",
    "int32": "MTLDataTypeInt", "uint32": "MTLDataTypeUInt",
    "int64": "MTLDataTypeLong", "uint64": "MTLDataTypeULong",
    "float16": "MTLDataTypeHalf", "float32": "MTLDataTypeFloat",
}

_state: dict = {}


def _metal():
    import Metal  # pyobjc-framework-Metal

    return Metal


def _device():
    if "device" not in _state:
        Metal = _metal()
        device = Metal.MTLCreateSystemDefaultDevice()
        if device is None:
            raise MetalError("MTLCreateSystemDefaultDevice() returned no device")
        _state["device"] = device
        _state["queue"] = device.newCommandQueue()
    return _state["device"], _state["queue"]


def _scalar_value(value) -> np.ndarray:
    """A Python/numpy scalar as a 0-d numpy array with a definite dtype."""
    if isinstance(value, (bool, np.bool_)):
        return np.asarray(value, dtype=np.bool_)
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        return np.asarray(value, dtype=np.int32 if isinstance(value, int) else np.float32)
    return np.asarray(value)


def _objc_set_constant(values, data: bytes, mtl_type: int, key) -> None:
    """``[values setConstantValue:&data type:mtl_type atIndex:/withName:key]``.

    Called through the Objective-C runtime with ctypes, because the ``const void*``
    value argument has no PyObjC metadata describing its length.
    """
    import objc
    from Foundation import NSString

    libobjc = ctypes.CDLL("/usr/lib/libobjc.A.dylib")
    libobjc.sel_registerName.restype = ctypes.c_void_p
    libobjc.sel_registerName.argtypes = [ctypes.c_char_p]
    buf = ctypes.create_string_buffer(data, len(data))
    receiver = ctypes.c_void_p(objc.pyobjc_id(values))
    if isinstance(key, str):
        sel = libobjc.sel_registerName(b"setConstantValue:type:withName:")
        name = NSString.stringWithString_(key)
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_uint64, ctypes.c_void_p)
        send = proto(("objc_msgSend", libobjc))
        send(receiver, sel, ctypes.cast(buf, ctypes.c_void_p), mtl_type, ctypes.c_void_p(objc.pyobjc_id(name)))
    else:
        sel = libobjc.sel_registerName(b"setConstantValue:type:atIndex:")
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_uint64, ctypes.c_uint64)
        send = proto(("objc_msgSend", libobjc))
        send(receiver, sel, ctypes.cast(buf, ctypes.c_void_p), mtl_type, int(key))


def _function_constant_values(function_constants: dict):
    Metal = _metal()
    values = Metal.MTLFunctionConstantValues.alloc().init()
    for key, value in function_constants.items():
        arr = _scalar_value(value)
        type_name = _CONSTANT_TYPES.get(arr.dtype.name)
        if type_name is None:
            raise MetalError(f"function constant {key!r}: unsupported type {arr.dtype}")
        _objc_set_constant(values, arr.tobytes(), int(getattr(Metal, type_name)), key)
    return values


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
        return path.read_text(), path.resolve().parent, str(path)
    return str(path_or_source), None, "<source>"


def _size3(value, what: str) -> tuple[int, int, int]:
    t = tuple(int(v) for v in value)
    t = t + (1,) * (3 - len(t))
    if len(t) != 3 or min(t) < 1:
        raise ValueError(f"{what} must be 1 to 3 positive integers, got {value!r}")
    return t


class MetalKernel:
    """A compiled compute pipeline; call it with buffers and a dispatch."""

    backend = "metal"

    def __init__(self, path_or_source, name, *, defines=None, function_constants=None, include_dirs=None):
        Metal = _metal()
        device, self._queue = _device()
        text, here, label = _read_source(path_or_source)
        dirs = list(include_dirs or ())
        if paths.vendor_dir().is_dir():
            dirs.append(paths.vendor_dir())
        self.source = inline_includes(text, dirs, base_dir=here, filename=label)
        self.name = name
        self._scalar_types = scalar_parameter_types(self.source, name)

        options = Metal.MTLCompileOptions.alloc().init()
        if defines:
            options.setPreprocessorMacros_({str(k): _macro_value(v) for k, v in dict(defines).items()})
        library, error = device.newLibraryWithSource_options_error_(self.source, options, None)
        if library is None:
            raise MetalError(f"{label}: Metal compilation failed:\n{error.localizedDescription() if error else '?'}")

        if function_constants:
            values = _function_constant_values(dict(function_constants))
            function, error = library.newFunctionWithName_constantValues_error_(name, values, None)
        else:
            function, error = library.newFunctionWithName_(name), None
        if function is None:
            names = ", ".join(str(n) for n in library.functionNames())
            detail = f": {error.localizedDescription()}" if error is not None else ""
            raise MetalError(f"{label}: no kernel named {name!r} (library has: {names}){detail}")

        pipeline, error = device.newComputePipelineStateWithFunction_error_(function, None)
        if pipeline is None:
            raise MetalError(f"{label}: pipeline creation for {name!r} failed: {error.localizedDescription() if error else '?'}")
        self._device, self._pipeline = device, pipeline
        self.max_total_threads_per_threadgroup = int(pipeline.maxTotalThreadsPerThreadgroup())
        self.thread_execution_width = int(pipeline.threadExecutionWidth())
        self.last_gpu_time: float | None = None

    def _bytes_for(self, index: int, value) -> bytes:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
            dtype = self._scalar_types.get(index)
            if dtype is None:
                raise MetalError(
                    f"buffer {index}: cannot tell the kernel's type for the Python scalar {value!r}; "
                    "pass a numpy scalar (e.g. np.uint32(...)) or bytes"
                )
            return np.asarray(value, dtype=dtype).tobytes()
        return np.asarray(value).tobytes()  # numpy scalar or structured scalar

    def __call__(self, *buffers, threads=None, threadgroups=None, threads_per_threadgroup=None,
                 threadgroup_memory=None, **emulator_options):
        # ``schedule``, ``timeout``, ``race_check``... steer the emulator; the GPU ignores them.
        Metal = _metal()
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

        command_buffer = self._queue.commandBuffer()
        encoder = command_buffer.computeCommandEncoder()
        encoder.setComputePipelineState_(self._pipeline)
        copies = []  # (caller's array, MTLBuffer, contiguous staging array)
        for index, value in sorted(by_index.items()):
            if isinstance(value, np.ndarray):  # a buffer binds to `T*` and `constant T&` alike
                staged = np.ascontiguousarray(value)
                length = max(staged.nbytes, 1)
                data = staged.tobytes() if staged.nbytes else b"\0"
                mtl_buffer = self._device.newBufferWithBytes_length_options_(
                    data, length, Metal.MTLResourceStorageModeShared
                )
                if mtl_buffer is None:
                    raise MetalError(f"buffer {index}: could not allocate {length} bytes")
                encoder.setBuffer_offset_atIndex_(mtl_buffer, 0, index)
                copies.append((value, mtl_buffer, staged))
            else:
                data = self._bytes_for(index, value)
                encoder.setBytes_length_atIndex_(data, len(data), index)
        for index, nbytes in (threadgroup_memory or {}).items():
            encoder.setThreadgroupMemoryLength_atIndex_((int(nbytes) + 15) // 16 * 16, int(index))

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
            error = command_buffer.error()
            raise MetalError(f"{self.name}: GPU execution failed: {error.localizedDescription() if error else '?'}")
        self.last_gpu_time = float(command_buffer.GPUEndTime() - command_buffer.GPUStartTime())

        for original, mtl_buffer, staged in copies:
            if not original.flags.writeable or staged.nbytes == 0:
                continue
            raw = mtl_buffer.contents().as_buffer(staged.nbytes)
            result = np.frombuffer(raw, dtype=staged.dtype, count=staged.size).reshape(staged.shape)
            np.copyto(original, result)
        return self.last_gpu_time


def load_kernel(path_or_source, name, *, defines=None, function_constants=None, include_dirs=None):
    return MetalKernel(path_or_source, name, defines=defines, function_constants=function_constants,
                       include_dirs=include_dirs)
