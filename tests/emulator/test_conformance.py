"""One small kernel per construct; each fails if the construct is emulated wrongly."""

import warnings

import numpy as np
import pytest

from gemmglossary.emulator import CompileError, LaunchError, PortabilityWarning, load_kernel


def lane_rc(lane):
    q = lane // 4
    return (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2


def test_diagonal_constructor_vs_filled(conformance):
    out = np.zeros(128, np.float32)
    conformance("sgm_diag")(out, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    assert np.array_equal(out[:64].reshape(8, 8), 2 * np.eye(8, dtype=np.float32))
    assert np.all(out[64:] == 3)


def test_load_origin_transpose_elements_per_row(conformance):
    src = np.arange(256, dtype=np.float32).reshape(16, 16)
    out = np.zeros(128 + 256, np.float32)
    conformance("sgm_load")(src, out, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    block = src[0:8, 8:16]  # origin is (col 8, row 0)
    assert np.array_equal(out[:64].reshape(8, 8), block)
    assert np.array_equal(out[64:128].reshape(8, 8), block.T)
    wide = out[128:].reshape(16, 16)
    assert np.array_equal(wide[8:16, 0:8], block)
    assert np.all(wide[0:8] == 0) and np.all(wide[8:, 8:] == 0)


def test_thread_elements_lane_layout(conformance):
    src = np.arange(64, dtype=np.float32)
    out = np.zeros(128, np.float32)
    conformance("sgm_lanes")(src, out, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    m = src.reshape(8, 8)
    expect = np.zeros(64, np.float32)
    written = m.copy()
    for lane in range(32):
        r, c = lane_rc(lane)
        expect[2 * lane], expect[2 * lane + 1] = m[r, c], m[r, c + 1]
        written[r, c] = -1
    assert np.array_equal(out[:64], expect)
    assert np.array_equal(out[64:].reshape(8, 8), written)


def test_multiply_accumulate_and_multiply(conformance):
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(3))
    out = np.zeros(128, np.float32)
    conformance("sgm_mma")(a, b, c, out, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    np.testing.assert_allclose(out[:64].reshape(8, 8), a @ b + c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[64:].reshape(8, 8), a @ b, rtol=1e-5, atol=1e-5)


def test_half_simdgroup_matrix(conformance):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 8)).astype(np.float16)
    b = rng.standard_normal((8, 8)).astype(np.float16)
    out = np.zeros(64, np.float32)
    conformance("sgm_half")(a, b, out, threads=(32, 1, 1), threads_per_threadgroup=(32, 1, 1))
    np.testing.assert_allclose(out.reshape(8, 8), a.astype(np.float32) @ b.astype(np.float32) + 1, rtol=1e-3, atol=1e-3)


def _expect_attrs(grid, tg, x, y, z):
    ntg = [(g + t - 1) // t for g, t in zip(grid, tg)]
    gpos = (x // tg[0], y // tg[1], z // tg[2])
    lpos = (x % tg[0], y % tg[1], z % tg[2])
    actual = [min(t, g - p * t) for g, t, p in zip(grid, tg, gpos)]
    idx = (lpos[2] * actual[1] + lpos[1]) * actual[0] + lpos[0]
    return (x, y, z), lpos, gpos, tuple(actual), tuple(ntg), tuple(grid), idx


def test_attributes_vector3_with_partial_edge_threadgroups(conformance):
    grid, tg = (5, 3, 2), (2, 2, 2)
    out = np.full(5 * 3 * 2 * 24, 999, np.uint32)
    conformance("attrs3")(out, threads=grid, threads_per_threadgroup=tg)
    rec = out.reshape(2, 3, 5, 24)
    for z in range(2):
        for y in range(3):
            for x in range(5):
                r = rec[z, y, x]
                tpig, tpitg, tgpig, tptg, tgpg, tpg, idx = _expect_attrs(grid, tg, x, y, z)
                assert tuple(r[0:3]) == tpig
                assert tuple(r[3:6]) == tpitg
                assert tuple(r[6:9]) == tgpig
                assert tuple(r[9:12]) == tptg, "threads_per_threadgroup is the actual (edge) size"
                assert tuple(r[12:15]) == tgpg
                assert tuple(r[15:18]) == tpg
                assert r[18] == idx
                assert r[19] == idx % 32 and r[20] == idx // 32
                n = tptg[0] * tptg[1] * tptg[2]
                assert r[21] == (n + 31) // 32
                assert r[22] == 32 and r[23] == 32


def test_attributes_simdgroups_of_a_large_threadgroup(conformance):
    out = np.zeros(72 * 24, np.uint32)
    conformance("attrs3")(out, threadgroups=(1, 1, 1), threads_per_threadgroup=(72, 1, 1))
    rec = out.reshape(72, 24)
    assert list(rec[:, 19]) == [i % 32 for i in range(72)]
    assert list(rec[:, 20]) == [i // 32 for i in range(72)]
    assert np.all(rec[:, 21] == 3)


def test_attributes_ushort2(conformance):
    grid, tg = (7, 5, 1), (4, 2, 1)
    out = np.zeros(7 * 5 * 13, np.uint32)
    conformance("attrs2")(out, threads=grid, threads_per_threadgroup=tg)
    rec = out.reshape(5, 7, 13)
    for y in range(5):
        for x in range(7):
            tpig, tpitg, tgpig, tptg, tgpg, tpg, idx = _expect_attrs((7, 5, 1), (4, 2, 1), x, y, 0)
            assert list(rec[y, x]) == [*tpig[:2], *tpitg[:2], *tgpig[:2], *tptg[:2], *tgpg[:2], *tpg[:2], idx]


def test_attributes_scalar_dispatch_threadgroups(conformance):
    out = np.zeros(3 * 8 * 6, np.uint32)
    conformance("attrs1")(out, threadgroups=(3, 1, 1), threads_per_threadgroup=(8, 1, 1))
    rec = out.reshape(24, 6)
    for i in range(24):
        assert list(rec[i]) == [i, i % 8, i // 8, 8, 3, 24]


@pytest.mark.parametrize("bad", [
    "uint2 a [[thread_position_in_grid]], uint3 b [[thread_position_in_threadgroup]]",
    "uint a [[thread_position_in_grid]], uint2 b [[threadgroup_position_in_grid]]",
    "ushort3 a [[threads_per_threadgroup]], uint b [[threads_per_grid]]",
])
def test_mixed_arity_attributes_rejected(bad):
    src = ("#include <metal_stdlib>\nusing namespace metal;\n\n"
           f"kernel void bad(device float* o [[buffer(0)]],\n  {bad}) {{\n  o[0] = 1.0f;\n}}\n")
    with pytest.raises(CompileError) as e:
        load_kernel(src, "bad")
    msg = str(e.value)
    assert "<source>:4" in msg or "<source>:5" in msg
    assert "scalar" in msg and "vector" in msg


def test_simd_functions_over_active_lanes(conformance):
    n = 48  # simdgroup 1 is partial (16 lanes)
    vals = (np.arange(n) * 7 % 23 - 5).astype(np.int32)
    out = np.full(n * 10, -999, np.int32)
    conformance("simd_fns")(vals, out, threads=(n, 1, 1), threads_per_threadgroup=(n, 1, 1))
    rec = out.reshape(n, 10)
    for sg, size in ((0, 32), (1, 16)):
        lanes = [l for l in range(size) if not (sg == 0 and l % 8 == 7)]
        active = set(lanes)
        v = {l: int(vals[sg * 32 + l]) for l in lanes}
        prefix = 0
        for l in lanes:
            r = rec[sg * 32 + l]
            src = (l + 5) % 32
            assert r[0] == (v[src] if src in active else v[l])
            assert r[1] == (v[l ^ 3] if (l ^ 3) in active else v[l])
            assert r[2] == (v[l - 2] if l >= 2 and (l - 2) in active else v[l]), "shuffle_up does not wrap"
            assert r[3] == (v[l + 2] if (l + 2) in active else v[l]), "shuffle_down does not wrap"
            assert r[4] == v[4]
            assert r[5] == sum(v.values())
            assert r[6] == max(v.values()) and r[7] == min(v.values())
            assert r[8] == prefix
            prefix += v[l]
            assert r[9] == v[l]
    # lanes that returned wrote nothing
    assert np.all(rec[7] == -999) and np.all(rec[31] == -999)


def test_early_return_before_barrier_warns(conformance):
    out = np.zeros(64, np.float32)
    with pytest.warns(PortabilityWarning, match="returned before the threadgroup_barrier"):
        conformance("early_return")(out, threads=(64, 1, 1), threads_per_threadgroup=(64, 1, 1))
    expect = np.zeros(64, np.float32)
    expect[:40] = [((t + 1) % 40) * 2 for t in range(40)]
    assert np.array_equal(out, expect)


def test_no_warning_without_early_return(conformance):
    out = np.zeros(64, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        conformance("early_return")(out, threads=(40, 1, 1), threads_per_threadgroup=(40, 1, 1))


def test_threadgroup_memory_parameter(conformance):
    out = np.zeros(24, np.float32)
    k = conformance("tg_param")
    k(out, threads=(24, 1, 1), threads_per_threadgroup=(24, 1, 1), threadgroup_memory={0: 24 * 4})
    assert np.array_equal(out, np.arange(24, dtype=np.float32)[::-1])
    with pytest.raises(LaunchError, match="scratch"):
        k(out, threads=(24, 1, 1), threads_per_threadgroup=(24, 1, 1))
    from gemmglossary.emulator import OutOfBoundsError
    with pytest.raises(OutOfBoundsError, match="index 16"):
        k(out, threads=(24, 1, 1), threads_per_threadgroup=(24, 1, 1), threadgroup_memory={0: 16 * 4})


def test_half_arithmetic_rounds_like_numpy(conformance):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(64) * 300).astype(np.float16)
    b = (rng.standard_normal(64) * 3 + 0.01).astype(np.float16)
    out = np.zeros(64 * 5, np.float16)
    conformance("half_ops")(a, b, out, threads=(64, 1, 1), threads_per_threadgroup=(32, 1, 1))
    rec = out.reshape(64, 5)
    with np.errstate(all="ignore"):
        s = a + b
        exp = np.stack([s, a * b, a - b, a / b, s * np.float16(0.5)], axis=1)
    np.testing.assert_array_equal(rec, exp)


def test_vectors_and_swizzles(conformance):
    out = np.zeros(38, np.float32)
    iout = np.zeros(10, np.int32)
    conformance("vectors")(out, iout, threads=(1, 1, 1), threads_per_threadgroup=(1, 1, 1))
    rows = out[:36].reshape(9, 4)
    assert rows.tolist() == [
        [1, 2, 4, 3], [1, 2, 5, 0], [4, 3, 1, 2], [2, 1, 3, 4], [9, 7, 3, 5],
        [1, 1, 0, 0], [5, 2, 1, 7], [6, 5, 4, 5], [10, 0, 1, 2]]
    assert out[36] == 10 and out[37] == 2134
    assert iout.tolist() == [3, -1, -3, 7, 4, 45, 9, 1, 0, int(np.float32(1).view(np.int32))]


@pytest.mark.parametrize("name,limit", [("mtt_a", 64), ("mtt_b", 96), ("mtt_c", 128), ("mtt_d", 160),
                                        ("mtt_none", 1024)])
def test_max_total_threads_forms(conformance, name, limit):
    k = conformance(name)
    assert k.max_total_threads_per_threadgroup == limit
    out = np.zeros(1, np.float32)
    k(out, threads=(limit, 1, 1), threads_per_threadgroup=(limit, 1, 1))
    assert out[0] == 1
    with pytest.raises(LaunchError, match=str(limit)):
        k(out, threads=(limit + 1, 1, 1), threads_per_threadgroup=(limit + 1, 1, 1))


def test_oversize_threadgroup_rejected_without_attribute(conformance):
    with pytest.raises(LaunchError, match="1024"):
        conformance("mtt_none")(np.zeros(1, np.float32), threads=(2048, 1, 1), threads_per_threadgroup=(32, 32, 2))


def test_template_kernels_with_host_name(conformance):
    kf = conformance("scale_float_3")
    kh = conformance("scale_half_2")
    assert kf.max_total_threads_per_threadgroup == 96
    assert kh.max_total_threads_per_threadgroup == 64
    x = np.arange(10, dtype=np.float32)
    y = np.zeros_like(x)
    kf(x, y, threads=(10, 1, 1), threads_per_threadgroup=(10, 1, 1))
    assert np.array_equal(y, 3 * x)
    xh = np.arange(10, dtype=np.float16)
    yh = np.zeros_like(xh)
    kh(xh, yh, threads=(10, 1, 1), threads_per_threadgroup=(10, 1, 1))
    assert np.array_equal(yh, 2 * xh)


def test_address_space_overloads_and_constant_struct(conformance):
    out = np.zeros(8, np.float32)
    c = np.array([0.5, 4.0], np.float32)
    prm = np.array((3, 2.5), dtype=np.dtype([("n", "<u4"), ("scale", "<f4")]))
    conformance("spaces")(out, c, prm, threads=(4, 1, 1), threads_per_threadgroup=(4, 1, 1))
    assert out[:5].tolist() == [1, 2, 3, 4, 4.0 * 2.5 + 3]
    # the struct also binds as raw bytes, and by buffer index
    out2 = np.zeros(8, np.float32)
    conformance("spaces")({0: out2, 1: c, 2: prm.tobytes()}, threads=(4, 1, 1), threads_per_threadgroup=(4, 1, 1))
    assert np.array_equal(out, out2)


FC_SRC = """#include <metal_stdlib>
using namespace metal;

constant bool use_bias [[function_constant(0)]];
constant int scale [[function_constant(1)]];
constant float never_given [[function_constant(2)]];

kernel void fc(device const float* x [[buffer(0)]],
               device float* y [[buffer(1)]],
               device const float* bias [[buffer(2), function_constant(use_bias)]],
               uint i [[thread_position_in_grid]]) {
  float v = x[i] * scale;
  if (use_bias) v += bias[i];
  if (is_function_constant_defined(never_given)) v = -1.0f;
  if (!is_function_constant_defined(scale)) v = -2.0f;
  y[i] = v;
}
"""


def test_function_constants_and_gated_parameter():
    x = np.arange(8, dtype=np.float32)
    bias = np.full(8, 0.5, np.float32)
    k = load_kernel(FC_SRC, "fc", function_constants={"use_bias": True, 1: 3})
    y = np.zeros(8, np.float32)
    k(x, y, bias, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))
    assert np.array_equal(y, x * 3 + 0.5)
    k2 = load_kernel(FC_SRC, "fc", function_constants={0: False, "scale": 5})
    y2 = np.zeros(8, np.float32)
    k2(x, y2, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))  # bias is not a parameter now
    assert np.array_equal(y2, x * 5)
    with pytest.raises(LaunchError):
        k2(x, y2, bias, threads=(8, 1, 1), threads_per_threadgroup=(8, 1, 1))


def test_defines_and_parameters_introspection():
    src = "#include <metal_stdlib>\nusing namespace metal;\nkernel void d(device float* o [[buffer(1)]], uint i [[thread_position_in_grid]]) { o[i] = VALUE; }\n"
    k = load_kernel(src, "d", defines={"VALUE": "4.5f"})
    o = np.zeros(3, np.float32)
    k(o, threads=3, threads_per_threadgroup=3)
    assert np.all(o == 4.5)
    assert k.parameters == [("o", "buffer", 1, "device float *"), ("i", "thread_position_in_grid", None, "uint")]


def test_pointers_and_vector_buffers(conformance):
    v = np.arange(6 * 4, dtype=np.float32).reshape(6, 4)
    out = np.zeros(4, np.float32)
    conformance("pointers")(v, out, 6, threads=1, threads_per_threadgroup=1)
    assert out.tolist() == [v[:, 0].sum(), v[1, 1] + v[5, 3], 23, v[2, 0]]


def test_simd_functions_on_vectors_and_half_and_simdgroup_barrier(conformance):
    out2 = np.zeros((32, 2), np.float32)
    outh = np.zeros(32, np.float16)
    outb = np.zeros(32, np.float32)
    conformance("simd_types")(out2, outh, outb, threads=32, threads_per_threadgroup=32)
    lanes = np.arange(32, dtype=np.float32)
    v = np.stack([lanes, 2 * lanes], axis=1)
    down = np.concatenate([v[1:], v[31:]])  # shuffle_down: the last lane keeps its own value
    np.testing.assert_array_equal(out2, down + v.sum(axis=0))
    assert np.all(outh == np.float16(15.5))
    np.testing.assert_array_equal(outb, lanes[::-1])


def test_race_inside_a_simdgroup(conformance):
    from gemmglossary.emulator import DataRaceError

    with pytest.raises(DataRaceError):
        conformance("simd_race")(np.zeros(32, np.float32), threads=32, threads_per_threadgroup=32)


def test_unknown_function_constant_warns():
    with pytest.warns(UserWarning, match="'use_biass' is not declared"):
        load_kernel(FC_SRC, "fc", function_constants={"use_biass": True, 1: 3})


def test_kernel_inside_a_namespace():
    src = """#include <metal_stdlib>
using namespace metal;
namespace demo {
inline float twice(float x) { return 2.0f * x; }
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = twice((float)i); }
}  // namespace demo
"""
    o = np.zeros(4, np.float32)
    load_kernel(src, "k")(o, threads=4, threads_per_threadgroup=4)
    assert o.tolist() == [0, 2, 4, 6]


def test_transposed_store(conformance):
    src = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    conformance("sgm_store_t")(src, out, threads=32, threads_per_threadgroup=32)
    assert np.array_equal(out.reshape(8, 8), src.reshape(8, 8).T)


def test_packed_vectors():
    src = """#include <metal_stdlib>
using namespace metal;
kernel void k(device const packed_float3* p [[buffer(0)]], device float4* out [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {
  float3 v = p[i];
  packed_float3 q = p[i];
  q.y = 10.0f;
  out[i] = float4(v * 2.0f + q, sizeof(packed_float3));
}
"""
    p = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = np.zeros((4, 4), np.float32)
    load_kernel(src, "k")(p, out, threads=4, threads_per_threadgroup=4)
    q = p.copy()
    q[:, 1] = 10
    np.testing.assert_array_equal(out[:, :3], p * 2 + q)
    assert np.all(out[:, 3] == 12)
