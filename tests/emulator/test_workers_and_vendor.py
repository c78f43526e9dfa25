"""Worker processes, lenient out-of-bounds reads, atomics, and MLX's steel gemm."""

from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import OutOfBoundsError, PortabilityWarning, load_kernel
from gemmglossary.paths import kernels_dir, vendor_dir

SRC = """#include <metal_stdlib>
using namespace metal;

kernel void scale(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  y[i] = 2.0f * x[i];
}

kernel void bad_tg5(device float* y [[buffer(0)]], uint2 tg [[threadgroup_position_in_grid]],
                    uint l [[thread_index_in_threadgroup]]) {
  uint t = tg.y * 4 + tg.x;
  if (t >= 5 && l == 0) y[1000 + t] = 1.0f;  // every threadgroup from 5 on writes out of bounds
  y[t] = (float)t;
}

kernel void read_past(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                      constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float v = x[i + 1];          // reads one past the end in the last thread ...
  if (i + 1 < n) y[i] = v;     // ... but never uses that value
}

kernel void write_past(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  y[i + 1] = 1.0f;
}

kernel void count(device atomic_uint* c [[buffer(0)]], device atomic_float* f [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(c, 1u, memory_order_relaxed);
  atomic_fetch_add_explicit(f, 0.5f, memory_order_relaxed);
}
"""


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_results_do_not_depend_on_workers(workers):
    k = load_kernel(SRC, "scale")
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    k(x, y, threads=1000, threads_per_threadgroup=64, workers=workers)
    assert np.array_equal(y, 2 * x)


def test_first_failing_threadgroup_is_reported_whatever_the_workers():
    k = load_kernel(SRC, "bad_tg5")
    msgs = set()
    for w in (1, 2, 3):
        y = np.zeros(16, np.float32)
        with pytest.raises(OutOfBoundsError) as e:
            k(y, threadgroups=(4, 4, 1), threads_per_threadgroup=(8, 1, 1), workers=w)
        assert "threadgroup (1,1,0)" in str(e.value)  # linear index 5
        assert np.all(y == 0)
        msgs.add(str(e.value))
    assert len(msgs) == 1


def test_oob_reads_warn_lets_discarded_reads_pass():
    k = load_kernel(SRC, "read_past")
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    with pytest.raises(OutOfBoundsError, match="oob_reads='warn'"):
        k(x, y, 8, threads=8, threads_per_threadgroup=8)
    with pytest.warns(PortabilityWarning, match="read outside a buffer"):
        k(x, y, 8, threads=8, threads_per_threadgroup=8, oob_reads="warn")
    assert np.array_equal(y[:7], x[1:])


def test_oob_reads_warn_still_rejects_writes():
    k = load_kernel(SRC, "write_past")
    y = np.zeros(8, np.float32)
    with pytest.raises(OutOfBoundsError, match="out-of-bounds write"):
        k(y, threads=8, threads_per_threadgroup=8, oob_reads="warn")
    assert np.all(y == 0)


def test_atomics_across_workers():
    k = load_kernel(SRC, "count")
    c = np.zeros(1, np.uint32)
    f = np.zeros(1, np.float32)
    k(c, f, threads=4096, threads_per_threadgroup=64, workers=2)
    assert c[0] == 4096 and f[0] == 2048.0


def _steel():
    src = Path(kernels_dir()) / "steel_gemm.metal"
    inc = Path(vendor_dir())
    if not src.exists() or not (inc / "mlx").exists():
        pytest.skip("kernels/steel_gemm.metal or the vendored MLX headers are not there")
    return src, inc


GEMM_PARAMS = np.dtype([("M", "<i4"), ("N", "<i4"), ("K", "<i4"), ("lda", "<i4"), ("ldb", "<i4"), ("ldd", "<i4"),
                        ("tiles_n", "<i4"), ("tiles_m", "<i4"), ("batch_stride_a", "<i8"), ("batch_stride_b", "<i8"),
                        ("batch_stride_d", "<i8"), ("swizzle_log", "<i4"), ("gemm_k_iterations_aligned", "<i4"),
                        ("batch_ndim", "<i4")], align=True)


@pytest.mark.parametrize("shape", [(64, 64, 64), (45, 37, 20)], ids=lambda s: "x".join(map(str, s)))
def test_mlx_steel_gemm(shape):
    """MLX's own steel gemm (vendored headers, never edited) through the emulator."""
    src, inc = _steel()
    M, N, K = shape
    bm = bn = 32
    bk = 16
    name = "steel_gemm_fused_nn_float32_float32_bm32_bn32_bk16_wm2_wn2"
    fc = {10: False, 100: False, 110: False, 200: M % bm == 0, 201: N % bn == 0, 202: K % bk == 0}
    k = load_kernel(src, name, function_constants=fc, include_dirs=[inc])
    assert k.max_total_threads_per_threadgroup == 128
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    d = np.zeros((M, N), np.float32)
    tn, tm = (N + bn - 1) // bn, (M + bm - 1) // bm
    p = np.zeros((), GEMM_PARAMS)
    p["M"], p["N"], p["K"], p["lda"], p["ldb"], p["ldd"] = M, N, K, K, N, N
    p["tiles_n"], p["tiles_m"] = tn, tm
    p["batch_stride_a"], p["batch_stride_b"], p["batch_stride_d"] = M * K, K * N, M * N
    p["gemm_k_iterations_aligned"] = K // bk
    k({0: a, 1: b, 3: d, 4: p.tobytes()}, threadgroups=(tn, tm, 1), threads_per_threadgroup=(32, 2, 2))
    np.testing.assert_allclose(d, a.astype(np.float64) @ b, atol=1e-4)


UNINIT = """#include <metal_stdlib>
using namespace metal;

kernel void uninit(device float* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]],
                   ushort q [[thread_index_in_quadgroup]], ushort qg [[quadgroup_index_in_threadgroup]]) {
  threadgroup float s[64];
  if (tid < 32) s[tid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = s[63 - tid] + 10.0f * q + 100.0f * qg;  // threads 0-31 read what nobody wrote
}
"""


def test_reading_unwritten_threadgroup_memory_warns():
    k = load_kernel(UNINIT, "uninit")
    out = np.zeros(64, np.float32)
    with pytest.warns(PortabilityWarning, match=r"before any thread of the threadgroup wrote it") as w:
        k(out, threads=64, threads_per_threadgroup=64)
    assert "<source>:9" in str(w[0].message)
    t = np.arange(64)
    # what nobody wrote reads as NaN (threadgroup memory starts as MSLEMU_TG_FILL_BYTE)
    assert np.array_equal(out, np.where(63 - t < 32, 1.0, np.nan) + 10 * (t % 4) + 100 * (t // 4), equal_nan=True)


@pytest.mark.parametrize("drop", [175, 180], ids=["barrier-before-load", "barrier-before-mma"])
def test_missing_barrier_in_a_copy_of_mlx_steel_is_found(tmp_path, drop):
    """Delete one barrier of the aligned K loop in (a copy of) steel_gemm_fused.h: the race
    is reported with lines in MLX's loader/mma headers."""
    import shutil

    from gemmglossary.emulator import DataRaceError

    src, inc = _steel()
    work = tmp_path / "vendor"
    shutil.copytree(inc / "mlx", work / "mlx")
    fused = work / "mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_fused.h"
    lines = fused.read_text().splitlines(keepends=True)
    if "threadgroup_barrier(mem_flags::mem_threadgroup)" not in lines[drop - 1]:
        pytest.skip("the pinned MLX version moved its barriers")
    lines[drop - 1] = "\n"
    fused.write_text("".join(lines))
    M = N = K = 64
    name = "steel_gemm_fused_nn_float32_float32_bm32_bn32_bk16_wm2_wn2"
    fc = {10: False, 100: False, 110: False, 200: True, 201: True, 202: True}
    k = load_kernel(src, name, function_constants=fc, include_dirs=[work])
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    d = np.zeros((M, N), np.float32)
    p = np.zeros((), GEMM_PARAMS)
    p["M"], p["N"], p["K"], p["lda"], p["ldb"], p["ldd"] = M, N, K, K, N, N
    p["tiles_n"], p["tiles_m"] = 2, 2
    p["gemm_k_iterations_aligned"] = K // 16
    with pytest.raises(DataRaceError) as e:
        k({0: a, 1: b, 3: d, 4: p.tobytes()}, threadgroups=(2, 2, 1), threads_per_threadgroup=(32, 2, 2))
    msg = str(e.value)
    assert "loader.h:" in msg and "mma.h:" in msg, msg
