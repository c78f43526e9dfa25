"""``gg.load_kernel`` runs .metal files verbatim on every backend: the four first-party
GEMM kernels against numpy (bound and dispatched as their header comments say, via
the table in gemmglossary.kernels), and small kernels for the dispatch
options (threads vs threadgroups, threadgroup_memory, defines, function constants).
"""

from __future__ import annotations

import numpy as np
import pytest

import gemmglossary as gg
from gemmglossary.kernels import KERNELS, run_gemm

SHAPES = [(64, 64, 64), (37, 45, 29), (1, 1, 1), (70, 33, 100)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", list(KERNELS))
def test_gemm_kernels_match_numpy(backend_name, name, shape):
    spec = KERNELS[name]
    kernel = gg.load_kernel(str(spec.path), name)
    run = run_gemm(kernel, spec, *shape, seed=sum(shape))
    assert run.passed, f"max error {run.max_error:.3e} > {run.tolerance:.1e}"


@pytest.mark.parametrize("defines", [{"TM": 2, "TN": 2}, {"WM": 1, "WN": 4, "TM": 2, "TN": 1, "BK": 8}])
def test_simd_blocked_with_defines(backend_name, defines):
    spec = KERNELS["matmul_simd_blocked"]
    kernel = gg.load_kernel(str(spec.path), spec.name, defines=defines)
    run = run_gemm(kernel, spec, 50, 41, 27, defines=defines)
    assert run.passed, run.max_error


def test_tiled_gemm_alpha_beta(backend_name):
    spec = KERNELS["tiled_gemm"]
    kernel = gg.load_kernel(str(spec.path), spec.name)
    run = run_gemm(kernel, spec, 65, 70, 40, alpha=0.5, beta=-2.0)
    assert run.passed, run.max_error


def test_gemm_dispatched_in_threads(backend_name):
    # The same dispatch counted in threads (dispatchThreads / mx.fast.metal_kernel's grid).
    spec = KERNELS["matmul_simd"]
    kernel = gg.load_kernel(str(spec.path), spec.name)
    d = spec.dispatch(40, 40, 40, {})
    run = run_gemm(kernel, spec, 40, 40, 40, threads=d.threads)
    assert run.passed


def test_wrong_dispatch_is_caught(backend_name):
    # Half the threadgroups: the test must be able to fail.
    spec = KERNELS["matmul_tiled"]
    kernel = gg.load_kernel(str(spec.path), spec.name)
    run = run_gemm(kernel, spec, 64, 64, 16, threadgroups=(2, 4, 1))
    assert not run.passed


REDUCE = """
#include <metal_stdlib>
using namespace metal;

#ifndef SCALE
#define SCALE 1
#endif
constant bool add_bias [[function_constant(0)]];

kernel void tg_sum(device const float* x      [[buffer(0)]],
                   device float*       out    [[buffer(1)]],
                   constant float&     bias   [[buffer(2)]],
                   threadgroup float*  scratch [[threadgroup(0)]],
                   uint tid  [[thread_index_in_threadgroup]],
                   uint tpg  [[threads_per_threadgroup]],
                   uint gid  [[thread_position_in_grid]],
                   uint tgid [[threadgroup_position_in_grid]])
{
    scratch[tid] = x[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) {
        float s = 0.0f;
        for (uint i = 0; i < tpg; ++i) s += scratch[i];
        out[tgid] = s * SCALE + (add_bias ? bias : 0.0f);
    }
}
"""


@pytest.mark.parametrize("add_bias", [False, True])
def test_threadgroup_memory_defines_function_constants(backend_name, add_bias):
    kernel = gg.load_kernel(REDUCE, "tg_sum", defines={"SCALE": 3}, function_constants={0: add_bias})
    x = np.arange(96, dtype=np.float32)
    out = np.zeros(3, np.float32)
    kernel(x, out, np.float32(0.5), threadgroups=(3, 1, 1), threads_per_threadgroup=(32, 1, 1),
           threadgroup_memory={0: 32 * 4})
    expected = x.reshape(3, 32).sum(axis=1) * 3 + (0.5 if add_bias else 0.0)
    np.testing.assert_allclose(out, expected)
    assert kernel.max_total_threads_per_threadgroup >= 32


def test_dispatch_threads_with_partial_threadgroup(backend_name):
    src = """
    #include <metal_stdlib>
    using namespace metal;
    kernel void fill(device uint* out [[buffer(0)]], constant uint& n [[buffer(1)]],
                     uint gid [[thread_position_in_grid]], uint tpg [[threads_per_threadgroup]]) {
        if (gid < n) out[gid] = tpg;
    }
    """
    kernel = gg.load_kernel(src, "fill")
    out = np.zeros(40, np.uint32)
    kernel(out, np.uint32(40), threads=(40, 1, 1), threads_per_threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(out, [32] * 32 + [8] * 8)
    if backend_name == "metal":  # GPUEndTime - GPUStartTime of the dispatch
        assert kernel.last_gpu_time is not None and kernel.last_gpu_time > 0
