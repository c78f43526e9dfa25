"""Strict stand-ins for PyObjC's ``Metal``, ``objc`` and ``Foundation`` modules.

Each fake Objective-C object answers only the selectors ``metal_conventions.SELECTORS``
lists for its receiver, and checks every call against the listed convention before
running the test's behaviour for it: the number of arguments, ``None`` for each error
out-parameter (and a ``(result, error)`` return), a bytes-like object of exactly the
stated length for each byte buffer, an ``MTLSize`` made by ``MTLSizeMake``, ints that
are ints.  ``objc.pyobjc_id`` takes fake Objective-C objects only, as the real one takes
Objective-C objects only -- not the ``str`` subclass PyObjC returns for an NSString.
The fake ``Metal`` module has only the functions and constants the list names.

A convention broken here is a call that would fail on a reader's Mac.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field

import numpy as np

import metal_conventions as conv

_SELECTORS = conv.by_receiver()


#: Bytes Metal reads for a function constant of each MTLDataType (the scalar's size).
_DATA_TYPE_SIZES = {"Bool": 1, "Char": 1, "UChar": 1, "Short": 2, "UShort": 2, "Half": 2, "BFloat": 2,
                    "Int": 4, "UInt": 4, "Float": 4, "Long": 8, "ULong": 8}


class ConventionError(AssertionError):
    """A call PyObjC would refuse, or a selector that does not exist."""


@dataclass(frozen=True)
class MTLSize:
    width: int
    height: int
    depth: int


class PointerResult:
    """What PyObjC returns for a variable-length ``void*``: read it with ``as_buffer(n)``."""

    def __init__(self, data: bytearray):
        self._data = data

    def as_buffer(self, n: int):
        if n > len(self._data):
            raise ConventionError(f"as_buffer({n}) past the end of a {len(self._data)}-byte buffer")
        return memoryview(self._data)[:n]


def _check_arg(kind: str, value, args: tuple, where: str) -> None:
    if kind == "id":
        return
    if kind in ("uint", "int"):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ConventionError(f"{where}: expected an int, got {value!r}")
        if kind == "uint" and value < 0:
            raise ConventionError(f"{where}: NSUInteger cannot be {value}")
        return
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise ConventionError(f"{where}: expected a bool, got {value!r}")
        return
    if kind == "size":
        if not isinstance(value, MTLSize):
            raise ConventionError(f"{where}: expected an MTLSize (Metal.MTLSizeMake), got {value!r}")
        return
    if kind.startswith("bytes@"):
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise ConventionError(f"{where}: expected a bytes-like buffer, got {type(value).__name__}")
        length = args[int(kind[6:])]
        if len(value) != length:
            raise ConventionError(f"{where}: a buffer of {len(value)} bytes passed with length {length}")
        return
    if kind == "error_out":
        if value is not None:
            raise ConventionError(f"{where}: an NSError** out-parameter takes None, got {value!r}")
        return
    raise AssertionError(f"unknown kind {kind}")  # pragma: no cover


class ObjC:
    """A fake Objective-C object of one receiver type.

    ``behaviour`` maps selectors to Python callables taking the in-arguments (not
    the out-parameters); a method with an error out-parameter returns (result, error).
    """

    def __init__(self, receiver: str, world: "World", **behaviour):
        self._receiver = receiver
        self._world = world
        self._behaviour = {conv.python_name(k) if ":" in k else k: v for k, v in behaviour.items()}
        self.calls: list[tuple[str, tuple]] = []

    def __repr__(self):
        return f"<fake {self._receiver}>"

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        selector = attr.replace("_", ":")
        sel = _SELECTORS.get(self._receiver, {}).get(selector)
        if sel is None or sel.source == "ctypes":
            raise ConventionError(
                f"{self._receiver} has no selector {selector!r} in metal_conventions.SELECTORS "
                "(a typo, or a call whose convention nobody checked against PyObjC)")
        impl = self._behaviour.get(attr)
        if impl is None:
            raise ConventionError(f"the test gave the fake {self._receiver} no behaviour for {selector}")

        def call(*args):
            where = f"{self._receiver} {selector}"
            if len(args) != len(sel.args):
                raise ConventionError(f"{where}: {len(sel.args)} arguments, got {len(args)}")
            for i, (kind, value) in enumerate(zip(sel.args, args)):
                _check_arg(kind, value, args, f"{where} argument {i + 1}")
            self.calls.append((selector, args))
            self._world.log.append((self._receiver, selector, self._world.pool_depth))
            result = impl(*[a for a, k in zip(args, sel.args) if k != "error_out"])
            if "error_out" in sel.args and not (isinstance(result, tuple) and len(result) == 2):
                raise AssertionError(f"the fake's {selector} must return (result, error)")  # pragma: no cover
            return result

        return call


@dataclass
class World:
    """The fake GPU: what the test configures, and what the backend did to it."""

    families: set = field(default_factory=lambda: {f"Apple{n}" for n in range(1, 8)} | {"Mac2", "Metal3"})
    names_in_library: tuple = ("k", "tg_sum", "matmul_simd", "matmul_tiled")
    max_threads: int = 256
    tg_memory_limit: int = 32768
    static_tg_memory: int = 8192  # bytes of threadgroup arrays the kernel declares
    status: int = 4  # MTLCommandBufferStatusCompleted
    gpu: object = None  # gpu(bound: {index: bytearray}) plays the kernel
    log: list = field(default_factory=list)
    libraries: list = field(default_factory=list)
    command_buffers: list = field(default_factory=list)
    constants: list = field(default_factory=list)  # (selector, data, type, key) sent through ctypes
    pool_depth: int = 0
    pools: int = 0

    # --- the objects --------------------------------------------------------------
    def device(self):
        return ObjC("MTLDevice", self,
                    newCommandQueue=self.queue,
                    newLibraryWithSource_options_error_=self.library,
                    newComputePipelineStateWithFunction_error_=lambda fn: (self.pipeline(), None),
                    newBufferWithBytes_length_options_=lambda data, n, opts: self.buffer(data),
                    supportsFamily_=self.supports,
                    name=lambda: "Fake GPU",
                    maxThreadgroupMemoryLength=lambda: self.tg_memory_limit)

    def supports(self, value):
        name = next(k for k, v in conv.CONSTANTS.items() if v == value and k.startswith("MTLGPUFamily"))
        return name[len("MTLGPUFamily"):] in self.families

    def queue(self):
        return ObjC("MTLCommandQueue", self, commandBuffer=self.command_buffer)

    def library(self, source, options):
        self.libraries.append((source, options))
        names = [n for n in self.names_in_library
                 if f"void {n}(" in source or f"void {n} (" in source or f'host_name("{n}")' in source]

        def function(name, *values):
            return ObjC("MTLFunction", self) if name in names else None

        return ObjC("MTLLibrary", self,
                    newFunctionWithName_=function,
                    newFunctionWithName_constantValues_error_=lambda n, v: (function(n), None),
                    functionNames=lambda: list(names)), None

    def pipeline(self):
        return ObjC("MTLComputePipelineState", self,
                    maxTotalThreadsPerThreadgroup=lambda: self.max_threads,
                    threadExecutionWidth=lambda: 32,
                    staticThreadgroupMemoryLength=lambda: self.static_tg_memory)

    def buffer(self, data):
        storage = bytearray(data)
        buf = ObjC("MTLBuffer", self, contents=lambda: PointerResult(storage))
        buf.storage = storage
        return buf

    def command_buffer(self):
        encoder = ObjC("MTLComputeCommandEncoder", self, **{
            name: (lambda *a: None) for name in (
                "setComputePipelineState:", "setBuffer:offset:atIndex:", "setBytes:length:atIndex:",
                "setThreadgroupMemoryLength:atIndex:", "dispatchThreads:threadsPerThreadgroup:",
                "dispatchThreadgroups:threadsPerThreadgroup:", "endEncoding")})

        def wait():
            bound = {args[2]: args[0].storage for sel, args in encoder.calls if sel == "setBuffer:offset:atIndex:"}
            if self.gpu is not None:
                self.gpu(bound)

        cb = ObjC("MTLCommandBuffer", self,
                  computeCommandEncoder=lambda: encoder, commit=lambda: None, waitUntilCompleted=wait,
                  status=lambda: self.status,
                  error=lambda: ObjC("NSError", self, localizedDescription=lambda: "fake GPU fault"),
                  GPUStartTime=lambda: 10.0, GPUEndTime=lambda: 10.25)
        cb.encoder = encoder
        self.command_buffers.append(cb)
        return cb

    # --- the modules --------------------------------------------------------------
    def metal_module(self):
        world = self
        module = types.ModuleType("Metal")
        device = self.device()
        module.MTLCopyAllDevices = lambda: [device]
        module.MTLCreateSystemDefaultDevice = lambda: device
        module.MTLSizeMake = lambda x, y, z: MTLSize(x, y, z)
        for name, value in conv.CONSTANTS.items():
            setattr(module, name, value)

        def make_options():  # what was set is in .settings
            settings: dict = {}
            opts = ObjC("MTLCompileOptions", world, **{
                "setMathMode:": lambda v: settings.__setitem__("math_mode", v),
                "setFastMathEnabled:": lambda v: settings.__setitem__("fast_math", v),
                "setLanguageVersion:": lambda v: settings.__setitem__("language_version", v),
                "setPreprocessorMacros:": lambda v: settings.__setitem__("macros", dict(v)),
            })
            opts.settings = settings
            return opts

        module.MTLCompileOptions = types.SimpleNamespace(alloc=lambda: types.SimpleNamespace(init=make_options))
        module.MTLFunctionConstantValues = types.SimpleNamespace(
            alloc=lambda: types.SimpleNamespace(init=lambda: ObjC("MTLFunctionConstantValues", world)))
        return module

    def objc_module(self):
        world = self
        module = types.ModuleType("objc")

        def pyobjc_id(obj):
            if not isinstance(obj, ObjC):
                raise TypeError(f"pyobjc_id: not an Objective-C object: {type(obj).__name__}")
            return id(obj)

        class autorelease_pool:
            def __enter__(self):
                world.pool_depth += 1
                world.pools += 1

            def __exit__(self, *exc):
                world.pool_depth -= 1

        module.pyobjc_id = pyobjc_id
        module.autorelease_pool = autorelease_pool
        self.objects_by_id = {}
        return module

    def foundation_module(self):
        world = self
        module = types.ModuleType("Foundation")

        class PyObjCUnicode(str):
            """What PyObjC returns for an NSString: a str, with the NSString inside."""

            def nsstring(self):
                ns = ObjC("NSString", world)
                ns.text = str(self)
                world.strings[id(ns)] = ns
                return ns

        world.strings = {}
        module.NSString = types.SimpleNamespace(stringWithString_=lambda s: PyObjCUnicode(s))
        return module

    def msg_send(self, receiver: int, selector: bytes, argtypes: list, args: list) -> None:
        """Stand-in for the backend's ctypes objc_msgSend: checks the call against the list."""
        name = selector.decode()
        sel = _SELECTORS.get("MTLFunctionConstantValues", {}).get(name)
        if sel is None or sel.source != "ctypes":
            raise ConventionError(f"objc_msgSend of {name!r}, which metal_conventions does not list")
        if len(argtypes) != len(sel.args) or len(args) != len(sel.args):
            raise ConventionError(f"{name}: {len(sel.args)} arguments, got {len(args)}")
        import ctypes

        pointer, mtl_type, key = args
        type_name = next((k for k, v in conv.CONSTANTS.items() if k.startswith("MTLDataType") and v == mtl_type.value), None)
        if type_name is None:
            raise ConventionError(f"{name}: {mtl_type.value} is not an MTLDataType the list knows")
        data = ctypes.string_at(pointer.value, _DATA_TYPE_SIZES[type_name[len("MTLDataType"):]])
        if sel.args[2] == "id":
            ns = self.strings.get(key.value)
            if ns is None:
                raise ConventionError(f"{name}: the name is not an NSString's id")
            key = ns.text
        else:
            key = key.value
        self.constants.append((name, data, mtl_type.value, key))
