"""Every PyObjC call the Metal backend makes, with the argument conventions it relies on.

Written by us from reading PyObjC's bridging rules and the metadata of the pinned
pyobjc-framework-Metal (a list of facts, not PyObjC's text).  Two tests use it:

* the strict fakes (``strict_metal.py``) accept only these selectors, on the receiver
  they belong to, with these conventions -- a typo in a selector, a missing ``None``
  for an error out-parameter or a byte buffer without its length fails there;
* ``test_metal_conventions.py`` checks this list against the metadata in the pinned
  wheel, downloaded from PyPI at test time, so the list cannot drift from PyObjC.

Argument kinds (PyObjC's rules for each Objective-C type):

``id``         an object; PyObjC bridges str, dict and list to NSString, NSDictionary, NSArray
``uint``/``int``  NSUInteger / NSInteger: a Python int (``uint``: not negative)
``bool``       BOOL: a Python bool
``double``     a float (return values only here)
``size``       an ``MTLSize`` struct, as ``Metal.MTLSizeMake(x, y, z)`` makes it
``bytes@N``    ``const void*`` read by the callee: a bytes-like object whose length is
               Python argument ``N`` (PyObjC's metadata names that argument)
``error_out``  ``NSError**`` out-parameter: pass ``None``; the call returns ``(result, error)``
``pointer``    ``void*`` of variable length (return only): ``.as_buffer(n)`` reads it
``void``       no return value

Where each convention comes from (``source``):

``protocol``   PyObjC's metadata for the protocol method (registered on NSObject, "required")
``class``      PyObjC's metadata for that class's method
``runtime``    no metadata: PyObjC uses the method's type encoding, which has only objects
               and integers here, so the Python values pass as they are
``ctypes``     PyObjC cannot bridge it (a ``const void*`` with no length metadata); the
               backend sends it with ``objc_msgSend`` through ctypes
``foundation`` Foundation (pyobjc-framework-Cocoa), not in the Metal metadata
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Selector:
    receiver: str  # the protocol or class whose method it is
    name: str
    args: tuple[str, ...]
    returns: str
    source: str


def _s(receiver, name, args, returns, source="protocol"):
    return Selector(receiver, name, tuple(args), returns, source)


SELECTORS = [
    _s("MTLDevice", "newCommandQueue", [], "id"),
    _s("MTLDevice", "newLibraryWithSource:options:error:", ["id", "id", "error_out"], "id"),
    _s("MTLDevice", "newComputePipelineStateWithFunction:error:", ["id", "error_out"], "id"),
    _s("MTLDevice", "newBufferWithBytes:length:options:", ["bytes@1", "uint", "uint"], "id"),
    _s("MTLDevice", "supportsFamily:", ["int"], "bool"),
    _s("MTLDevice", "name", [], "id"),
    _s("MTLDevice", "maxThreadgroupMemoryLength", [], "uint"),
    _s("MTLLibrary", "newFunctionWithName:", ["id"], "id"),
    _s("MTLLibrary", "newFunctionWithName:constantValues:error:", ["id", "id", "error_out"], "id"),
    _s("MTLLibrary", "functionNames", [], "id"),
    _s("MTLCommandQueue", "commandBuffer", [], "id"),
    _s("MTLCommandBuffer", "computeCommandEncoder", [], "id"),
    _s("MTLCommandBuffer", "commit", [], "void"),
    _s("MTLCommandBuffer", "waitUntilCompleted", [], "void"),
    _s("MTLCommandBuffer", "status", [], "int"),
    _s("MTLCommandBuffer", "error", [], "id"),
    _s("MTLCommandBuffer", "GPUStartTime", [], "double"),
    _s("MTLCommandBuffer", "GPUEndTime", [], "double"),
    _s("MTLComputeCommandEncoder", "setComputePipelineState:", ["id"], "void"),
    _s("MTLComputeCommandEncoder", "setBuffer:offset:atIndex:", ["id", "uint", "uint"], "void"),
    _s("MTLComputeCommandEncoder", "setBytes:length:atIndex:", ["bytes@1", "uint", "uint"], "void"),
    _s("MTLComputeCommandEncoder", "setThreadgroupMemoryLength:atIndex:", ["uint", "uint"], "void"),
    _s("MTLComputeCommandEncoder", "dispatchThreads:threadsPerThreadgroup:", ["size", "size"], "void"),
    _s("MTLComputeCommandEncoder", "dispatchThreadgroups:threadsPerThreadgroup:", ["size", "size"], "void"),
    _s("MTLComputeCommandEncoder", "endEncoding", [], "void"),
    _s("MTLComputePipelineState", "maxTotalThreadsPerThreadgroup", [], "uint"),
    _s("MTLComputePipelineState", "threadExecutionWidth", [], "uint"),
    _s("MTLComputePipelineState", "staticThreadgroupMemoryLength", [], "uint"),
    _s("MTLBuffer", "contents", [], "pointer"),
    _s("MTLCompileOptions", "setMathMode:", ["int"], "void", "runtime"),
    _s("MTLCompileOptions", "setFastMathEnabled:", ["bool"], "void", "class"),
    _s("MTLCompileOptions", "setLanguageVersion:", ["uint"], "void", "runtime"),
    _s("MTLCompileOptions", "setPreprocessorMacros:", ["id"], "void", "runtime"),
    _s("MTLFunctionConstantValues", "setConstantValue:type:atIndex:", ["pointer", "uint", "uint"], "void", "ctypes"),
    _s("MTLFunctionConstantValues", "setConstantValue:type:withName:", ["pointer", "uint", "id"], "void", "ctypes"),
    _s("NSError", "localizedDescription", [], "id", "foundation"),
    _s("NSString", "stringWithString:", ["id"], "id", "foundation"),
]

#: Metal functions called, with their PyObjC signature string (return type, then arguments).
FUNCTIONS = {
    "MTLCopyAllDevices": b"@",
    "MTLCreateSystemDefaultDevice": b"@",
    "MTLSizeMake": b"{MTLSize=QQQ}QQQ",
}

#: Metal constants used, with their values.
CONSTANTS = {
    "MTLResourceStorageModeShared": 0,
    "MTLCommandBufferStatusError": 5,
    "MTLMathModeSafe": 0,
    "MTLLanguageVersion3_1": (3 << 16) + 1,
    "MTLLanguageVersion3_2": (3 << 16) + 2,
    "MTLLanguageVersion4_0": 4 << 16,
    "MTLDataTypeFloat": 3, "MTLDataTypeHalf": 16, "MTLDataTypeInt": 29, "MTLDataTypeUInt": 33,
    "MTLDataTypeShort": 37, "MTLDataTypeUShort": 41, "MTLDataTypeChar": 45, "MTLDataTypeUChar": 49,
    "MTLDataTypeBool": 53, "MTLDataTypeLong": 81, "MTLDataTypeULong": 85, "MTLDataTypeBFloat": 121,
    **{f"MTLGPUFamilyApple{n}": 1000 + n for n in range(1, 11)},
    "MTLGPUFamilyMac2": 2002,
    "MTLGPUFamilyCommon1": 3001, "MTLGPUFamilyCommon2": 3002, "MTLGPUFamilyCommon3": 3003,
    "MTLGPUFamilyMetal3": 5001, "MTLGPUFamilyMetal4": 5002,
}

#: pyobjc-core names the backend uses: objc.pyobjc_id, objc.autorelease_pool, and the
#: ``nsstring()`` method of the str subclass PyObjC returns for an NSString.
CORE_NAMES = ("pyobjc_id", "autorelease_pool", "nsstring")


def by_receiver() -> dict[str, dict[str, Selector]]:
    out: dict[str, dict[str, Selector]] = {}
    for sel in SELECTORS:
        out.setdefault(sel.receiver, {})[sel.name] = sel
    return out


def python_name(selector: str) -> str:
    """PyObjC's Python name of a selector: each ':' becomes '_'."""
    return selector.replace(":", "_")
