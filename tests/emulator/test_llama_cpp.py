"""llama.cpp's Metal kernel files, unmodified, on the emulator: each vendored file compiles
whole into one library (as llama.cpp's host compiles it with newLibraryWithSource), and one
of its kernels, bound and dispatched as llama.cpp's host code does
(ggml/src/ggml-metal/ggml-metal-ops.cpp at the pinned commit), gives numpy's answer.
A smoke test per file: the numpy-checked suite of llama.cpp's kernels is tests/llama/."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gemmglossary.emulator import PortabilityWarning, load_kernel, load_library
from gemmglossary.paths import vendor_dir

GGML = vendor_dir() / "llama.cpp" / "ggml" / "src"
KERNELS = GGML / "ggml-metal" / "kernels"
INCLUDE_DIRS = [GGML / "ggml-metal", GGML]  # as llama.cpp's build has them

# Function constant indices (FC_* in ggml-metal-impl.h) are given by name here.
I32, U64, F32, I16 = np.int32, np.uint64, np.float32, np.int16


def _args(fields) -> np.dtype:
    """A kernel-argument struct of ggml-metal-impl.h as numpy lays it out (C's rules, which
    are Metal's for these scalar members)."""
    return np.dtype(fields, align=True)


SOFT_MAX = _args([("ne00", I32), ("ne01", I32), ("ne02", I32), ("nb01", U64), ("nb02", U64), ("nb03", U64),
                  ("ne11", I32), ("ne12", I32), ("ne13", I32), ("nb11", U64), ("nb12", U64), ("nb13", U64),
                  ("nb1", U64), ("nb2", U64), ("nb3", U64), ("scale", F32), ("max_bias", F32), ("m0", F32),
                  ("m1", F32), ("n_head_log2", I32)])
NORM = _args([("ne00", I32), ("ne00_t", I32), ("nb1", U64), ("nb2", U64), ("nb3", U64), ("eps", F32),
              ("nef1", I32, 3), ("nef2", I32, 3), ("nef3", I32, 3), ("nbf1", U64, 3), ("nbf2", U64, 3),
              ("nbf3", U64, 3), ("scale", F32)])
BIN = _args([(n, I32) for n in ("ne00", "ne01", "ne02", "ne03")] + [(n, U64) for n in ("nb00", "nb01", "nb02", "nb03")]
            + [(n, I32) for n in ("ne10", "ne11", "ne12", "ne13")] + [(n, U64) for n in ("nb10", "nb11", "nb12", "nb13")]
            + [(n, I32) for n in ("ne0", "ne1", "ne2", "ne3")] + [(n, U64) for n in ("nb0", "nb1", "nb2", "nb3")]
            + [("offs", U64), ("o1", U64, 8)])
MUL_MV = _args([("ne00", I32), ("ne01", I32), ("ne02", I32), ("nb00", U64), ("nb01", U64), ("nb02", U64),
                ("nb03", U64), ("ne10", I32), ("ne11", I32), ("ne12", I32), ("nb10", U64), ("nb11", U64),
                ("nb12", U64), ("nb13", U64), ("ne0", I32), ("ne1", I32), ("nr0", I32), ("r2", I16), ("r3", I16)])
MUL_MM = _args([("ne00", I32), ("ne02", I32), ("nb01", U64), ("nb02", U64), ("nb03", U64), ("ne12", I32),
                ("nb10", U64), ("nb11", U64), ("nb12", U64), ("nb13", U64), ("ne0", I32), ("ne1", I32),
                ("r2", I16), ("r3", I16)])


def _struct(dtype: np.dtype, **values) -> np.ndarray:
    a = np.zeros((), dtype)
    for k, v in values.items():
        a[k] = v
    return a


def _bytes(a: np.ndarray) -> np.ndarray:
    """An array as the `device char *` buffer llama.cpp's kernels take: a view of its bytes
    (one memory with the array, so the kernel's writes land in it)."""
    return a.reshape(-1).view(np.int8)


# The function constants each file's kernel below is run with, as the host would give them
# for that call. A file is compiled once per set of values (the emulator makes function
# constants compile-time values), so the whole-file test compiles it with these too: the
# kernels then come from the same library. (A whole llama.cpp file costs 2 to 16 CPU-s.)
CONSTANTS = {
    "softmax": {},
    "norm": dict(FC_norm_use_scale=False),
    "binbcast": dict(FC_bin_op=0, FC_bin_f=1, FC_bin_rb=False, FC_bin_cb=False),
    "mul_mv": dict(FC_mul_mv_nsg=1, FC_mul_mv_nxpsg=8, FC_mul_mv_ne12=1, FC_mul_mv_r2=1, FC_mul_mv_r3=1,
                   FC_mul_mv_split=False),
    "mul_mm": dict(FC_mul_mm_bc_inp=False, FC_mul_mm_bc_out=False, FC_mul_mm_ne12=1, FC_mul_mm_ne13=1,
                   FC_mul_mm_r2=1, FC_mul_mm_r3=1, FC_mul_mm_id_amax=False),
}


_libraries: dict = {}


def host_library(name: str):
    """A file's library with the function constants of CONSTANTS (compiled once a process)."""
    if name not in _libraries:
        _libraries[name] = load_library(KERNELS / f"{name}.metal", include_dirs=INCLUDE_DIRS,
                                        function_constants=CONSTANTS[name] or None)
    return _libraries[name]


# each file, how many kernels it has without GGML_METAL_HAS_BF16, and one of them
FILES = [("softmax", 4, "kernel_soft_max_f32_4"), ("norm", 15, "kernel_rms_norm_mul_add_f32"),
         ("binbcast", 9, "kernel_repeat_f16"), ("mul_mv", 123, "kernel_mul_mv_id_q4_0_f32"),
         ("mul_mm", 111, "kernel_mul_mm_id_q6_K_f16")]


@pytest.mark.parametrize("name,count,one", FILES)
def test_each_vendored_file_compiles_into_one_library(name, count, one):
    lib = host_library(name)
    assert len(lib.names) == count and one in lib.names, lib.names


def _soft_max_args(x, mask=None):
    ne01, ne00 = x.shape
    m = mask if mask is not None else np.zeros((0, 0), np.float32)
    return _struct(SOFT_MAX, ne00=ne00, ne01=ne01, ne02=1, nb01=x.strides[0], nb02=x.nbytes, nb03=x.nbytes,
                   ne11=m.shape[0], ne12=1 if mask is not None else 0, ne13=1 if mask is not None else 0,
                   nb11=m.strides[0] if mask is not None else 0, nb12=m.nbytes, nb13=m.nbytes,
                   nb1=x.strides[0], nb2=x.nbytes, nb3=x.nbytes, scale=0.5, max_bias=0.0, m0=1.0, m1=1.0,
                   n_head_log2=1)


def _soft_max(x, scale, mask=None):
    z = x.astype(np.float64) * scale + (0 if mask is None else mask)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_soft_max_without_a_mask_binds_its_source_again_as_the_mask():
    """llama.cpp's host binds src0's buffer in src1's and src2's slots when there is no mask
    (and no sinks): the kernel tells by comparing the pointers (src1 != src0), so the two
    bindings must be one memory (device_memory.py), and ne13 is 0 (`i03 % args.ne13`)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 50)).astype(np.float32)
    dst = np.zeros_like(x)
    k = host_library("softmax").kernel("kernel_soft_max_f32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PortabilityWarning)  # the remainder by ne13 == 0, if it is executed
        k(_soft_max_args(x), _bytes(x), _bytes(x), _bytes(x), _bytes(dst), threadgroups=(3, 1, 1), threads_per_threadgroup=(64, 1, 1),
          threadgroup_memory={0: 32 * 4})
    np.testing.assert_allclose(dst, _soft_max(x, 0.5), rtol=1e-5, atol=1e-6)


def test_soft_max_with_a_mask():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 40)).astype(np.float32)
    mask = np.where(rng.random((4, 40)) < 0.2, -np.inf, 0).astype(np.float32)
    mask[:, 0] = 0
    dst = np.zeros_like(x)
    host_library("softmax").kernel("kernel_soft_max_f32")(
        _soft_max_args(x, mask), _bytes(x), _bytes(mask), _bytes(x), _bytes(dst), threadgroups=(4, 1, 1), threads_per_threadgroup=(32, 1, 1),
        threadgroup_memory={0: 32 * 4})
    np.testing.assert_allclose(dst, _soft_max(x, 0.5, mask), rtol=1e-5, atol=1e-6)


def test_norm():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 96)).astype(np.float32)
    dst = np.zeros_like(x)
    # the host's arguments for a norm fused with nothing: nef*[1], nef*[2] are 0, and src0
    # is bound in the slots of the fused operands
    args = _struct(NORM, ne00=96, ne00_t=96, nb1=x.strides[0], nb2=x.nbytes, nb3=x.nbytes, eps=1e-5,
                   nef1=[3, 0, 0], nef2=[1, 0, 0], nef3=[1, 0, 0], nbf1=[x.strides[0], 0, 0],
                   nbf2=[x.nbytes, 0, 0], nbf3=[x.nbytes, 0, 0], scale=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PortabilityWarning)  # `i01 % args.nef1[1]` with nef1[1] == 0
        host_library("norm").kernel("kernel_norm_f32")(
            args, _bytes(x), _bytes(x), _bytes(x), _bytes(dst), threadgroups=(3, 1, 1), threads_per_threadgroup=(64, 1, 1),
            threadgroup_memory={0: 32 * 4})
    x64 = x.astype(np.float64)
    c = x64 - x64.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(dst, c / np.sqrt((c * c).mean(axis=1, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-5)


def test_add_with_a_broadcast_row():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 5, 24)).astype(np.float32)  # ne02, ne01, ne00
    b = rng.standard_normal((1, 1, 24)).astype(np.float32)  # broadcast over rows and planes
    dst = np.zeros_like(a)
    s = a.strides[::-1]
    args = _struct(BIN, ne00=24, ne01=5, ne02=2, ne03=1, nb00=4, nb01=s[1], nb02=s[2], nb03=a.nbytes,
                   ne10=24, ne11=1, ne12=1, ne13=1, nb10=4, nb11=b.nbytes, nb12=b.nbytes, nb13=b.nbytes,
                   ne0=24, ne1=5, ne2=2, ne3=1, nb0=4, nb1=s[1], nb2=s[2], nb3=a.nbytes, offs=0, o1=[0] * 8)
    lib = host_library("binbcast")
    lib.kernel("kernel_bin_fuse_f32_f32_f32")(args, _bytes(a), _bytes(b), _bytes(dst), threadgroups=(5, 2, 1),
                                               threads_per_threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(dst, a + b)


def test_mul_mv_f32():
    """ne00 = 70 (not a multiple of 4): the host's choice is kernel_mul_mv_f32_f32 with one
    simdgroup and two rows of src0 per threadgroup (ggml-metal-device.cpp)."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((6, 70)).astype(np.float32)  # src0: ne01 x ne00
    y = rng.standard_normal((3, 70)).astype(np.float32)  # src1: ne11 x ne10
    dst = np.zeros((3, 6), np.float32)
    args = _struct(MUL_MV, ne00=70, ne01=6, ne02=1, nb00=4, nb01=w.strides[0], nb02=w.nbytes, nb03=w.nbytes,
                   ne10=70, ne11=3, ne12=1, nb10=4, nb11=y.strides[0], nb12=y.nbytes, nb13=y.nbytes,
                   ne0=6, ne1=3, nr0=2, r2=1, r3=1)
    lib = host_library("mul_mv")
    lib.kernel("kernel_mul_mv_f32_f32")(args, _bytes(w), _bytes(y), _bytes(dst), threadgroups=(3, 3, 1), threads_per_threadgroup=(32, 1, 1),
                                         threadgroup_memory={0: 32 * 4 * 2})
    np.testing.assert_allclose(dst, y.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_mul_mm_f32():
    """A 64 x 32 tile, K = 64: no edge on input or output (bc_inp, bc_out false); four
    simdgroups, 6 KiB of threadgroup memory (ggml-metal-device.cpp). The kernel stages both
    operands in threadgroup memory as half (its instantiation's S0 and S1), and accumulates
    in float: numpy gets the operands rounded to half."""
    rng = np.random.default_rng(6)
    w = rng.standard_normal((64, 64)).astype(np.float32)  # src0: ne01 x ne00
    y = rng.standard_normal((32, 64)).astype(np.float32)  # src1: ne11 x ne10
    dst = np.zeros((32, 64), np.float32)
    args = _struct(MUL_MM, ne00=64, ne02=1, nb01=w.strides[0], nb02=w.nbytes, nb03=w.nbytes, ne12=1,
                   nb10=4, nb11=y.strides[0], nb12=y.nbytes, nb13=y.nbytes, ne0=64, ne1=32, r2=1, r3=1)
    lib = host_library("mul_mm")
    lib.kernel("kernel_mul_mm_f32_f32")(args, _bytes(w), _bytes(y), _bytes(dst), threadgroups=(1, 1, 1), threads_per_threadgroup=(32, 4, 1),
                                         threadgroup_memory={0: 4096 + 2048})
    w16, y16 = (a.astype(np.float16).astype(np.float64) for a in (w, y))
    np.testing.assert_allclose(dst, y16 @ w16.T, rtol=1e-4, atol=1e-4)


def test_a_kernel_is_taken_from_the_cached_library():
    """load_kernel of a kernel of a file with many instantiations (compiled alone otherwise)
    compiles nothing once the file's library is in the cache with the same function constants."""
    from gemmglossary.emulator import build_stats

    host_library("norm")
    before = build_stats["compiles"]
    k = load_kernel(KERNELS / "norm.metal", "kernel_rms_norm_f32_4", include_dirs=INCLUDE_DIRS,
                    function_constants=CONSTANTS["norm"])
    assert build_stats["compiles"] == before and k.cache_hit


def test_bench_prints_each_files_compile_time():
    """`gemmglossary bench emulator`'s compile table: a real compile (an empty cache), timed."""
    import io

    from gemmglossary.bench import bench_library_compile

    out = io.StringIO()
    (row,) = bench_library_compile(["softmax"], out=out)
    name, kernels, wall, cpu, ok = row
    assert (name, kernels) == ("softmax", 4) and wall > 0 and cpu > 0.5, row
    assert "softmax.metal" in out.getvalue() and "compile" in out.getvalue()
