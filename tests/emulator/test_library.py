"""Every function of the shim's Metal library against numpy (issue #10 §4: no placeholders).

The function names come from the shim's own lists (the X-macro lists its headers declare the
library with), so a function added to the shim without a reference here fails
test_every_library_function_has_a_reference; a function that returns a placeholder (its
argument, 0, 1) fails its comparison. One kernel, generated below, computes them all.

Tolerances: the shim computes float functions correctly rounded or within an ulp of it
(libm, or double precision where float libm is not accurate enough, as for sinpi); the
references are float64, so float results must agree within 4 ulp and half results within
one half ulp after rounding.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import CompileError, load_kernel

SHIM = Path(__file__).resolve().parents[2] / "src" / "gemmglossary" / "emulator" / "shim"
N = 64


def shim_list(macro: str) -> list[str]:
    """The names in one of the shim's X-macro lists (`#define MACRO(X) X(name, ...) ...`)."""
    text = "".join(p.read_text() for p in sorted(SHIM.glob("mslemu_*.h")))
    m = re.search(rf"#define {macro}\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    assert m, f"{macro} is not defined in the shim"
    return re.findall(r"\bX\((\w+)", m.group(1))


def _within_ulp(got, expect, ulp, what):
    try:
        np.testing.assert_array_max_ulp(got, expect, maxulp=ulp)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


def _rng():
    return np.random.default_rng(10)


def _u(lo, hi):
    return lambda r: r.uniform(lo, hi, N)


WIDE = _u(-6, 6)
POS = _u(0.05, 8)
UNIT = _u(-0.97, 0.97)


def _round_half_away(x):
    return np.trunc(x + np.copysign(0.5, x))


def _fract(x):
    return np.minimum(x - np.floor(x), float.fromhex("0x1.fffffep-1"))


def _sign(x):
    return np.where(x > 0, 1.0, np.where(x < 0, -1.0, x))


def _median(a, b, c):
    return np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))


# float functions: name -> (arity, numpy reference of float64 arguments, argument generators)
FLOAT = {
    "acos": (1, np.arccos, [UNIT]), "acosh": (1, np.arccosh, [_u(1, 9)]), "asin": (1, np.arcsin, [UNIT]),
    "asinh": (1, np.arcsinh, [WIDE]), "atan": (1, np.arctan, [WIDE]), "atanh": (1, np.arctanh, [UNIT]),
    "ceil": (1, np.ceil, [WIDE]), "cos": (1, np.cos, [WIDE]), "cosh": (1, np.cosh, [WIDE]),
    "cospi": (1, lambda x: np.cos(np.pi * x), [WIDE]), "exp": (1, np.exp, [WIDE]), "exp2": (1, np.exp2, [WIDE]),
    "exp10": (1, lambda x: 10.0 ** x, [_u(-3, 3)]), "fabs": (1, np.abs, [WIDE]), "floor": (1, np.floor, [WIDE]),
    "fract": (1, _fract, [WIDE]), "log": (1, np.log, [POS]), "log2": (1, np.log2, [POS]),
    "log10": (1, np.log10, [POS]), "rint": (1, np.rint, [WIDE]), "round": (1, _round_half_away, [WIDE]),
    "rsqrt": (1, lambda x: 1 / np.sqrt(x), [POS]), "sin": (1, np.sin, [WIDE]), "sinh": (1, np.sinh, [WIDE]),
    "sinpi": (1, lambda x: np.sin(np.pi * x), [WIDE]), "sqrt": (1, np.sqrt, [POS]), "tan": (1, np.tan, [UNIT]),
    "tanh": (1, np.tanh, [WIDE]), "tanpi": (1, lambda x: np.tan(np.pi * x), [_u(-0.45, 0.45)]),
    "trunc": (1, np.trunc, [WIDE]),
    "atan2": (2, np.arctan2, [WIDE, WIDE]), "copysign": (2, np.copysign, [WIDE, WIDE]),
    "divide": (2, np.divide, [WIDE, POS]), "fdim": (2, lambda x, y: np.maximum(x - y, 0), [WIDE, WIDE]),
    "fmax": (2, np.fmax, [WIDE, WIDE]), "fmin": (2, np.fmin, [WIDE, WIDE]), "fmod": (2, np.fmod, [WIDE, POS]),
    "nextafter": (2, None, [WIDE, WIDE]), "pow": (2, np.power, [POS, _u(-3, 3)]),
    "powr": (2, np.power, [POS, _u(-3, 3)]),
    "fma": (3, lambda x, y, z: x * y + z, [WIDE, WIDE, WIDE]),
    "fmax3": (3, lambda x, y, z: np.fmax(np.fmax(x, y), z), [WIDE, WIDE, WIDE]),
    "fmin3": (3, lambda x, y, z: np.fmin(np.fmin(x, y), z), [WIDE, WIDE, WIDE]),
    "fmedian3": (3, _median, [WIDE, WIDE, WIDE]),
    # <metal_common> (and abs/min/max/clamp, which also take integers: see INTEGER)
    "abs": (1, np.abs, [WIDE]), "max": (2, np.fmax, [WIDE, WIDE]), "min": (2, np.fmin, [WIDE, WIDE]),
    "clamp": (3, lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), [WIDE, _u(-3, -1), _u(1, 3)]),
    "max3": (3, lambda x, y, z: np.maximum(np.maximum(x, y), z), [WIDE, WIDE, WIDE]),
    "min3": (3, lambda x, y, z: np.minimum(np.minimum(x, y), z), [WIDE, WIDE, WIDE]),
    "median3": (3, _median, [WIDE, WIDE, WIDE]), "saturate": (1, lambda x: np.clip(x, 0, 1), [_u(-1, 2)]),
    "sign": (1, _sign, [WIDE]), "mix": (3, lambda x, y, a: x + (y - x) * a, [WIDE, WIDE, _u(0, 1)]),
    "step": (2, lambda e, x: np.where(x < e, 0.0, 1.0), [WIDE, WIDE]),
    "smoothstep": (3, lambda e0, e1, x: (lambda t: t * t * (3 - 2 * t))(np.clip((x - e0) / (e1 - e0), 0, 1)),
                   [_u(-3, -1), _u(1, 3), WIDE]),
}


FORMULA = {"mix", "smoothstep"}
# results that are exact in the argument type
EXACT = {"ceil", "floor", "rint", "round", "trunc", "fabs", "abs", "copysign", "fmax", "fmin", "max", "min", "fmax3",
         "fmin3", "fmedian3", "max3", "min3", "median3", "clamp", "saturate", "sign", "step", "nextafter", "fract", "fdim"}


def _bits(dtype):
    return np.dtype(dtype).itemsize * 8


def _wrap(values, dtype):
    """Python ints reduced to the width of dtype (two's complement), as numpy values of dtype."""
    b = _bits(dtype)
    signed = np.dtype(dtype).kind == "i"
    out = []
    for v in values:
        v = int(v) % (1 << b)
        out.append(v - (1 << b) if signed and v >= 1 << (b - 1) else v)
    return np.array(out, dtype=dtype)


def _sat(v, dtype):
    info = np.iinfo(dtype)
    return np.clip(v, info.min, info.max).astype(dtype)


def _clz(x, dt):
    b = _bits(dt)
    u = int(x) & ((1 << b) - 1)
    return b - u.bit_length()


def _ctz(x, dt):
    b = _bits(dt)
    u = int(x) & ((1 << b) - 1)
    return b if u == 0 else (u & -u).bit_length() - 1


def _rev(x, dt):
    b = _bits(dt)
    u = int(x) & ((1 << b) - 1)
    return int(format(u, f"0{b}b")[::-1], 2)


def _rot(x, s, dt):
    b = _bits(dt)
    u, s = int(x) & ((1 << b) - 1), int(s) % b
    return ((u << s) | (u >> (b - s))) & ((1 << b) - 1)


def _low24(x, dt):
    v = int(x) & 0xffffff
    return v - (1 << 24) if np.dtype(dt).kind == "i" and v & 0x800000 else v


def _extract(x, off, bits, dt):
    u = (int(x) & ((1 << _bits(dt)) - 1)) >> off
    u &= (1 << bits) - 1
    if np.dtype(dt).kind == "i" and bits and u >> (bits - 1):
        u -= 1 << bits
    return u


def _insert(base, ins, off, bits, dt):
    mask = ((1 << bits) - 1) << off
    b = int(base) & ((1 << _bits(dt)) - 1)
    return (b & ~mask) | ((int(ins) << off) & mask)


def _elementwise(f):
    return lambda dt, *a: np.array([f(*(int(v) for v in vs), dt) for vs in zip(*a)], dtype=object)


# integer functions: name -> (arity, reference(dtype, *int arrays) -> Python ints, wrapped to dtype)
INTEGER = {
    "clz": (1, _elementwise(_clz)), "ctz": (1, _elementwise(_ctz)),
    "popcount": (1, _elementwise(lambda x, dt: bin(x & ((1 << _bits(dt)) - 1)).count("1"))),
    "reverse_bits": (1, _elementwise(_rev)),
    "absdiff": (2, _elementwise(lambda x, y, dt: abs(x - y))),
    "addsat": (2, _elementwise(lambda x, y, dt: int(np.clip(x + y, np.iinfo(dt).min, np.iinfo(dt).max)))),
    "subsat": (2, _elementwise(lambda x, y, dt: int(np.clip(x - y, np.iinfo(dt).min, np.iinfo(dt).max)))),
    "hadd": (2, _elementwise(lambda x, y, dt: (x + y) >> 1)), "rhadd": (2, _elementwise(lambda x, y, dt: (x + y + 1) >> 1)),
    "mulhi": (2, _elementwise(lambda x, y, dt: (x * y) >> _bits(dt))),
    "mul24": (2, _elementwise(lambda x, y, dt: _low24(x, dt) * _low24(y, dt))),
    "rotate": (2, _elementwise(_rot)),
    "madhi": (3, _elementwise(lambda x, y, z, dt: ((x * y) >> _bits(dt)) + z)),
    "mad24": (3, _elementwise(lambda x, y, z, dt: _low24(x, dt) * _low24(y, dt) + z)),
    "madsat": (3, _elementwise(lambda x, y, z, dt: int(np.clip(x * y + z, np.iinfo(dt).min, np.iinfo(dt).max)))),
    "extract_bits": (1, _elementwise(lambda x, dt: _extract(x, 3, 5, dt))),
    "insert_bits": (2, _elementwise(lambda b, i, dt: _insert(b, i, 2, 6, dt))),
    "abs": (1, _elementwise(lambda x, dt: abs(x))), "max": (2, _elementwise(lambda x, y, dt: max(x, y))),
    "min": (2, _elementwise(lambda x, y, dt: min(x, y))),
    "clamp": (3, _elementwise(lambda x, lo, hi, dt: min(max(x, min(lo, hi)), max(lo, hi)))),
    "max3": (3, _elementwise(lambda x, y, z, dt: max(x, y, z))), "min3": (3, _elementwise(lambda x, y, z, dt: min(x, y, z))),
    "median3": (3, _elementwise(lambda x, y, z, dt: sorted((x, y, z))[1])),
}
INT_CALL = {"extract_bits": "extract_bits({0}, 3u, 5u)", "insert_bits": "insert_bits({0}, {1}, 2u, 6u)",
            "clamp": "clamp({0}, min({1}, {2}), max({1}, {2}))"}
INT_TYPES = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16, "int": np.int32,
             "uint": np.uint32, "long": np.int64, "ulong": np.uint64}
OTHER_MATH = {"ldexp", "frexp", "ilogb", "modf", "sincos"}  # tested by test_math_with_integer_or_output_arguments


FLOATS_PER_KERNEL = 8


def _float_source(names):
    """Kernels ``floats_0``, ``floats_1``... of FLOATS_PER_KERNEL functions each, writing their
    own rows of the same buffers (one kernel of all 56 took g++ -O2 1.7 times as long as eight of them, 2.4 s against 1.4)."""
    kernels = []
    for first in range(0, len(names), FLOATS_PER_KERNEL):
        lines = []
        for k, name in enumerate(names[first:first + FLOATS_PER_KERNEL], start=first):
            arity = FLOAT[name][0]
            args = ", ".join(f"in[{(3 * k + a) * N} + i]" for a in range(arity))
            hargs = ", ".join(f"half(in[{(3 * k + a) * N} + i])" for a in range(arity))
            lines.append(f"  out[{k * N} + i] = {name}({args});")
            lines.append(f"  hout[{k * N} + i] = float({name}({hargs}));")
        kernels.append(f"kernel void floats_{first // FLOATS_PER_KERNEL}(device const float* in [[buffer(0)]], "
                       "device float* out [[buffer(1)]],\n"
                       "    device float* hout [[buffer(2)]], uint i [[thread_position_in_grid]]) {\n"
                       + "\n".join(lines) + "\n}")
    return "\n".join(kernels)


def _int_source(names):
    """One kernel per integer type, ``integers_<type>``, each writing its own rows of the
    same buffers (one kernel of all eight types took g++ -O2 2.6 times as long)."""
    kernels = []
    k = 0
    for tname in INT_TYPES:
        lines = []
        for name in names:
            arity = INTEGER[name][0]
            args = [f"{tname}(iin[{(3 * k + a) * N} + i])" for a in range(arity)]
            call = INT_CALL.get(name, name + "({})").format(*args) if name in INT_CALL else f"{name}({', '.join(args)})"
            lines.append(f"  iout[{k * N} + i] = long({call});")
            k += 1
        kernels.append(f"kernel void integers_{tname}(device const long* iin [[buffer(0)]], device long* iout [[buffer(1)]],\n"
                       f"                     uint i [[thread_position_in_grid]]) {{\n" + "\n".join(lines) + "\n}")
    return "\n".join(kernels)


FLOAT_NAMES = sorted(FLOAT)
INT_NAMES = sorted(INTEGER)

SOURCE = f"""#include <metal_stdlib>
using namespace metal;
{_float_source(FLOAT_NAMES)}
{_int_source(INT_NAMES)}
kernel void vectors(device const float4* v [[buffer(0)]], device float4* out [[buffer(1)]],
                    device int4* iout [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
  float4 a = v[i], b = v[i + 8];
  out[i * 8 + 0] = exp(a);
  out[i * 8 + 1] = clamp(a, -1.0f, 1.0f);
  out[i * 8 + 2] = mix(a, b, 0.25f);
  out[i * 8 + 3] = fma(a, b, a);
  out[i * 8 + 4] = float4(dot(a, b), length(a), distance(a, b), length_squared(b));
  out[i * 8 + 5] = normalize(a);
  out[i * 8 + 6] = float4(cross(a.xyz, b.xyz), 0.0f);
  out[i * 8 + 7] = select(a, b, a < b);
  int4 ia = int4(a * 100.0f), ib = int4(b * 100.0f);
  iout[i * 4 + 0] = clz(ia);
  iout[i * 4 + 1] = max(ia, ib);
  iout[i * 4 + 2] = int4(popcount(uint4(ia)));
  iout[i * 4 + 3] = int4(isnan(a / (a - a)));
}}
"""


@pytest.fixture(scope="module")
def lib():
    return lambda name: load_kernel(SOURCE, name)


def test_every_library_function_has_a_reference():
    float_lists = (shim_list("MSLEMU_MATH1_LIST") + shim_list("MSLEMU_MATH2_LIST") + shim_list("MSLEMU_MATH3_LIST"))
    common = shim_list("MSLEMU_COMMON_LIST")
    assert set(float_lists + common) <= set(FLOAT), set(float_lists + common) - set(FLOAT)
    assert set(shim_list("MSLEMU_MATH_OTHER_LIST")) == OTHER_MATH
    assert set(shim_list("MSLEMU_INTEGER_LIST")) <= set(INTEGER), set(shim_list("MSLEMU_INTEGER_LIST")) - set(INTEGER)
    assert set(shim_list("MSLEMU_RELATIONAL_LIST")) <= RELATIONAL_TESTED
    assert set(shim_list("MSLEMU_GEOMETRIC_LIST")) <= GEOMETRIC_TESTED
    assert set(shim_list("MSLEMU_PACK_LIST")) == set(PACK)
    assert set(shim_list("MSLEMU_ATOMIC_LIST")) <= ATOMIC_TESTED
    assert set(shim_list("MSLEMU_SIMD_NAMES")) <= set(SIMD), set(shim_list("MSLEMU_SIMD_NAMES")) - set(SIMD)


def _float_inputs():
    r = _rng()
    x = np.zeros((len(FLOAT_NAMES), 3, N), np.float32)
    for k, name in enumerate(FLOAT_NAMES):
        for a, gen in enumerate(FLOAT[name][2]):
            x[k, a] = gen(r)
    return x


def test_float_functions_match_numpy(lib):
    x = _float_inputs()
    out = np.zeros((len(FLOAT_NAMES), N), np.float32)
    hout = np.zeros_like(out)
    for first in range(0, len(FLOAT_NAMES), FLOATS_PER_KERNEL):
        lib(f"floats_{first // FLOATS_PER_KERNEL}")(x, out, hout, threads=N, threads_per_threadgroup=N)
    for k, name in enumerate(FLOAT_NAMES):
        arity, ref, _ = FLOAT[name]
        args = [x[k, a].astype(np.float64) for a in range(arity)]
        if name == "nextafter":
            expect = np.nextafter(x[k, 0], x[k, 1])
        else:
            expect = ref(*args).astype(np.float32)
        if name in FORMULA:  # defined by a formula in float arithmetic: its roundings, not the exact value
            np.testing.assert_allclose(out[k], expect, rtol=1e-6, atol=1e-6, err_msg=name)
        else:
            _within_ulp(out[k], expect, 4, name)
        # half: the arguments rounded to half, the result rounded once to half
        hargs = [a.astype(np.float16).astype(np.float64) for a in args]
        hexpect = (np.nextafter(x[k, 0].astype(np.float16), x[k, 1].astype(np.float16)).astype(np.float64)
                   if name == "nextafter" else ref(*hargs))
        hwant = hexpect.astype(np.float16)
        if name in FORMULA:
            np.testing.assert_allclose(hout[k], hwant.astype(np.float32), rtol=2e-3, atol=2e-3, err_msg=f"{name}(half)")
        else:  # computed in float, rounded once: the correctly rounded half, or its neighbour
            _within_ulp(hout[k].astype(np.float16), hwant, 0 if name in EXACT else 1, f"{name}(half)")


def test_integer_functions_at_every_width(lib):
    r = np.random.default_rng(11)
    rows = []
    for tname, dt in INT_TYPES.items():
        info = np.iinfo(dt)
        lo, hi = (max(info.min, -2**40), min(info.max, 2**40)) if dt in (np.int64, np.uint64) else (info.min, info.max)
        for name in INT_NAMES:
            vals = r.integers(lo, hi, (3, N), endpoint=True, dtype=np.int64)
            vals[:, :4] = [[0, 1, lo, hi]] * 3  # the edges
            rows.append((tname, dt, name, vals))
    iin = np.stack([v for *_, v in rows]).astype(np.int64)
    iout = np.zeros((len(rows), N), np.int64)
    for tname in INT_TYPES:
        lib(f"integers_{tname}")(iin, iout, threads=N, threads_per_threadgroup=N)
    for k, (tname, dt, name, vals) in enumerate(rows):
        arity, ref = INTEGER[name]
        args = [vals[a].astype(dt) for a in range(arity)]
        expect = np.array([int(v) for v in ref(dt, *args)], dtype=object)
        # the kernel converts the result to long: wrap the reference to the type's width first
        want = _wrap([e for e in expect], dt).astype(np.int64)
        assert iout[k].tolist() == want.tolist(), f"{name}({tname})"


def test_vector_forms(lib):
    r = np.random.default_rng(12)
    v = r.uniform(-2, 2, (16, 4)).astype(np.float32)
    v[0, 0] = 0.0
    out = np.zeros((8, 8, 4), np.float32)
    iout = np.zeros((8, 4, 4), np.int32)
    lib("vectors")(v, out, iout, threads=8, threads_per_threadgroup=8)
    a, b = v[:8].astype(np.float64), v[8:].astype(np.float64)
    np.testing.assert_allclose(out[:, 0], np.exp(a), rtol=1e-6)
    np.testing.assert_array_equal(out[:, 1], np.clip(v[:8], -1, 1))
    np.testing.assert_allclose(out[:, 2], a + (b - a) * 0.25, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out[:, 3], a * b + a, rtol=1e-6, atol=1e-6)
    geo = np.stack([(a * b).sum(1), np.linalg.norm(a, axis=1), np.linalg.norm(a - b, axis=1), (b * b).sum(1)], 1)
    np.testing.assert_allclose(out[:, 4], geo, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[:, 5], a / np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[:, 6, :3], np.cross(a[:, :3], b[:, :3]), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[:, 7], np.where(v[:8] < v[8:], v[8:], v[:8]))
    ia = (v[:8] * 100).astype(np.int32)
    ib = (v[8:] * 100).astype(np.int32)
    assert iout[:, 0].tolist() == [[32 - (int(x) & 0xffffffff).bit_length() for x in row] for row in ia]
    np.testing.assert_array_equal(iout[:, 1], np.maximum(ia, ib))
    assert iout[:, 2].tolist() == [[bin(int(x) & 0xffffffff).count("1") for x in row] for row in ia]
    with np.errstate(all="ignore"):
        nan = np.isnan(v[:8] / (v[:8] - v[:8]))
    np.testing.assert_array_equal(iout[:, 3], nan.astype(np.int32))


RELATIONAL_TESTED = {"all", "any", "isnan", "isinf", "isfinite", "isnormal", "signbit", "isordered", "isunordered",
                     "select"}
GEOMETRIC_TESTED = {"dot", "length", "length_squared", "distance", "distance_squared", "normalize", "cross",
                    "faceforward", "reflect", "refract"}

RELATIONAL_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const float* x [[buffer(0)]], device int* o [[buffer(1)]],
              device float4* g [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float v = x[i], w = x[i + 8];
  o[i * 10 + 0] = isnan(v); o[i * 10 + 1] = isinf(v); o[i * 10 + 2] = isfinite(v); o[i * 10 + 3] = isnormal(v);
  o[i * 10 + 4] = signbit(v); o[i * 10 + 5] = isordered(v, w); o[i * 10 + 6] = isunordered(v, w);
  bool4 b = bool4(v > 0, w > 0, true, v == v);
  o[i * 10 + 7] = all(b); o[i * 10 + 8] = any(b);
  o[i * 10 + 9] = int(select(1.0f, 2.0f, v < w));
  float3 n = normalize(float3(0.0f, 1.0f, 1.0f)), d = float3(v, -1.0f, w == w ? 0.5f : 0.0f);
  g[i * 4 + 0] = float4(faceforward(n, d, n), distance_squared(d, n));
  g[i * 4 + 1] = float4(reflect(d, n), 0.0f);
  g[i * 4 + 2] = float4(refract(normalize(d), n, 0.5f), 0.0f);
  g[i * 4 + 3] = float4(refract(normalize(d), n, 4.0f), 0.0f);
}
"""


def test_relational_and_geometric_functions():
    x = np.array([0.5, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3.0, 2.0] + [1.0, np.nan, 0.0, 5.0, 2.0, 2.0, -1, 3],
                 np.float32)
    o = np.zeros((8, 10), np.int32)
    g = np.zeros((8, 4, 4), np.float32)
    load_kernel(RELATIONAL_SRC, "k")(x, o, g, threads=8, threads_per_threadgroup=8)
    v, w = x[:8], x[8:]
    with np.errstate(invalid="ignore"):
        expect = np.stack([np.isnan(v), np.isinf(v), np.isfinite(v),
                           np.isfinite(v) & (np.abs(v) >= np.finfo(np.float32).tiny), np.signbit(v),
                           ~np.isnan(v) & ~np.isnan(w), np.isnan(v) | np.isnan(w),
                           (v > 0) & (w > 0) & (v == v), (v > 0) | (w > 0) | True,
                           np.where(v < w, 2, 1)], 1).astype(np.int32)
    np.testing.assert_array_equal(o, expect)
    n = np.array([0, 1, 1]) / np.sqrt(2)
    for i in range(8):
        if np.isnan(v[i]) or np.isinf(v[i]) or np.isnan(w[i]):
            continue
        d = np.array([v[i], -1.0, 0.5])
        np.testing.assert_allclose(g[i, 0, :3], n if np.dot(n, d) < 0 else -n, rtol=1e-6)
        np.testing.assert_allclose(g[i, 0, 3], ((d - n) ** 2).sum(), rtol=1e-5)
        np.testing.assert_allclose(g[i, 1, :3], d - 2 * np.dot(n, d) * n, rtol=1e-5, atol=1e-6)
        dn = d / np.linalg.norm(d)
        for row, eta in ((2, 0.5), (3, 4.0)):
            k = 1 - eta * eta * (1 - np.dot(n, dn) ** 2)
            want = np.zeros(3) if k < 0 else eta * dn - (eta * np.dot(n, dn) + np.sqrt(k)) * n
            np.testing.assert_allclose(g[i, row, :3], want, rtol=1e-5, atol=1e-6)


MATH_OTHER_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const float* x [[buffer(0)]], device float* o [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float v = x[i];
  int e;
  float m = frexp(v, e);
  float ip;
  float fr = modf(v, ip);
  float c;
  float s = sincos(v, c);
  o[i * 8 + 0] = m; o[i * 8 + 1] = float(e); o[i * 8 + 2] = ldexp(v, 3); o[i * 8 + 3] = float(ilogb(v));
  o[i * 8 + 4] = fr; o[i * 8 + 5] = ip; o[i * 8 + 6] = s; o[i * 8 + 7] = c;
}
"""


def test_math_with_integer_or_output_arguments():
    x = np.array([0.75, -3.5, 100.25, 1e-3, -0.0, 7.0, 2.5, -1e5], np.float32)
    o = np.zeros((8, 8), np.float32)
    load_kernel(MATH_OTHER_SRC, "k")(x, o, threads=8, threads_per_threadgroup=8)
    m, e = np.frexp(x)
    np.testing.assert_array_equal(o[:, 0], m)
    np.testing.assert_array_equal(o[:, 1], e)
    np.testing.assert_array_equal(o[:, 2], x * 8)
    nz = x != 0
    np.testing.assert_array_equal(o[nz, 3], np.floor(np.log2(np.abs(x[nz]))))
    fr, ip = np.modf(x)
    np.testing.assert_array_equal(o[:, 4], fr)
    np.testing.assert_array_equal(o[:, 5], ip)
    np.testing.assert_array_max_ulp(o[:, 6], np.sin(x.astype(np.float64)).astype(np.float32), maxulp=4)
    np.testing.assert_array_max_ulp(o[:, 7], np.cos(x.astype(np.float64)).astype(np.float32), maxulp=4)


def _unorm(x, bits):
    return np.rint(np.clip(np.nan_to_num(x), 0, 1) * (2 ** bits - 1)).astype(np.int64)


def _snorm(x, bits):
    return np.rint(np.clip(np.nan_to_num(x), -1, 1) * (2 ** (bits - 1) - 1)).astype(np.int64) & (2 ** bits - 1)


def _pack(fields):
    out, shift = 0, 0
    for v, bits in fields:
        out |= int(v) << shift
        shift += bits
    return out


PACK = {
    "pack_float_to_snorm4x8": lambda v: _pack([(c, 8) for c in _snorm(v, 8)]),
    "pack_float_to_unorm4x8": lambda v: _pack([(c, 8) for c in _unorm(v, 8)]),
    "pack_half_to_snorm4x8": lambda v: _pack([(c, 8) for c in _snorm(v.astype(np.float16).astype(np.float64), 8)]),
    "pack_half_to_unorm4x8": lambda v: _pack([(c, 8) for c in _unorm(v.astype(np.float16).astype(np.float64), 8)]),
    "pack_float_to_snorm2x16": lambda v: _pack([(c, 16) for c in _snorm(v[:2], 16)]),
    "pack_float_to_unorm2x16": lambda v: _pack([(c, 16) for c in _unorm(v[:2], 16)]),
    "pack_half_to_snorm2x16": lambda v: _pack([(c, 16) for c in _snorm(v[:2].astype(np.float16).astype(np.float64), 16)]),
    "pack_half_to_unorm2x16": lambda v: _pack([(c, 16) for c in _unorm(v[:2].astype(np.float16).astype(np.float64), 16)]),
    "pack_float_to_unorm10a2": lambda v: _pack([(_unorm(v[0], 10), 10), (_unorm(v[1], 10), 10), (_unorm(v[2], 10), 10),
                                               (_unorm(v[3], 2), 2)]),
    "pack_half_to_unorm10a2": lambda v: PACK["pack_float_to_unorm10a2"](v.astype(np.float16).astype(np.float64)),
    "pack_float_to_unorm565": lambda v: _pack([(_unorm(v[0], 5), 5), (_unorm(v[1], 6), 6), (_unorm(v[2], 5), 5)]),
    "pack_half_to_unorm565": lambda v: PACK["pack_float_to_unorm565"](v.astype(np.float16).astype(np.float64)),
    "unpack_snorm4x8_to_float": None, "unpack_unorm4x8_to_float": None, "unpack_snorm4x8_to_half": None,
    "unpack_unorm4x8_to_half": None, "unpack_snorm2x16_to_float": None, "unpack_unorm2x16_to_float": None,
    "unpack_snorm2x16_to_half": None, "unpack_unorm2x16_to_half": None, "unpack_unorm10a2_to_float": None,
    "unpack_unorm10a2_to_half": None, "unpack_unorm565_to_float": None, "unpack_unorm565_to_half": None,
}
PACK_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const float4* v [[buffer(0)]], device uint* p [[buffer(1)]], device float4* u [[buffer(2)]],
              uint i [[thread_position_in_grid]]) {
  float4 x = v[i];
  half4 h = half4(x);
  p[i * 12 + 0] = pack_float_to_snorm4x8(x); p[i * 12 + 1] = pack_float_to_unorm4x8(x);
  p[i * 12 + 2] = pack_half_to_snorm4x8(h); p[i * 12 + 3] = pack_half_to_unorm4x8(h);
  p[i * 12 + 4] = pack_float_to_snorm2x16(x.xy); p[i * 12 + 5] = pack_float_to_unorm2x16(x.xy);
  p[i * 12 + 6] = pack_half_to_snorm2x16(h.xy); p[i * 12 + 7] = pack_half_to_unorm2x16(h.xy);
  p[i * 12 + 8] = pack_float_to_unorm10a2(x); p[i * 12 + 9] = pack_half_to_unorm10a2(h);
  p[i * 12 + 10] = pack_float_to_unorm565(x.xyz); p[i * 12 + 11] = pack_half_to_unorm565(h.xyz);
  uint w = p[i * 12 + 1], s = p[i * 12 + 0];
  u[i * 12 + 0] = unpack_snorm4x8_to_float(s); u[i * 12 + 1] = unpack_unorm4x8_to_float(w);
  u[i * 12 + 2] = float4(unpack_snorm4x8_to_half(s)); u[i * 12 + 3] = float4(unpack_unorm4x8_to_half(w));
  u[i * 12 + 4] = float4(unpack_snorm2x16_to_float(p[i * 12 + 4]), unpack_unorm2x16_to_float(p[i * 12 + 5]));
  u[i * 12 + 5] = float4(float2(unpack_snorm2x16_to_half(p[i * 12 + 4])), float2(unpack_unorm2x16_to_half(p[i * 12 + 5])));
  u[i * 12 + 6] = unpack_unorm10a2_to_float(p[i * 12 + 8]); u[i * 12 + 7] = float4(unpack_unorm10a2_to_half(p[i * 12 + 8]));
  u[i * 12 + 8] = float4(unpack_unorm565_to_float(ushort(p[i * 12 + 10])), 0.0f);
  u[i * 12 + 9] = float4(float3(unpack_unorm565_to_half(ushort(p[i * 12 + 10]))), 0.0f);
}
"""


def test_pack_and_unpack():
    r = np.random.default_rng(13)
    v = r.uniform(-1.2, 1.2, (8, 4)).astype(np.float32)
    p = np.zeros((8, 12), np.uint32)
    u = np.zeros((8, 12, 4), np.float32)
    load_kernel(PACK_SRC, "k")(v, p, u, threads=8, threads_per_threadgroup=8)
    names = [n for n in PACK if n.startswith("pack")]
    for i in range(8):
        x = v[i].astype(np.float64)
        for k, name in enumerate(names):
            assert int(p[i, k]) == PACK[name](x), (name, i)
        s8 = [(int(p[i, 0]) >> (8 * c)) & 0xff for c in range(4)]
        w8 = [(int(p[i, 1]) >> (8 * c)) & 0xff for c in range(4)]
        snorm = [max(-1.0, (c - 256 if c > 127 else c) / 127) for c in s8]
        np.testing.assert_allclose(u[i, 0], snorm, rtol=1e-6)
        np.testing.assert_allclose(u[i, 1], [c / 255 for c in w8], rtol=1e-6)
        np.testing.assert_allclose(u[i, 2], snorm, rtol=1e-3)
        np.testing.assert_allclose(u[i, 3], [c / 255 for c in w8], rtol=1e-3)
        s16 = [(int(p[i, 4]) >> (16 * c)) & 0xffff for c in range(2)]
        w16 = [(int(p[i, 5]) >> (16 * c)) & 0xffff for c in range(2)]
        np.testing.assert_allclose(u[i, 4], [max(-1.0, (c - 65536 if c > 32767 else c) / 32767) for c in s16]
                                   + [c / 65535 for c in w16], rtol=1e-6)
        t = int(p[i, 8])
        np.testing.assert_allclose(u[i, 6], [(t & 1023) / 1023, ((t >> 10) & 1023) / 1023, ((t >> 20) & 1023) / 1023,
                                             (t >> 30) / 3], rtol=1e-6)
        np.testing.assert_allclose(u[i, 5], u[i, 4], rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(u[i, 7], u[i, 6], rtol=1e-3, atol=1e-4)
        q = int(p[i, 10])
        np.testing.assert_allclose(u[i, 8, :3], [(q & 31) / 31, ((q >> 5) & 63) / 63, (q >> 11) / 31], rtol=1e-6)
        np.testing.assert_allclose(u[i, 9, :3], u[i, 8, :3], rtol=1e-3)


ATOMIC_TESTED = {"atomic_fetch_add_explicit", "atomic_fetch_sub_explicit", "atomic_fetch_max_explicit",
                 "atomic_fetch_min_explicit", "atomic_fetch_and_explicit", "atomic_fetch_or_explicit",
                 "atomic_fetch_xor_explicit", "atomic_exchange_explicit", "atomic_load_explicit",
                 "atomic_store_explicit", "atomic_compare_exchange_weak_explicit",
                 "atomic_compare_exchange_strong_explicit"}
ATOMIC_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device atomic_int* a [[buffer(0)]], device atomic_uint* u [[buffer(1)]], device atomic_float* f [[buffer(2)]],
              device int* seen [[buffer(3)]], uint i [[thread_position_in_grid]]) {
  threadgroup atomic_int local;
  if (i % 64 == 0) atomic_store_explicit(&local, 0, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&a[0], int(i), memory_order_relaxed);
  atomic_fetch_sub_explicit(&a[1], 2, memory_order_relaxed);
  atomic_fetch_max_explicit(&a[2], int(i * 7 % 101), memory_order_relaxed);
  atomic_fetch_min_explicit(&a[3], -int(i * 5 % 97), memory_order_relaxed);
  atomic_fetch_or_explicit(&u[0], 1u << (i % 32), memory_order_relaxed);
  atomic_fetch_and_explicit(&u[1], ~(1u << (i % 16)), memory_order_relaxed);
  atomic_fetch_xor_explicit(&u[2], i, memory_order_relaxed);
  atomic_fetch_add_explicit(&f[0], 0.5f, memory_order_relaxed);
  atomic_fetch_sub_explicit(&f[1], 0.25f, memory_order_relaxed);
  atomic_fetch_add_explicit(&local, 1, memory_order_relaxed);
  int expected = atomic_load_explicit(&a[4], memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&a[4], &expected, expected + 3, memory_order_relaxed,
                                                memory_order_relaxed)) {}
  int e2 = 0;
  if (atomic_compare_exchange_strong_explicit(&a[5], &e2, int(i) + 1, memory_order_relaxed, memory_order_relaxed))
    atomic_fetch_add_explicit(&a[6], 1, memory_order_relaxed);
  seen[i] = atomic_exchange_explicit(&a[7], int(i), memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (i % 64 == 0) atomic_fetch_add_explicit(&a[8], atomic_load_explicit(&local, memory_order_relaxed), memory_order_relaxed);
}
"""


def test_atomics():
    n = 256
    a = np.zeros(9, np.int32)
    a[1], a[3] = 1000, 5
    u = np.array([0, 0xffffffff, 0], np.uint32)
    f = np.array([1.0, 0.0], np.float32)
    seen = np.zeros(n, np.int32)
    load_kernel(ATOMIC_SRC, "k")(a, u, f, seen, threads=n, threads_per_threadgroup=64)
    i = np.arange(n)
    assert a[0] == i.sum() and a[1] == 1000 - 2 * n and a[2] == (i * 7 % 101).max() and a[3] == -(i * 5 % 97).max()
    assert u[0] == 0xffffffff and u[1] == 0xffff0000 and u[2] == np.bitwise_xor.reduce(i)
    assert f[0] == 1 + 0.5 * n and f[1] == -0.25 * n
    assert a[4] == 3 * n and a[6] == 1 and 1 <= a[5] <= n
    assert sorted(seen.tolist() + [int(a[7])]) == [0] + list(range(n)), "exchange hands every value on once"
    assert a[8] == n


@pytest.mark.parametrize("expr,word", [
    ("atomic_fetch_max_explicit(&f[0], 1.0f, memory_order_relaxed)", "atomic_fetch_max_explicit"),
    ("atomic_fetch_and_explicit(&f[0], 1.0f, memory_order_relaxed)", "atomic_fetch_and_explicit"),
    ("dfdx(1.0f)", "dfdx"), ("discard_fragment()", "discard_fragment"),
])
def test_what_metal_does_not_have_is_a_compile_error_naming_it(expr, word):
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           f"kernel void k(device atomic_float* f [[buffer(0)]]) {{\n  {expr};\n}}\n")
    with pytest.raises(CompileError, match=word) as e:
        load_kernel(src, "k")
    assert "<source>:4" in str(e.value)


def test_float_bitwise_builtin_is_an_error_when_run():
    """MLX's bf16_math.h defines simd_xor for bfloat through __metal_simd_xor of a float, whose
    result is not documented: compiling it is fine, running it an error that says so."""
    from gemmglossary.emulator import EmulatorError

    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void k(device float* o [[buffer(0)]], uint l [[thread_index_in_simdgroup]]) {\n"
           "  o[l] = __metal_simd_xor(float(l));\n}\n")
    with pytest.raises(EmulatorError, match="__metal_simd_xor of a floating-point value"):
        load_kernel(src, "k")(np.zeros(32, np.float32), threads=32, threads_per_threadgroup=32)


def test_metal_builtins_are_the_library_functions():
    """The __metal_* builtins MLX calls are generated from the library lists: a sample."""
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           "  float x = 0.5f + float(i);\n"
           "  o[i * 4 + 0] = __metal_exp(x, 0); o[i * 4 + 1] = __metal_sinpi(x, 1);\n"
           "  o[i * 4 + 2] = __metal_fmax3(x, -x, 2.0f, 0); o[i * 4 + 3] = __metal_simd_sum(x);\n}\n")
    o = np.zeros((32, 4), np.float32)
    load_kernel(src, "k")(o, threads=32, threads_per_threadgroup=32)
    x = 0.5 + np.arange(32)
    np.testing.assert_array_max_ulp(o[:, 0], np.exp(x).astype(np.float32), maxulp=4)
    np.testing.assert_allclose(o[:, 1], np.sin(np.pi * x), atol=1e-6)
    np.testing.assert_array_equal(o[:, 2], np.maximum(x, 2))
    assert np.all(o[:, 3] == x.sum())


# simd_ functions (the quad_ ones are tested per quad in test_constructs.py): call, reference
# of the 32 lane values v (and lane numbers l)
def _fill_up(v, fill, d, m):
    return [v[i - d] if i % m >= d else fill[i // m * m + m - d + i % m] for i in range(32)]


def _fill_down(v, fill, d, m):
    return [v[i + d] if i % m + d < m else fill[i // m * m + i % m + d - m] for i in range(32)]


SIMD = {
    "sum": ("simd_sum(v)", lambda v, l: [v.sum()] * 32),
    "product": ("simd_product(v * 0.5f + 1.0f)", lambda v, l: [np.prod(v * 0.5 + 1.0)] * 32),
    "max": ("simd_max(v)", lambda v, l: [v.max()] * 32), "min": ("simd_min(v)", lambda v, l: [v.min()] * 32),
    "and": ("float(simd_and(uint(v) | 16u))", lambda v, l: [np.bitwise_and.reduce(v.astype(int) | 16)] * 32),
    "or": ("float(simd_or(uint(v)))", lambda v, l: [np.bitwise_or.reduce(v.astype(int))] * 32),
    "xor": ("float(simd_xor(uint(v)))", lambda v, l: [np.bitwise_xor.reduce(v.astype(int))] * 32),
    "prefix_exclusive_sum": ("simd_prefix_exclusive_sum(v)", lambda v, l: np.cumsum(v) - v),
    "prefix_inclusive_sum": ("simd_prefix_inclusive_sum(v)", lambda v, l: np.cumsum(v)),
    "prefix_exclusive_product": ("simd_prefix_exclusive_product(v * 0.25f + 0.9f)",
                                 lambda v, l: np.cumprod(v * 0.25 + 0.9) / (v * 0.25 + 0.9)),
    "prefix_inclusive_product": ("simd_prefix_inclusive_product(v * 0.25f + 0.9f)", lambda v, l: np.cumprod(v * 0.25 + 0.9)),
    "broadcast_first": ("simd_broadcast_first(v)", lambda v, l: [v[0]] * 32),
    "shuffle": ("simd_shuffle(v, (l * 7) % 32)", lambda v, l: v[(l * 7) % 32]),
    "shuffle_xor": ("simd_shuffle_xor(v, 5)", lambda v, l: v[l ^ 5]),
    "shuffle_up": ("simd_shuffle_up(v, 3)", lambda v, l: np.where(l >= 3, np.roll(v, 3), v)),
    "shuffle_down": ("simd_shuffle_down(v, 3)", lambda v, l: np.where(l + 3 < 32, np.roll(v, -3), v)),
    "shuffle_rotate_down": ("simd_shuffle_rotate_down(v, 5)", lambda v, l: np.roll(v, -5)),
    "shuffle_rotate_up": ("simd_shuffle_rotate_up(v, 5)", lambda v, l: np.roll(v, 5)),
    "broadcast": ("simd_broadcast(v, 9)", lambda v, l: [v[9]] * 32),
    "shuffle_and_fill_up": ("simd_shuffle_and_fill_up(v, -v, 2, 8)", lambda v, l: _fill_up(v, -v, 2, 8)),
    "shuffle_and_fill_down": ("simd_shuffle_and_fill_down(v, -v, 3)", lambda v, l: _fill_down(v, -v, 3, 32)),
    "all": ("float(simd_all(v > 0.0f))", lambda v, l: [float((v > 0).all())] * 32),
    "any": ("float(simd_any(v > 30.0f))", lambda v, l: [float((v > 30).any())] * 32),
    "is_first": ("float(simd_is_first())", lambda v, l: (l == 0).astype(float)),
    "ballot": ("float(ulong(simd_ballot(v > 8.0f)))", lambda v, l: [float(sum(1 << k for k in range(32) if v[k] > 8))] * 32),
    "active_threads_mask": ("float(ulong(simd_active_threads_mask()))", lambda v, l: [float(2**32 - 1)] * 32),
    "is_helper_thread": ("float(simd_is_helper_thread())", lambda v, l: [0.0] * 32),
}
SIMD_NAMES = sorted(SIMD)
SIMD_SRC = ("#include <metal_stdlib>\nusing namespace metal;\n"
            "kernel void k(device const float* x [[buffer(0)]], device float* o [[buffer(1)]],\n"
            "              uint l [[thread_index_in_simdgroup]]) {\n  float v = x[l];\n"
            + "".join(f"  o[{k} * 32 + l] = {SIMD[n][0]};\n" for k, n in enumerate(SIMD_NAMES)) + "}\n")


def test_simd_group_functions():
    v = (np.arange(32) * 13 % 29 + 1).astype(np.float32)
    o = np.zeros((len(SIMD_NAMES), 32), np.float32)
    load_kernel(SIMD_SRC, "k")(v, o, threads=32, threads_per_threadgroup=32)
    lanes = np.arange(32)
    for k, name in enumerate(SIMD_NAMES):
        expect = np.asarray(SIMD[name][1](v.astype(np.float64), lanes), dtype=np.float64).astype(np.float32)
        np.testing.assert_allclose(o[k], expect, rtol=1e-5, err_msg=name)
