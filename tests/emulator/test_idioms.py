"""Everyday MSL idioms: reductions, softmax, atomics, transpose, vectors, program-scope
constants, threadgroup scalars, structs in device memory, reference parameters."""

from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import load_kernel

SRC = Path(__file__).parent / "kernels" / "idioms.metal"
PARAMS = np.dtype([("n", "<u4"), ("scale", "<f4"), ("pad", "<u4", 2), ("bias", "<f4", 4)])


@pytest.fixture(scope="module")
def k():
    return lambda name: load_kernel(SRC, name)


def _params():
    p = np.zeros((), PARAMS)
    p["n"], p["scale"], p["bias"] = 1000, 2.0, [1, 2, 3, 4]
    return p


def test_two_level_reduction(k):
    x = np.random.default_rng(0).random(1000).astype(np.float32)
    out = np.zeros(4, np.float32)
    k("reduce_sum")(x, out, _params(), threads=1024, threads_per_threadgroup=256)
    assert np.isclose(out.sum(), 2 * x.sum(), rtol=1e-5)


def test_softmax(k):
    x = np.random.default_rng(1).random(100).astype(np.float32)
    y = np.zeros(100, np.float32)
    k("softmax_row")(x, y, 100, threads=32, threads_per_threadgroup=32)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(y, e / e.sum(), rtol=1e-5)


def test_histogram_with_threadgroup_and_device_atomics(k):
    d = np.random.default_rng(2).integers(0, 100, 512).astype(np.uint32)
    bins = np.zeros(8, np.uint32)
    k("histogram")(d, bins, threads=512, threads_per_threadgroup=128)
    assert np.array_equal(bins, np.bincount(d % 8, minlength=8))


def test_transpose_through_padded_tile(k):
    a = np.random.default_rng(3).random((37, 45)).astype(np.float32)
    b = np.zeros((45, 37), np.float32)
    k("transpose")(a, b, np.array([45, 37], np.uint32), threads=(48, 48, 1), threads_per_threadgroup=(16, 16, 1))
    assert np.array_equal(b, a.T)


def test_vector_and_half_arithmetic(k):
    a4 = np.random.default_rng(4).random((8, 4)).astype(np.float32)
    o = np.zeros((8, 4), np.float16)
    k("vec4_ops")(a4, o, _params(), threads=8, threads_per_threadgroup=8)
    v = np.clip(a4 * 2 + np.array([1, 2, 3, 4]), -10, 10)
    h = v.astype(np.float16) * np.float16(2)
    extra = np.stack([v.sum(1), np.ones(8), np.full(8, 3), np.ones(8)], 1).astype(np.float16)
    np.testing.assert_allclose(o.astype(np.float32), (h + extra).astype(np.float32), rtol=2e-3)


def test_program_scope_constants_structs_and_threadgroup_scalars(k):
    n = 16
    P = np.dtype([("pos", "<f4", 4), ("vel", "<f4", 4)])
    ps = np.zeros(n, P)
    ps["pos"] = np.arange(n * 4).reshape(n, 4)
    ps["vel"] = 1.0
    out = np.zeros(2 * n, np.float32)
    k("misc")(ps, out, threads=n, threads_per_threadgroup=n)
    w = np.array([0.5, 1, 2, 4]) * 3
    total = sum(w[i % 4] for i in range(n)) + 1
    pos = np.arange(n * 4).reshape(n, 4) + 0.5 + np.array([1, 2, 3, 4])
    np.testing.assert_allclose(ps["pos"], pos)
    np.testing.assert_allclose(out[:n], np.arange(n) + 1 + total + 1)
    np.testing.assert_allclose(out[n:], pos[:, 0].astype(int) % 3 + 1.5 + 8)


def test_more_math_and_rgba_swizzles(k):
    out = np.zeros((4, 4), np.float32)
    k("more_math")(out, threads=1, threads_per_threadgroup=1)
    a = np.array([-1.5, 2, 0, 3], np.float32)
    b = np.array([2, -1, 1, 3], np.float32)
    assert out[0, :3].tolist() == [-2, 3, 1]
    assert out[1].tolist() == (np.maximum(a, b) + (a >= b)).tolist()
    assert out[2].tolist() == (np.sign(a) * np.copysign(1, b)).tolist()
    c = a[[2, 1, 0, 3]].copy()
    c[0], c[1] = c[3], c[0]
    assert out[3].tolist() == c.tolist()
