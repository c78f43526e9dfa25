"""MLX's decode attention (sdpa_vector.h), unmodified, on the emulator against numpy.

Each case is one compile, chosen so that together they cover: every kernel (one pass, the
two passes) with every dtype, every function constant on and off
(array mask boolean and additive, causal, transposed query, sinks), a head-dim pair with
query dim ≠ value dim, key counts that are not multiples of the 32 simdgroups (one pass)
or of blocks × 4 (two passes), keys and values that are slices of a longer cache (not
copied: their sequence stride is the cache's), GQA, and all three device-size rules for
the number of blocks.

The reference is softmax(scale·q·kᵀ + mask)·v in float64, with the sink as an extra logit
per head that takes no value; it is itself checked against mx.fast.scaled_dot_product_attention
on MLX's CPU backend. Tolerances: float32 accumulates in float32 (|error| ≤ 1e-4 here);
float16 and bfloat16 round the inputs, the partial outputs and the output (≤ 4e-3 and 3e-2).
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.mlx import sdpa_vector as sv
from gemmglossary.mlx.matmul import Device
from gemmglossary.mlx.launch import bfloat16


TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(np.float16): 4e-3, bfloat16: 3e-2}
BASE, MAX, ULTRA = Device("g", 13), Device("s", 15), Device("d", 14)


def reference(q, k, v, scale, mask=None, sinks=None):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    L, N = q.shape[2], k.shape[2]
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = scale * q @ np.swapaxes(k, -1, -2)
    if isinstance(mask, str):  # causal: query i (of the last L positions) sees keys 0 .. N - L + i
        scores = np.where(np.arange(N)[None, :] <= (N - L + np.arange(L))[:, None], scores, -np.inf)
    elif mask is not None:
        m = np.broadcast_to(mask, scores.shape)
        scores = np.where(m, scores, -np.inf) if m.dtype == np.bool_ else scores + m.astype(np.float64)
    if sinks is not None:
        sink = np.broadcast_to(sinks.astype(np.float64)[None, :, None, None], scores.shape[:-1] + (1,))
        scores = np.concatenate([sink, scores], axis=-1)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p[..., 1:] if sinks is not None else p) @ v


def qkv(rng, dtype, B, Hq, Hkv, L, N, D, V, *, cache=0):
    """q, and k, v as the first N positions of a cache of N + cache positions."""
    q = rng.standard_normal((B, Hq, L, D)).astype(dtype)
    k = rng.standard_normal((B, Hkv, N + cache, D)).astype(dtype)[:, :, :N]
    v = rng.standard_normal((B, Hkv, N + cache, V)).astype(dtype)[:, :, :N]
    return q, k, v


def check(plan, q, k, v, scale, mask=None, sinks=None):
    out = plan.run()
    np.testing.assert_allclose(out.astype(np.float64), reference(q, k, v, scale, mask, sinks),
                               atol=TOLERANCE[q.dtype], rtol=TOLERANCE[q.dtype])


def _one_pass_cases():
    rng = np.random.default_rng(0)
    q, k, v = qkv(rng, np.float32, 1, 2, 2, 1, 50, 64, 64, cache=14)
    yield "f32-d64-cache-slice", (q, k, v), dict(scale=0.125)
    q, k, v = qkv(rng, np.float16, 2, 4, 2, 3, 70, 128, 128)
    yield "f16-d128-gqa-boolmask", (q, k, v), dict(scale=0.09, mask=rng.random((2, 1, 3, 70)) > 0.3)
    buf = rng.standard_normal((1, 3, 6, 64)).astype(bfloat16)  # (batch, tokens, heads, dim)
    _, k, v = qkv(rng, bfloat16, 1, 6, 3, 3, 40, 64, 64)
    yield "bf16-d64-causal-transposed-sinks", (np.swapaxes(buf, 1, 2), k, v), dict(
        scale=0.125, mask="causal", sinks=rng.standard_normal(6).astype(np.float32))
    q, k, v = qkv(rng, np.float32, 1, 2, 2, 2, 33, 192, 128)
    additive = rng.standard_normal((1, 2, 2, 33)).astype(np.float32)
    additive[..., 5] = -np.inf
    yield "f32-d192-v128-floatmask", (q, k, v), dict(scale=0.07, mask=additive)


# float32 is exact enough to see exponentials rounded to bfloat16; half and bfloat16 are not.
ONE_PASS = [pytest.param(*c[1:], id=c[0])
            for c in _one_pass_cases()]


@pytest.mark.parametrize("arrays,options", ONE_PASS)
def test_one_pass(arrays, options):
    q, k, v = arrays
    plan = sv.plan(q, k, v, **options)
    assert len(plan.launches) == 1 and plan.launches[0].threads_per_threadgroup == (1024, 1, 1)
    constants = plan.launches[0].function_constants
    mask = options.get("mask")
    assert constants[sv.QUERY_TRANSPOSED] == (q.strides[-2] != q.shape[-1] * q.itemsize)
    assert constants[sv.DO_CAUSAL] == (isinstance(mask, str))
    assert constants[sv.HAS_SINKS] == ("sinks" in options)
    check(plan, q, k, v, **options)


def _two_pass_cases():
    rng = np.random.default_rng(1)
    q, k, v = qkv(rng, np.float32, 1, 2, 2, 1, 1100, 64, 64, cache=3)
    yield "f32-max-device", MAX, 64, (q, k, v), dict(scale=0.125)
    q, k, v = qkv(rng, np.float16, 2, 2, 1, 2, 1030, 128, 128)
    yield "f16-ultra-boolmask-sinks", ULTRA, 128, (q, k, v), dict(
        scale=0.09, mask=rng.random((1, 1, 2, 1030)) > 0.2, sinks=rng.standard_normal(2).astype(np.float32))
    q, k, v = qkv(rng, bfloat16, 1, 4, 2, 2, 4100, 64, 64)
    yield "bf16-base-gqa-causal", BASE, 64, (q, k, v), dict(scale=0.125, mask="causal")


TWO_PASS = list(_two_pass_cases())


@pytest.mark.parametrize("device,blocks,arrays,options", [
    pytest.param(*c[1:], id=c[0])
    for c in TWO_PASS])
def test_two_pass(device, blocks, arrays, options):
    q, k, v = arrays
    plan = sv.plan(q, k, v, device=device, **options)
    first, second = plan.launches
    assert first.host_name.startswith("sdpa_vector_2pass_1_")
    assert first.function_constants[sv.BLOCKS] == blocks and first.threadgroups[2] == blocks
    assert 6 not in first.buffers, "MLX leaves buffer 6 of the first pass unbound"
    check(plan, q, k, v, **options)


def test_reference_matches_mlx_cpu():
    """The numpy reference agrees with MLX's own attention (CPU backend) on masks, causal
    offsets, GQA and sinks."""
    mx = pytest.importorskip("mlx.core")
    rng = np.random.default_rng(3)
    q, k, v = (np.ascontiguousarray(x) for x in qkv(rng, np.float32, 2, 4, 2, 3, 20, 64, 64))
    sinks = rng.standard_normal(4).astype(np.float32)
    bool_mask = rng.random((2, 1, 3, 20)) > 0.3
    for mask, mx_mask in (("causal", "causal"), (bool_mask, mx.array(bool_mask)), (None, None)):
        ours = reference(q, k, v, 0.1, mask, sinks)
        theirs = mx.fast.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v), scale=0.1,
                                                      mask=mx_mask, sinks=mx.array(sinks))
        np.testing.assert_allclose(ours, np.array(theirs), atol=1e-5, rtol=1e-5)


def test_host_rules():
    """Which kernel, how many blocks, and what MLX refuses, without running anything."""
    assert sv.blocks_for(BASE, 100_000, 2) == 32 and sv.blocks_for(BASE, 10, 4) == 64
    assert [sv.blocks_for(MAX, n, 8) for n in (1024, 8192, 32768, 65536, 65537)] == [64, 128, 256, 512, 1024]
    assert sv.blocks_for(MAX, 100_000, 4) == 64
    assert sv.blocks_for(ULTRA, 8193, 2) == 256 and sv.blocks_for(ULTRA, 8193, 3) == 128
    assert sv.blocks_for(ULTRA, 16384, 6) == 512 and sv.blocks_for(ULTRA, 65536, 6) == 1024
    assert not sv.uses_two_pass(BASE, 4, 4, 100_000) and sv.uses_two_pass(BASE, 8, 4, 4096)
    assert sv.uses_two_pass(MAX, 4, 4, 1024) and not sv.uses_two_pass(MAX, 4, 4, 1023)
    for shapes, reason in ((((1, 2, 9, 64), (1, 2, 9, 64), (1, 2, 9, 64)), "full attention"),
                           (((1, 2, 1, 80), (1, 2, 9, 80), (1, 2, 9, 80)), "head dims"),
                           (((1, 2, 1, 192), (1, 2, 9, 192), (1, 2, 9, 192)), "head dims"),
                           (((1, 2, 4, 64), (1, 2, 3, 64), (1, 2, 3, 64)), "longer than"),
                           (((1, 66, 1, 64), (1, 2, 9, 64), (1, 2, 9, 64)), "more than 32")):
        with pytest.raises(ValueError, match=reason):
            sv.check_vector_kernel(*shapes)


def test_copies_follow_mlx():
    """A head-major query view with one batch is read in place (query_transposed); with two
    batches it is copied to row-contiguous; a key slice of a longer cache is never copied."""
    rng = np.random.default_rng(4)
    _, k, v = qkv(rng, np.float32, 2, 2, 2, 2, 40, 64, 64, cache=8)
    one = np.swapaxes(rng.standard_normal((1, 2, 2, 64)).astype(np.float32), 1, 2)
    two = np.swapaxes(rng.standard_normal((2, 2, 2, 64)).astype(np.float32), 1, 2)
    assert sv.plan(one, k[:1], v[:1], scale=1.0).launches[0].function_constants[sv.QUERY_TRANSPOSED]
    launch = sv.plan(two, k, v, scale=1.0).launches[0]
    assert not launch.function_constants[sv.QUERY_TRANSPOSED]
    assert launch.buffers[1].base is not None and int(launch.buffers[7]) == 64  # k's sequence stride
    assert int(launch.buffers[6]) == 48 * 64  # k's head stride is the cache's
