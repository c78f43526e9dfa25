"""The Apple code paths driven against stand-ins, so their Python logic runs everywhere.

Nothing here touches a GPU.  A fake ``Metal`` module records what
gemmglossary.metal.backend asks of Apple's API (compile options, buffers,
setBytes, threadgroup memory, dispatch kind, copy-back, GPU time) and a fake
``mx.fast.metal_kernel`` records what the metal path of gg.metal_kernel passes to MLX.
They check our side of the calls against our reading of the documented APIs; whether
the real frameworks accept them is only shown on Apple Silicon (the ``metal`` cases of
the other tests).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from gemmglossary.metal import backend as metal_api


class Rec:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def record(*args):
            self.calls.append((name, args))
        return record


class FakeBuffer:
    def __init__(self, data: bytes):
        self.data = bytearray(data)

    def contents(self):
        data = self.data

        class Contents:
            def as_buffer(self, n):
                return memoryview(data)[:n]

        return Contents()


class FakeEncoder(Rec):
    pass


class FakeCommandBuffer:
    def __init__(self, device):
        self.device = device
        self.encoder = FakeEncoder()

    def computeCommandEncoder(self):
        return self.encoder

    def commit(self):
        self.device.committed.append(self)

    def waitUntilCompleted(self):
        # "Run" the kernel: the test's stand-in for the GPU edits the bound buffers.
        bound = {args[2]: args[0] for name, args in self.encoder.calls if name == "setBuffer_offset_atIndex_"}
        self.device.gpu(bound)

    def status(self):
        return self.device.status

    def error(self):
        return None

    def GPUStartTime(self):
        return 10.0

    def GPUEndTime(self):
        return 10.25


class FakeLibrary:
    def __init__(self, source, names):
        self.source, self.names = source, names

    def newFunctionWithName_(self, name):
        return ("fn", name) if name in self.names else None

    def newFunctionWithName_constantValues_error_(self, name, values, error):
        return (("fn", name, values), None) if name in self.names else (None, None)

    def functionNames(self):
        return list(self.names)


class FakePipeline:
    def maxTotalThreadsPerThreadgroup(self):
        return 256

    def threadExecutionWidth(self):
        return 32


class FakeDevice:
    def __init__(self):
        self.committed, self.status, self.libraries = [], 4, []
        self.gpu = lambda bound: None

    def newCommandQueue(self):
        device = self

        class Queue:
            def commandBuffer(self):
                return FakeCommandBuffer(device)

        return Queue()

    def newLibraryWithSource_options_error_(self, source, options, error):
        names = [n for n in ("k", "tg_sum") if f"void {n}(" in source]
        self.libraries.append((source, options))
        return FakeLibrary(source, names), None

    def newComputePipelineStateWithFunction_error_(self, function, error):
        return FakePipeline(), None

    def newBufferWithBytes_length_options_(self, data, length, options):
        assert options == 0 and len(data) == length
        return FakeBuffer(data)


class FakeOptions:
    def __init__(self):
        self.macros = None

    def setPreprocessorMacros_(self, macros):
        self.macros = macros


def _alloc(factory):
    return types.SimpleNamespace(alloc=lambda: types.SimpleNamespace(init=factory))


@pytest.fixture
def fake_metal(monkeypatch):
    device = FakeDevice()
    module = types.ModuleType("Metal")
    module.MTLCreateSystemDefaultDevice = lambda: device
    module.MTLCompileOptions = _alloc(FakeOptions)
    module.MTLFunctionConstantValues = _alloc(lambda: "constant-values")
    module.MTLResourceStorageModeShared = 0
    module.MTLCommandBufferStatusError = 5
    module.MTLSizeMake = lambda x, y, z: ("size", x, y, z)
    for name, value in (("MTLDataTypeBool", 53), ("MTLDataTypeInt", 29), ("MTLDataTypeUInt", 33),
                        ("MTLDataTypeFloat", 3), ("MTLDataTypeHalf", 16)):
        setattr(module, name, value)
    monkeypatch.setitem(sys.modules, "Metal", module)
    monkeypatch.setattr(metal_api, "_state", {})
    constants = []
    monkeypatch.setattr(metal_api, "_objc_set_constant",
                        lambda values, data, mtl_type, key: constants.append((data, mtl_type, key)))
    device.constants = constants
    return device


SRC = """
#include <metal_stdlib>
#include "helper.h"
using namespace metal;
constant bool flag [[function_constant(0)]];
kernel void k(device const float* x [[buffer(0)]],
              device float* y       [[buffer(1)]],
              constant float& alpha [[buffer(2)]],
              constant uint& n      [[buffer(3)]],
              threadgroup float* t  [[threadgroup(0)]],
              uint i [[thread_position_in_grid]]) { y[i] = alpha * x[i] * SCALE; }
"""


def test_compile_bind_dispatch_copy_back(fake_metal, tmp_path):
    (tmp_path / "helper.h").write_text("#pragma once\ninline float helper() { return 1.0f; }\n")
    path = tmp_path / "k.metal"
    path.write_text(SRC)
    kernel = metal_api.load_kernel(str(path), "k", defines={"SCALE": 3, "FAST": True},
                                   function_constants={0: True, "other": np.float16(2)})
    source, options = fake_metal.libraries[0]
    assert "inline float helper()" in source and '#include "helper.h"' not in source
    assert '#include <metal_stdlib>' in source
    assert options.macros == {"SCALE": "3", "FAST": "1"}
    assert fake_metal.constants == [(b"\x01", 53, 0), (np.float16(2).tobytes(), 16, "other")]
    assert kernel.max_total_threads_per_threadgroup == 256

    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)

    def gpu(bound):  # y = 2 * x, written into the shared buffer
        xs = np.frombuffer(bound[0].data, np.float32)
        bound[1].data[:] = (2 * xs).astype(np.float32).tobytes()

    fake_metal.gpu = gpu
    t = kernel(x, y, 0.5, 8, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1), threadgroup_memory={0: 20})
    np.testing.assert_array_equal(y, 2 * x)  # copied back in place
    assert t == kernel.last_gpu_time == 0.25
    calls = fake_metal.committed[0].encoder.calls
    names = [c[0] for c in calls]
    assert names[0] == "setComputePipelineState_"
    set_bytes = {args[2]: args[0] for name, args in calls if name == "setBytes_length_atIndex_"}
    assert set_bytes == {2: np.float32(0.5).tobytes(), 3: np.uint32(8).tobytes()}  # declared types
    assert ("setThreadgroupMemoryLength_atIndex_", (32, 0)) in calls  # rounded up to 16 bytes
    assert ("dispatchThreads_threadsPerThreadgroup_", (("size", 8, 1, 1), ("size", 8, 1, 1))) in calls
    assert names[-1] == "endEncoding"


def test_threadgroups_dispatch_and_buffers_by_index(fake_metal):
    kernel = metal_api.load_kernel(SRC.replace('#include "helper.h"\n', "#define SCALE 1\n"), "k")
    y = np.zeros(4, np.float32)
    kernel({0: np.ones(4, np.float32), 1: y, 2: np.float32(1), 3: np.uint32(4)},
           threadgroups=(2, 1, 1), threads_per_threadgroup=(2, 1, 1))
    calls = fake_metal.committed[0].encoder.calls
    assert ("dispatchThreadgroups_threadsPerThreadgroup_", (("size", 2, 1, 1), ("size", 2, 1, 1))) in calls
    assert sorted(args[2] for name, args in calls if name in ("setBuffer_offset_atIndex_", "setBytes_length_atIndex_")) == [0, 1, 2, 3]


def test_errors(fake_metal):
    kernel = metal_api.load_kernel(SRC.replace('#include "helper.h"\n', ""), "k")
    with pytest.raises(metal_api.MetalError, match="exceeds this pipeline's maxTotalThreadsPerThreadgroup"):
        kernel(threads=(512, 1, 1), threads_per_threadgroup=(512, 1, 1))
    with pytest.raises(ValueError, match="exactly one of threads"):
        kernel(threads_per_threadgroup=(1, 1, 1))
    with pytest.raises(metal_api.MetalError, match=r"no kernel named 'nope' \(library has: k\)"):
        metal_api.load_kernel(SRC, "nope")
    fake_metal.status = 5
    with pytest.raises(metal_api.MetalError, match="GPU execution failed"):
        kernel(np.zeros(1, np.float32), np.zeros(1, np.float32), 1.0, 1, threads=(1, 1, 1),
               threads_per_threadgroup=(1, 1, 1))


def test_python_scalar_for_a_struct_needs_numpy(fake_metal):
    src = "struct P { uint a; };\nkernel void k(constant P& p [[buffer(0)]]) {}\n"
    kernel = metal_api.load_kernel(src, "k")
    with pytest.raises(metal_api.MetalError, match="pass a numpy scalar"):
        kernel(3, threads=(1, 1, 1), threads_per_threadgroup=(1, 1, 1))


# --- the metal path of gg.metal_kernel: mx.fast.metal_kernel -----------------------

mx = pytest.importorskip("mlx.core")


def test_metal_kernel_delegates_to_mlx(monkeypatch):
    from gemmglossary.runtime import custom_kernels as fast

    seen = {}

    def fake_metal_kernel(**kwargs):
        seen["make"] = kwargs

        def call(**kw):
            seen["call"] = kw
            return [mx.ones(tuple(s), dtype=d) for s, d in zip(kw["output_shapes"], kw["output_dtypes"])]

        return call

    monkeypatch.setattr(mx.metal, "is_available", lambda: True)
    monkeypatch.setattr(mx.fast, "metal_kernel", fake_metal_kernel)
    monkeypatch.setattr(fast, "backend", lambda: "metal")
    k = fast.metal_kernel("myexp", ["inp"], ["out", "flag"], "out[0] = inp[0];", header="// h",
                          atomic_outputs=True, compile_options={"math_mode": "fast"})
    assert seen["make"] == dict(name="myexp", input_names=["inp"], output_names=["out", "flag"],
                                source="out[0] = inp[0];", header="// h", ensure_row_contiguous=True,
                                atomic_outputs=True, compile_options={"math_mode": "fast"})
    a = np.arange(4, dtype=np.float32)
    out, flag = k(inputs=[a, 2.0], output_shapes=[(4,), (1,)], output_dtypes=[np.float32, np.bool_],
                  grid=(4, 1, 1), threadgroup=(4, 1, 1), template=[("T", mx.float32), ("N", -2), ("B", True)])
    call = seen["call"]
    assert call["inputs"][0] is a and call["inputs"][1] == 2.0  # MLX converts them itself
    assert call["output_dtypes"] == [mx.float32, mx.bool_]
    assert call["template"] == [("T", mx.float32), ("N", -2), ("B", True)]  # MLX checks it itself
    assert call["grid"] == (4, 1, 1) and call["threadgroup"] == (4, 1, 1) and call["init_value"] is None
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and flag.dtype == np.bool_
    out_mx, _ = k(inputs=[mx.array(a), 2.0], output_shapes=[(4,), (1,)], output_dtypes=[mx.float32, mx.bool_],
                  grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert isinstance(out_mx, mx.array)
