"""MLX's fused steel GEMM with a threadgroup swizzle whose folded grid overhangs the
tiles: the threadgroups past the last tile row take the kernel's early exit
(steel_gemm_fused.h, quoted by the barriers and threadgroup-swizzle entries), which no
regular dispatch reaches (MLX's regular swizzle_log is always 0). One of the coverage
run's modules (gemmglossary.coverage.collect.MODULES)."""

from __future__ import annotations

import numpy as np

from gemmglossary.emulator import load_kernel
from gemmglossary.mlx import matmul
from gemmglossary.mlx import steel as mlx_steel


def test_swizzle_with_an_overhanging_grid_matches_numpy():
    config = matmul.TileConfig(*mlx_steel.CONFIGS[0])
    M, N, K = 3 * config.bm, config.bn, 2 * config.bk  # 3 tile rows, folded by 2: 4 rows of threadgroups
    rng = np.random.default_rng(16)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    launch = mlx_steel.plan_fused(a, b, config=config, swizzle_log=1)
    assert launch.threadgroups[1] * 2 > -(-M // config.bm)  # the grid overhangs: some threadgroups exit early
    kernel = load_kernel(mlx_steel.source_path(), launch.host_name, function_constants=launch.function_constants,
                         include_dirs=mlx_steel.include_dirs())
    kernel(launch.buffers, threadgroups=launch.threadgroups, threads_per_threadgroup=launch.threads_per_threadgroup)
    np.testing.assert_allclose(launch.out, a.astype(np.float64) @ b.astype(np.float64), atol=1e-4, rtol=1e-5)
