"""The Metal backend driven against strict stand-ins for PyObjC, so its logic runs everywhere.

Nothing here touches a GPU.  ``strict_metal`` fakes PyObjC's ``Metal``, ``objc`` and
``Foundation`` modules, accepting only the selectors and argument conventions
``metal_conventions`` lists (checked against the pinned PyObjC metadata by
test_metal_conventions.py), and records what gemmglossary.metal.backend asks of them:
compile options, function constants, buffers, setBytes, threadgroup memory, dispatch,
autorelease pools, copy-back and GPU time.  A fake ``mx.fast.metal_kernel`` records
what the metal path of gg.metal_kernel passes to MLX.  Whether the real frameworks
behave as the fakes assume is only shown on a Mac (the ``metal`` cases of the other
tests).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import strict_metal
from gemmglossary import paths
from gemmglossary.metal import backend as metal_api
from gemmglossary.metal import compile_options as mtl_options
from gemmglossary.metal.binding import bfloat_bits
from gemmglossary.metal.device import UnsupportedOnDevice


@pytest.fixture
def world(monkeypatch):
    w = strict_metal.World()
    monkeypatch.setitem(sys.modules, "Metal", w.metal_module())
    monkeypatch.setitem(sys.modules, "objc", w.objc_module())
    monkeypatch.setitem(sys.modules, "Foundation", w.foundation_module())
    monkeypatch.setattr(metal_api, "_state", {})
    monkeypatch.setattr(metal_api, "_msg_send", w.msg_send)
    monkeypatch.setattr(mtl_options, "macos_major", lambda: 15)
    return w


SRC = """
#include <metal_stdlib>
#include "helper.h"
using namespace metal;
constant bool flag [[function_constant(0)]];
constant half other [[function_constant(1)]];
constant uint count [[function_constant(2)]];
kernel void k(device const float* x [[buffer(0)]],
              device float* y       [[buffer(1)]],
              constant float& alpha [[buffer(2)]],
              constant uint& n      [[buffer(3)]],
              threadgroup float* t  [[threadgroup(0)]],
              uint i [[thread_position_in_grid]]) { y[i] = alpha * x[i] * SCALE; }
"""
PLAIN = SRC.replace('#include "helper.h"\n', "#define SCALE 1\n")


def _one_dispatch(kernel, *buffers, **kw):
    kw.setdefault("threads", (8, 1, 1))
    kw.setdefault("threads_per_threadgroup", (8, 1, 1))
    return kernel(*buffers, **kw)


def test_compile_bind_dispatch_copy_back(world, tmp_path):
    (tmp_path / "helper.h").write_text("#pragma once\ninline float helper() { return 1.0f; }\n")
    path = tmp_path / "k.metal"
    path.write_text(SRC)
    kernel = metal_api.load_kernel(str(path), "k", defines={"SCALE": 3, "FAST": True},
                                   function_constants={0: True, "other": 2.0, "count": np.int64(7)})
    source, options = world.libraries[0]
    assert "inline float helper()" in source and '#include "helper.h"' not in source
    assert '#include <metal_stdlib>' in source
    assert options.settings["macros"] == {"SCALE": "3", "FAST": "1"}
    # the declared type decides: `half other` gets a half, `uint count` a uint
    assert world.constants == [
        ("setConstantValue:type:atIndex:", b"\x01", 53, 0),
        ("setConstantValue:type:withName:", np.float16(2).tobytes(), 16, "other"),
        ("setConstantValue:type:withName:", np.uint32(7).tobytes(), 33, "count"),
    ]
    assert kernel.max_total_threads_per_threadgroup == 256

    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)

    def gpu(bound):  # y = 2 * x, written into the shared buffer
        bound[1][:] = (2 * np.frombuffer(bound[0], np.float32)).astype(np.float32).tobytes()

    world.gpu = gpu
    t = _one_dispatch(kernel, x, y, 0.5, 8, threadgroup_memory={0: 20})
    np.testing.assert_array_equal(y, 2 * x)  # copied back in place
    assert t == kernel.last_gpu_time == 0.25
    calls = world.command_buffers[0].encoder.calls
    names = [c[0] for c in calls]
    assert names[0] == "setComputePipelineState:"
    set_bytes = {args[2]: args[0] for name, args in calls if name == "setBytes:length:atIndex:"}
    assert set_bytes == {2: np.float32(0.5).tobytes(), 3: np.uint32(8).tobytes()}  # declared types
    assert ("setThreadgroupMemoryLength:atIndex:", (32, 0)) in calls  # rounded up to 16 bytes
    dispatch = [args for name, args in calls if name == "dispatchThreads:threadsPerThreadgroup:"]
    assert dispatch == [(strict_metal.MTLSize(8, 1, 1), strict_metal.MTLSize(8, 1, 1))]
    assert names[-1] == "endEncoding"


def test_safe_math_and_mlx_language_version(world, monkeypatch):
    metal_api.load_kernel(PLAIN, "k")
    # MTLMathModeSafe on macOS 15 and later, Metal 3.2 there, as MLX
    assert world.libraries[-1][1].settings == {"math_mode": 0, "language_version": (3 << 16) + 2}
    monkeypatch.setattr(mtl_options, "macos_major", lambda: 14)
    metal_api.load_kernel(PLAIN, "k")
    # no mathMode before macOS 15: fast math switched off instead; Metal 3.1
    assert world.libraries[-1][1].settings == {"fast_math": False, "language_version": (3 << 16) + 1}
    for major, version in ((26, 4 << 16), (27, (4 << 16) + 1)):
        assert mtl_options.language_version(sys.modules["Metal"], major) == version


def test_each_compile_and_dispatch_runs_in_its_own_autorelease_pool(world):
    kernel = metal_api.load_kernel(PLAIN, "k")
    compiled = world.pools
    assert compiled == 1
    for _ in range(3):
        _one_dispatch(kernel, np.zeros(8, np.float32), np.zeros(8, np.float32), 1.0, 8)
    assert world.pools == compiled + 3
    made = [depth for receiver, sel, depth in world.log if (receiver, sel) in {
        ("MTLDevice", "newLibraryWithSource:options:error:"), ("MTLCommandQueue", "commandBuffer"),
        ("MTLDevice", "newBufferWithBytes:length:options:"), ("MTLCommandBuffer", "commit")}]
    assert made and all(depth == 1 for depth in made)  # every autoreleased object inside a pool
    assert world.pool_depth == 0


def test_threadgroups_dispatch_and_buffers_by_index(world):
    kernel = metal_api.load_kernel(PLAIN, "k")
    y = np.zeros(4, np.float32)
    kernel({0: np.ones(4, np.float32), 1: y, 2: np.float32(1), 3: np.uint32(4)},
           threadgroups=(2, 1, 1), threads_per_threadgroup=(2, 1, 1))
    calls = world.command_buffers[0].encoder.calls
    assert ("dispatchThreadgroups:threadsPerThreadgroup:",
            (strict_metal.MTLSize(2, 1, 1), strict_metal.MTLSize(2, 1, 1))) in calls
    bound = sorted(args[2] for name, args in calls if name in ("setBuffer:offset:atIndex:", "setBytes:length:atIndex:"))
    assert bound == [0, 1, 2, 3]


def test_arrays_that_share_memory_are_one_buffer_at_their_offsets(world):
    """Metal binds buffers, not copies: the same array twice, or overlapping views of one
    base, get one MTLBuffer, each index at its array's byte offset, and what the GPU wrote
    is seen through every name (the emulator does the same: emulator/device_memory.py)."""
    kernel = metal_api.load_kernel(PLAIN, "k")
    base = np.arange(12, dtype=np.float32)

    def gpu(bound):  # y[i] = 2 * x[i], one element after another, through the offsets given
        calls = world.command_buffers[-1].encoder.calls
        at = {args[2]: (args[0].storage, args[1]) for name, args in calls if name == "setBuffer:offset:atIndex:"}
        (xs, xo), (ys, yo) = at[0], at[1]
        for i in range(8):
            v = np.frombuffer(xs, np.float32, 1, xo + 4 * i)[0]
            ys[yo + 4 * i:yo + 4 * i + 4] = np.float32(2 * v).tobytes()

    world.gpu = gpu
    _one_dispatch(kernel, base[:8], base[2:10], 1.0, 8)
    set_buffer = [args for name, args in world.command_buffers[-1].encoder.calls if name == "setBuffer:offset:atIndex:"]
    assert set_buffer[0][0] is set_buffer[1][0]  # one buffer
    assert [(a[1], a[2]) for a in set_buffer] == [(0, 0), (8, 1)]  # byte offsets 0 and 8
    want = np.arange(12, dtype=np.float32)
    for i in range(8):
        want[2 + i] = 2 * want[i]
    np.testing.assert_array_equal(base, want)

    separate = np.zeros(8, np.float32)
    _one_dispatch(kernel, base[:8], separate, 1.0, 8)  # no overlap: two buffers, as before
    set_buffer = [args for name, args in world.command_buffers[-1].encoder.calls if name == "setBuffer:offset:atIndex:"]
    assert set_buffer[0][0] is not set_buffer[1][0]
    np.testing.assert_array_equal(separate, 2 * base[:8])


def test_a_read_only_array_the_gpu_wrote_is_refused(world):
    """Nothing is lost silently: a read-only array whose memory the kernel wrote is an
    error, raised before any array is written back (as on the emulator)."""
    from gemmglossary.emulator import LaunchError

    kernel = metal_api.load_kernel(PLAIN, "k")
    ro = np.frombuffer(np.ones(8, np.float32).tobytes(), np.float32)
    y = np.zeros(8, np.float32)

    def gpu(bound):
        bound[0][:4] = np.float32(5).tobytes()
        bound[1][:] = np.full(8, 3, np.float32).tobytes()

    world.gpu = gpu
    with pytest.raises(LaunchError, match=r"wrote to buffer 'x', but the array is read-only"):
        _one_dispatch(kernel, ro, y, 1.0, 8)
    assert (y == 0).all()


def test_constant_data_of_4kb_or_more_goes_in_a_buffer(world):
    src = "struct Big { float v[1024]; };\nkernel void k(constant Big& big [[buffer(0)]], constant float& s [[buffer(1)]]) {}\n"
    kernel = metal_api.load_kernel(src, "k")
    big = np.zeros((), dtype=[("v", "<f4", (1024,))])[()]  # 4096 bytes: not smaller than 4 KB
    _one_dispatch(kernel, big, 1.0)
    calls = world.command_buffers[0].encoder.calls
    assert [args[2] for name, args in calls if name == "setBuffer:offset:atIndex:"] == [0]
    assert [args[2] for name, args in calls if name == "setBytes:length:atIndex:"] == [1]


def test_wrong_dtypes_are_type_errors(world):
    kernel = metal_api.load_kernel(PLAIN, "k")
    good = np.zeros(8, np.float32)
    with pytest.raises(TypeError) as info:
        _one_dispatch(kernel, np.zeros(8), good, 1.0, 8)  # numpy's default float64
    assert str(info.value) == (
        "kernel 'k': parameter 'x' [[buffer(0)]] (device const float *) needs float32 for its elements, but the "
        "array's dtype is float64; convert it with .astype(np.float32). numpy arrays are bound as memory, "
        "never converted")
    with pytest.raises(TypeError, match=r"'y' \[\[buffer\(1\)\]\] \(device float \*\) needs float32.*dtype is "
                       r"float64; convert it with \.astype\(np\.float32\) \(for an output, create it as np\.float32"):
        _one_dispatch(kernel, good, np.zeros(8), 1.0, 8)  # an output would get float32 bit patterns
    with pytest.raises(ValueError, match=r"'n' \[\[buffer\(3\)\]\] \(constant uint &\) is an integer parameter, "
                       r"but got 8\.5 \(float\); pass an int"):
        _one_dispatch(kernel, good, good, 1.0, 8.5)
    with pytest.raises(ValueError, match=r"a negative value -1 for parameter 'n' .*whose values are 0\.\.4294967295"):
        _one_dispatch(kernel, good, good, 1.0, -1)
    assert world.command_buffers == []  # refused before the GPU was asked for anything


def test_scalars_are_values_converted_to_the_declared_type(world):
    kernel = metal_api.load_kernel(PLAIN, "k")
    good = np.zeros(8, np.float32)
    _one_dispatch(kernel, good, good, np.float64(0.5), np.int64(8))  # as the emulator converts them
    set_bytes = {args[2]: args[0] for name, args in world.command_buffers[0].encoder.calls
                 if name == "setBytes:length:atIndex:"}
    assert set_bytes == {2: np.float32(0.5).tobytes(), 3: np.uint32(8).tobytes()}


def test_element_types_that_are_checked_and_that_are_not(world):
    src = """
    struct P { uint a; };
    template <typename T> kernel void t(device T* x [[buffer(0)]]) {}
    kernel void k(device float4* v [[buffer(0)]], device atomic_uint* c [[buffer(1)]],
                  device bfloat* b [[buffer(2)]], constant P& p [[buffer(3)]],
                  device packed_half3* h [[buffer(4)]], device const half* hb [[buffer(5)]],
                  device float3* f3 [[buffer(6)]]) {}
    """
    kernel = metal_api.load_kernel(src, "k")
    ok = [np.zeros(8, np.float32), np.zeros(4, np.uint32), np.zeros(4, np.uint16),
          np.zeros((), [("a", "<u4")]), np.zeros(6, np.float16), np.zeros(4, np.uint16), np.zeros((2, 4), np.float32)]
    _one_dispatch(kernel, *ok)
    for index, bad in ((0, np.zeros(8, np.float16)), (1, np.zeros(4, np.int32)), (2, np.zeros(4, np.float32)),
                       (4, np.zeros(6, np.float32)), (5, np.zeros(4, np.int16))):
        args = list(ok)
        args[index] = bad
        with pytest.raises(TypeError, match=rf"\[\[buffer\({index}\)\]\]"):
            _one_dispatch(kernel, *args)
    with pytest.raises(TypeError, match=r"\(device atomic_uint \*\) needs uint32 for its components, but"):
        _one_dispatch(kernel, ok[0], np.zeros(4, np.int32), *ok[2:])
    with pytest.raises(TypeError, match=r"needs uint16 \(bfloat bit patterns; numpy has no bfloat16 dtype\)"):
        _one_dispatch(kernel, ok[0], ok[1], np.zeros(4, np.float32), *ok[3:])
    ml_dtypes = pytest.importorskip("ml_dtypes")
    _one_dispatch(kernel, *ok[:2], np.zeros(4, ml_dtypes.bfloat16), *ok[3:])  # bfloat as ml_dtypes has it
    with pytest.raises(TypeError, match=r"\(device float3 \*\) has 16-byte elements: a 3-component vector takes the room of 4"):
        _one_dispatch(kernel, *ok[:6], np.zeros((2, 3), np.float32))


def test_function_constant_values_must_fit_their_declared_type(world):
    with pytest.raises(TypeError, match=r"function constant 0 \('bool flag'\) is a bool; got 3"):
        metal_api.load_kernel(PLAIN, "k", function_constants={0: 3})
    with pytest.raises(TypeError, match=r"'uint count'\) is an integer; 2.5 is not"):
        metal_api.load_kernel(PLAIN, "k", function_constants={"count": 2.5})
    with pytest.raises(ValueError, match=r"'uint count'\) cannot hold -1"):
        metal_api.load_kernel(PLAIN, "k", function_constants={2: -1})


def test_bfloat_function_constant(world):
    src = "constant bfloat scale [[function_constant(4)]];\nkernel void k(device float* y [[buffer(0)]]) {}\n"
    metal_api.load_kernel(src, "k", function_constants={4: 1.0, "scale": -2.5})
    assert world.constants == [("setConstantValue:type:atIndex:", np.uint16(0x3F80).tobytes(), 121, 4),
                               ("setConstantValue:type:withName:", np.uint16(0xC020).tobytes(), 121, "scale")]
    assert bfloat_bits(1.00390625) == np.uint16(0x3F80).tobytes()  # a tie: to even
    assert bfloat_bits(1.01171875) == np.uint16(0x3F82).tobytes()  # a tie: to even, up


def test_simdgroup_matrices_need_apple7(world):
    world.families = {"Mac2", "Metal3", "Common1", "Common2", "Common3"}  # e.g. a virtual GPU
    simd = paths.kernels_dir() / "matmul_simd.metal"
    with pytest.raises(UnsupportedOnDevice) as info:
        metal_api.load_kernel(str(simd), "matmul_simd")
    code = [text.split("//")[0] for text in simd.read_text().split("\n")]
    line = next(i for i, text in enumerate(code, 1) if "simdgroup_float8x8" in text or "simdgroup_matrix<" in text)
    message = str(info.value)
    assert message.startswith(f"{simd}:{line}: kernel 'matmul_simd' uses simdgroup matrices (")
    assert "need a GPU of the Apple7 family or later; the Metal device 'Fake GPU' (GPU families: " \
           "Mac2, Common1, Common2, Common3, Metal3) is not one" in message
    assert world.libraries == []  # refused before compiling
    # a kernel without simdgroup matrices still runs there
    metal_api.load_kernel(str(paths.kernels_dir() / "matmul_tiled.metal"), "matmul_tiled")


def test_errors(world):
    kernel = metal_api.load_kernel(PLAIN, "k")
    with pytest.raises(metal_api.MetalError, match="exceeds this pipeline's maxTotalThreadsPerThreadgroup"):
        kernel(threads=(512, 1, 1), threads_per_threadgroup=(512, 1, 1))
    with pytest.raises(ValueError, match="exactly one of threads"):
        kernel(threads_per_threadgroup=(1, 1, 1))
    with pytest.raises(metal_api.MetalError, match=r"threadgroup memory of 32784 bytes \(8192 declared in the "
                       r"kernel, threadgroup_memory \{0: 24592\} rounded up.*this device allows 32768"):
        _one_dispatch(kernel, threadgroup_memory={0: 24590})
    with pytest.raises(metal_api.MetalError, match=r"no kernel named 'nope' \(library has: k\)"):
        metal_api.load_kernel(PLAIN, "nope")
    world.status = 5
    with pytest.raises(metal_api.MetalError, match="GPU execution failed: fake GPU fault"):
        _one_dispatch(kernel, np.zeros(8, np.float32), np.zeros(8, np.float32), 1.0, 8)


def test_structs_and_unresolved_types(world):
    src = """
    struct P { uint a; float b; };
    template <typename T> kernel void t(device T* x [[buffer(0)]], constant P& p [[buffer(1)]]) {}
    template [[host_name("t_float")]] [[kernel]] decltype(t<float>) t<float>;
    """
    world.names_in_library = ("t_float",)
    kernel = metal_api.load_kernel(src, "t_float")
    p = np.zeros((), np.dtype([("a", "<u4"), ("b", "<f4")]))
    _one_dispatch(kernel, np.zeros(4, np.float64), p[()])  # T is not resolved: bound as it is
    with pytest.raises(TypeError, match=r"parameter 'p' \[\[buffer\(1\)\]\] \(constant P &\) is a struct: pass a "
                       r"numpy structured array \(or one item of it\) or bytes, not int"):
        _one_dispatch(kernel, np.zeros(4, np.float32), 3)
    with pytest.raises(TypeError, match=r"is a 8-byte struct, but the structured value has 4 bytes"):
        _one_dispatch(kernel, np.zeros(4, np.float32), np.zeros((), [("a", "<u4")])[()])
    with pytest.raises(TypeError, match=r"cannot tell the kernel's type for the int 3 \(parameter 'x' is 'device T\*'\)"):
        _one_dispatch(kernel, 3, p[()])


def test_the_same_errors_as_the_emulator(world):
    """The Metal backend applies the emulator's argument rules: the same text for the same mistake."""
    from gemmglossary import emulator

    on_gpu = metal_api.load_kernel(PLAIN, "k")
    on_cpu = emulator.load_kernel(PLAIN, "k")
    good = np.zeros(8, np.float32)
    cases = [(np.zeros(8), good, 1.0, 8), (good, np.zeros(8), 1.0, 8), (good, good, 1.0, 8.5),
             (good, good, 1.0, -1), (good, good, "x", 8), (good, good, 1.0, 2**32), (good, good, 1j, 8)]
    for args in cases:
        errors = []
        for kernel in (on_gpu, on_cpu):
            with pytest.raises((TypeError, ValueError)) as info:
                _one_dispatch(kernel, *args, threadgroup_memory={0: 32})
            errors.append(str(info.value))
            assert kernel is on_cpu or not world.command_buffers, args
        assert errors[0] == errors[1], args


# --- the fakes themselves refuse what PyObjC would refuse -------------------------------

def test_strict_fakes_refuse_wrong_conventions(world):
    Metal = sys.modules["Metal"]
    device = Metal.MTLCopyAllDevices()[0]
    with pytest.raises(strict_metal.ConventionError, match="no selector 'newLibraryWithSource:options:'"):
        device.newLibraryWithSource_options_("src", None)  # the error out-parameter forgotten
    with pytest.raises(strict_metal.ConventionError, match="out-parameter takes None"):
        device.newLibraryWithSource_options_error_("src", None, object())
    with pytest.raises(strict_metal.ConventionError, match="a buffer of 3 bytes passed with length 4"):
        device.newBufferWithBytes_length_options_(b"abc", 4, 0)
    with pytest.raises(strict_metal.ConventionError, match="expected an MTLSize"):
        device.newCommandQueue().commandBuffer().computeCommandEncoder() \
            .dispatchThreads_threadsPerThreadgroup_((8, 1, 1), (8, 1, 1))
    with pytest.raises(AttributeError):
        Metal.MTLDataTypeBfloat  # a misspelt constant
    with pytest.raises(TypeError, match="not an Objective-C object"):
        sys.modules["objc"].pyobjc_id(sys.modules["Foundation"].NSString.stringWithString_("name"))


def test_named_constant_passes_a_real_nsstring(world, monkeypatch):
    # The old code passed NSString.stringWithString_(key) -- a str subclass -- to pyobjc_id.
    monkeypatch.setattr(world, "strings", {}, raising=False)
    metal_api.load_kernel(PLAIN, "k", function_constants={"flag": False})
    assert world.constants == [("setConstantValue:type:withName:", b"\x00", 53, "flag")]


def test_backend_calls_only_listed_selectors():
    """Every PyObjC-style call (``name_(...)``) in the backend is a selector the list knows."""
    import ast

    import metal_conventions as conv

    listed = {conv.python_name(s.name) for s in conv.SELECTORS} | set(conv.FUNCTIONS)
    metal_dir = paths.project_root() / "src" / "gemmglossary" / "metal"
    called = set()
    for path in sorted(metal_dir.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_"):
                base = node.func.value
                if isinstance(base, ast.Name) and base.id in ("np", "numpy", "ctypes"):
                    continue  # np.bool_(...) is numpy's
                called.add((path.name, node.func.attr))
    assert called, "found no PyObjC calls: the scan is broken"
    unknown = sorted((f, a) for f, a in called if a not in listed)
    assert unknown == [], f"calls missing from tests/runtime/metal_conventions.py: {unknown}"


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
