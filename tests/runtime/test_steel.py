"""MLX's steel ``gemm`` (kernels/steel_gemm.metal) through gg.load_kernel on every backend.

Host parameters come from gemmglossary.mlx.steel (the pinned MLX's matmul.cpp restated);
this is the test that executes the steel headers the pages quote.
"""

from __future__ import annotations

import numpy as np
import pytest

import gemmglossary as gg
from gemmglossary.mlx import steel as mlx_steel


def _run(launch):
    kernel = gg.load_kernel(str(mlx_steel.source_path()), launch.host_name,
                            function_constants=launch.function_constants,
                            include_dirs=[str(d) for d in mlx_steel.include_dirs()])
    # {index: buffer}: parameters gated off by function constants get nothing
    kernel(launch.buffers, threadgroups=launch.threadgroups,
           threads_per_threadgroup=launch.threads_per_threadgroup)
    return launch.out


@pytest.mark.parametrize("shape", [(32, 32, 32), (45, 37, 20)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("transpose_b", [False, True])
def test_steel_gemm_matches_numpy(backend_name, shape, transpose_b):
    M, N, K = shape
    rng = np.random.default_rng(M + N + K)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (N, K)).astype(np.float32).T if transpose_b else \
        rng.uniform(-1, 1, (K, N)).astype(np.float32)
    out = _run(mlx_steel.plan(a, b))
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64), atol=1e-4)


def test_steel_gemm_axpby(backend_name):
    # M a multiple of BM: see the next test for why.
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (64, 24)).astype(np.float32)
    b = rng.uniform(-1, 1, (24, 50)).astype(np.float32)
    c = rng.uniform(-1, 1, (64, 50)).astype(np.float32)
    out = _run(mlx_steel.plan(a, b, c, alpha=2.0, beta=0.5))
    np.testing.assert_allclose(out, 2.0 * (a @ b) + 0.5 * c, atol=1e-4)


def test_steel_axpby_edge_rows_read_past_c(monkeypatch):
    """MLX's ``apply_epilogue_safe`` (steel/gemm/mma.h of the pinned release) masks C's columns but
    not its rows, so with M not a multiple of BM the edge threadgroup reads C past its
    last row (the stores are masked, the reads are not).  The emulator reports it."""
    from gemmglossary.emulator import OutOfBoundsError

    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (40, 24)).astype(np.float32)
    b = rng.uniform(-1, 1, (24, 50)).astype(np.float32)
    c = rng.uniform(-1, 1, (40, 50)).astype(np.float32)
    with pytest.raises(OutOfBoundsError, match=r"'C'.*mma\.h"):
        _run(mlx_steel.plan(a, b, c, alpha=2.0, beta=0.5))
