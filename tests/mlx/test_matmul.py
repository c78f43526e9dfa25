"""gemmglossary.mlx.matmul: MLX's host decisions for ``a @ b``, case by case.

Every expected value below was worked out by hand from mlx/backend/metal/matmul.cpp at the
pinned tag (gemmglossary.mlx.matmul.MLX_TAG), not computed by the module, so a wrong branch or
threshold in the restatement fails here. The last tests tie it to gemmglossary.mlx.steel,
which plans the fused kernel's buffers: both must agree on the kernel name, the grid and
the threadgroup, and the configuration the host picks must run on the emulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary.mlx import matmul as mm
from gemmglossary.mlx import steel

G15, S15, D15 = mm.Device("g", 15), mm.Device("s", 15), mm.Device("d", 15)
G17, S17 = mm.Device("g", 17), mm.Device("s", 17)

# (dtype, device, transposes, M, N, K, batch) -> (BM, BN, BK, WM, WN)
TILE_CASES = [
    ("float32", G15, "nn", 1024, 1024, 1024, 1, (64, 64, 16, 2, 2)),   # small: float takes the default
    ("float32", G15, "nt", 1024, 1024, 1024, 1, (64, 32, 32, 2, 2)),
    ("float32", G15, "tn", 1024, 1024, 1024, 1, (64, 64, 16, 2, 2)),
    ("float16", G15, "nn", 1024, 1024, 1024, 1, (64, 64, 16, 1, 2)),
    ("bfloat16", mm.Device("p", 15), "tt", 64, 64, 64, 1, (64, 64, 16, 1, 2)),
    ("float16", G15, "nt", 1024, 1024, 1024, 1, (64, 32, 32, 2, 2)),
    ("complex64", G15, "nt", 1024, 1024, 1024, 1, (64, 32, 8, 4, 1)),  # complex checked first
    ("float32", S15, "nt", 1024, 1024, 1024, 1, (64, 64, 16, 2, 2)),   # medium: always the default
    ("float16", S15, "nn", 256, 256, 256, 1, (64, 64, 16, 2, 2)),
    ("float16", mm.Device("x", 15), "nn", 256, 256, 256, 1, (64, 64, 16, 2, 2)),
    ("float32", D15, "nn", 1024, 1024, 1024, 1, (64, 64, 16, 2, 2)),   # large device, large matmul
    ("float32", D15, "nn", 1024, 1023, 1024, 1, (64, 32, 32, 2, 2)),   # one element short of 2^20
    ("float32", D15, "nt", 256, 256, 256, 1, (32, 64, 16, 1, 2)),
    ("float16", D15, "nn", 256, 256, 256, 1, (64, 64, 16, 1, 2)),
    ("float16", D15, "nt", 256, 256, 256, 1, (64, 32, 32, 2, 2)),
    ("float16", D15, "nn", 1024, 1024, 1024, 1, (64, 64, 16, 1, 2)),   # 2·max(M, N) > K
    ("float16", D15, "nn", 1024, 1024, 4096, 1, (32, 64, 16, 1, 2)),   # nn with large K
    ("float16", D15, "nt", 1024, 1024, 4096, 1, (64, 32, 32, 2, 2)),   # nt with large K
    ("float16", D15, "nn", 512, 512, 2048, 4, (32, 64, 16, 1, 2)),     # batch counts: 4·512² = 2^20
    ("float16", D15, "nn", 512, 512, 2048, 3, (64, 64, 16, 1, 2)),
    ("complex64", D15, "nn", 256, 256, 256, 1, (64, 64, 16, 1, 2)),   # "not float32" branch
]


@pytest.mark.parametrize("dtype,device,code,M,N,K,batch,expected", TILE_CASES)
def test_regular_tile_configuration(dtype, device, code, M, N, K, batch, expected):
    c = mm.regular_config(dtype, device, code[0] == "t", code[1] == "t", M, N, K, batch)
    assert c.as_tuple == expected


def test_default_float32_configuration_is_a_4x4_block_of_fragments():
    c = mm.regular_config("float32", G15, False, False, 4096, 4096, 4096)
    assert (c.tm, c.tn, c.threads) == (4, 4, 128)


def test_regular_configs_lists_every_outcome_of_the_macro():
    listed = set(mm.regular_configs())
    reached = {mm.regular_config(dt, mm.Device(letter, 15), ta, tb, M, N, K)
               for dt in mm.DTYPES for letter in "gpsdx" for ta in (0, 1) for tb in (0, 1)
               for M, N, K in [(16, 16, 16), (1024, 1024, 16), (1024, 1024, 8192), (2048, 4096, 64)]}
    assert listed == reached
    assert {c.threads for c in listed} == {128, 64}


NAX_CASES = [
    (G17, 4096, 4096, 4096, (128, 128, 512, 4, 4)),
    (S17, 4096, 4096, 4096, (64, 128, 256, 2, 4)),
    (mm.Device("c", 17), 4096, 4096, 9000, (64, 128, 64, 2, 4)),  # K ≥ 8192 and K > M + N
    (mm.Device("d", 17), 4096, 4096, 8192, (64, 128, 256, 2, 4)),  # K = M + N: not more
]


@pytest.mark.parametrize("device,M,N,K,expected", NAX_CASES)
def test_nax_tile_configuration(device, M, N, K, expected):
    c = mm.nax_config(device, M, N, K)
    assert c.as_tuple == expected and c.fragment == 16


@pytest.mark.parametrize("device,available", [
    (mm.Device("g", 16), False), (G17, True), (mm.Device("p", 17), False), (mm.Device("p", 18), True),
    (mm.Device("s", 17, nax_runtime=False), False)])
def test_nax_availability(device, available):
    assert device.nax_available is available


@pytest.mark.parametrize("name,letter,generation", [
    ("applegpu_g15s", "s", 15), ("applegpu_g13g", "g", 13), ("x9ad", "d", 90), ("ab", "b", 0)])
def test_architecture_name_is_parsed_like_mlx(name, letter, generation):
    assert mm.Device.from_architecture(name) == mm.Device(letter, generation)


# (problem, device, tf32) -> (kernel, config or None, threadgroups, threads per threadgroup)
ROUTE_CASES = [
    (mm.Problem(1, 1, 4096), G15, True, ("dot_product", None, (1, 1, 1), (512, 1, 1))),
    (mm.Problem(1, 1, 20000), G15, True, ("dot_product", None, (2, 1, 1), (512, 1, 1))),
    (mm.Problem(1, 1, 64, "complex64"), G15, True, ("gemv", None, (1, 1, 1), (32, 1, 1))),
    (mm.Problem(1, 4096, 4096), G15, True, ("gemv_t", None, (16, 1, 1), (32, 16, 1))),
    (mm.Problem(1, 4096, 8192), G15, True, ("gemv_t", None, (8, 1, 1), (32, 16, 1))),
    (mm.Problem(1, 300, 64), G15, True, ("gemv_t", None, (10, 1, 1), (32, 2, 1))),
    (mm.Problem(4096, 1, 4096), G15, True, ("gemv", None, (128, 1, 1), (32, 1, 8))),
    (mm.Problem(4096, 1, 64), G15, True, ("gemv", None, (128, 1, 1), (32, 1, 1))),
    (mm.Problem(100, 1, 4096), G15, True, ("gemv", None, (25, 1, 1), (32, 8, 1))),
    (mm.Problem(3, 1, 100), G15, True, ("gemv", None, (3, 1, 1), (32, 8, 1))),
    (mm.Problem(8, 4096, 4096, "float16", False, True), G15, True, ("gemv_wide", None, (2, 1024, 1), (32, 2, 1))),
    (mm.Problem(5, 100000, 4096, "bfloat16", False, True), G15, True, ("gemv_wide", None, (1, 25000, 1), (32, 4, 1))),
    (mm.Problem(8, 48, 64, "float16", False, True), G15, True, ("gemv_wide", None, (2, 12, 1), (32, 4, 1))),
    (mm.Problem(8, 4096, 4096, "float16", False, True), mm.Device("g", 14), True,
     ("splitk", (16, 32, 16, 2, 2), (128, 1, 2), (32, 2, 2))),
    (mm.Problem(16, 4096, 4096, "float16", False, True), G15, True,
     ("splitk", (16, 32, 16, 2, 2), (128, 1, 2), (32, 2, 2))),
    (mm.Problem(8, 4096, 4094, "float16", False, True), G15, True,
     ("fused", (64, 32, 32, 2, 2), (128, 1, 1), (32, 2, 2))),
    (mm.Problem(256, 256, 256), G15, True, ("splitk", (32, 32, 16, 2, 2), (8, 8, 2), (32, 2, 2))),
    (mm.Problem(64, 64, 4096), G15, True, ("splitk", (32, 32, 16, 2, 2), (2, 2, 32), (32, 2, 2))),
    (mm.Problem(33, 20, 1000), G15, True, ("splitk", (16, 16, 16, 2, 2), (2, 3, 32), (32, 2, 2))),
    (mm.Problem(1024, 512, 4096), S15, True, ("splitk", (32, 32, 16, 2, 2), (16, 32, 2), (32, 2, 2))),
    (mm.Problem(1024, 512, 4096), G15, True, ("fused", (64, 64, 16, 2, 2), (8, 16, 1), (32, 2, 2))),
    (mm.Problem(512, 512, 500), G15, True, ("fused", (64, 64, 16, 2, 2), (8, 8, 1), (32, 2, 2))),
    (mm.Problem(16, 16, 127), G15, True, ("fused", (64, 64, 16, 2, 2), (1, 1, 1), (32, 2, 2))),
    (mm.Problem(16, 16, 128), G15, True, ("splitk", (16, 16, 16, 2, 2), (1, 1, 8), (32, 2, 2))),
    (mm.Problem(64, 64, 4096, batch=2), G15, True, ("fused", (64, 64, 16, 2, 2), (1, 1, 2), (32, 2, 2))),
    (mm.Problem(64, 64, 4096, batch=4, shared_b=True), G15, True,
     ("splitk", (32, 32, 16, 2, 2), (2, 8, 16), (32, 2, 2))),
    (mm.Problem(64, 64, 4096, transpose_a=True, batch=4, shared_b=True), G15, True,
     ("fused", (64, 64, 16, 2, 2), (1, 1, 4), (32, 2, 2))),
    (mm.Problem(33, 130, 17), G15, True, ("fused", (64, 64, 16, 2, 2), (3, 1, 1), (32, 2, 2))),
    (mm.Problem(33, 130, 17), D15, True, ("fused", (64, 32, 32, 2, 2), (5, 1, 1), (32, 2, 2))),
    (mm.Problem(4096, 4096, 4096, "float16"), G17, True,
     ("fused_nax", (128, 128, 512, 4, 4), (64, 16, 1), (32, 4, 4))),
    (mm.Problem(4096, 4096, 4096), G17, True, ("fused_nax", (128, 128, 512, 4, 4), (64, 16, 1), (32, 4, 4))),
    (mm.Problem(4096, 4096, 4096), G17, False, ("fused", (64, 64, 16, 2, 2), (64, 64, 1), (32, 2, 2))),
    (mm.Problem(4096, 4096, 4096, "complex64"), G17, True, ("fused", (64, 32, 8, 4, 1), (128, 64, 1), (32, 1, 4))),
    (mm.Problem(4096, 4096, 4096, "bfloat16"), S17, True,
     ("fused_nax", (64, 128, 256, 2, 4), (128, 16, 1), (32, 4, 2))),
    (mm.Problem(200, 300, 400, "float16"), G17, True, ("fused_nax", (128, 128, 512, 4, 4), (3, 2, 1), (32, 4, 4))),
    (mm.Problem(64, 64, 4096, "float16"), G17, True, ("splitk_nax", (64, 64, 256, 2, 2), (2, 1, 1), (32, 2, 2))),
    (mm.Problem(2048, 2048, 8192, "float16"), G17, True,
     ("splitk_nax", (128, 128, 512, 4, 4), (512, 1, 1), (32, 4, 4))),
    (mm.Problem(100, 100, 1000, "float16"), G17, True, ("splitk_nax", (64, 64, 256, 2, 2), (8, 1, 1), (32, 2, 2))),
    (mm.Problem(2048, 2048, 4096, "float16"), G17, True,
     ("fused_nax", (128, 128, 512, 4, 4), (32, 8, 1), (32, 4, 4))),
]


@pytest.mark.parametrize("problem,device,tf32,expected", ROUTE_CASES,
                         ids=[f"{p.M}x{p.N}x{p.K}-{p.dtype}-{d.letter}{d.generation}-{i}"
                              for i, (p, d, _, _) in enumerate(ROUTE_CASES)])
def test_route(problem, device, tf32, expected):
    kernel, config, threadgroups, threads = expected
    r = mm.route(problem, device, tf32)
    assert (r.kernel, r.config.as_tuple if r.config else None, r.threadgroups,
            r.threads_per_threadgroup) == (kernel, config, threadgroups, threads)


def test_splitk_partitions():
    s = mm.splitk_plan(256, 256, 256)  # 16 K steps over 8·8 tiles of 32: next_power_of_2(0) = 0 -> 2
    assert (s.partitions, s.k_iterations, s.partition_size) == (2, 8, 128)
    s = mm.splitk_plan(64, 64, 4096)   # 256 // 4 = 64 -> capped at 32
    assert (s.partitions, s.k_iterations, s.partition_size) == (32, 8, 128)
    s = mm.splitk_plan(33, 20, 1000)   # 62 // 2 = 31 -> 32; 62 // 32 = 1 step per partition
    assert (s.partitions, s.k_iterations, s.accum_threads_per_threadgroup) == (32, 1, (16, 32, 1))
    s = mm.splitk_plan(300, 300, 300)  # 18 // 100 = 0 -> 2
    assert s.partitions == 2 and s.accum_threads_per_threadgroup == (32, 32, 1)


def test_nax_splitk_partitions():
    s = mm.nax_splitk_plan(100, 100, 1000)
    assert (s.partitions, s.partition_size, s.k_iterations, s.swizzle_log) == (2, 500, 1, 0)
    s = mm.nax_splitk_plan(2048, 2048, 8192)
    assert (s.partitions, s.partition_size, s.k_iterations, s.swizzle_log) == (2, 4096, 8, 1)
    s = mm.nax_splitk_plan(600, 600, 3000)
    assert (s.config.as_tuple, s.partitions, s.partition_size) == ((64, 64, 256, 2, 2), 2, 2048)


@pytest.mark.parametrize("n,expected", [(0, 0), (1, 1), (2, 2), (3, 4), (64, 64), (65, 128)])
def test_next_power_of_2(n, expected):
    assert mm.next_power_of_2(n) == expected


@pytest.mark.parametrize("dims,expected", [
    ((256, 256, 1), (32, 32, 1)), ((3, 5, 1), (2, 4, 1)), ((1, 1, 1), (1, 1, 1)),
    ((2048, 1, 1), (1024, 1, 1)), ((1, 1, 4096), (1, 1, 1024)), ((5, 1000, 1), (4, 256, 1)),
    ((20, 33, 1), (16, 32, 1))])
def test_block_dims(dims, expected):
    assert mm.block_dims(*dims) == expected


@pytest.mark.parametrize("tiles_m,device,expected", [
    (3, G17, 0), (4, G17, 1), (1, S17, 2), (1, mm.Device("c", 17), 2), (100, G15, 0)])
def test_swizzle(tiles_m, device, expected):
    if device.nax_available:
        assert mm.nax_swizzle_log(tiles_m, device) == expected
    else:
        assert mm.regular_swizzle_log(tiles_m, device) == expected


def test_swizzle_folds_the_grid():
    assert mm.fused_grid(1000, 500, 1, (64, 64, 16, 2, 2), 2) == ((32, 4, 1), (32, 2, 2))


def test_kernel_names():
    assert mm.fused_kernel_name(False, True, "float16", "float16", (64, 32, 32, 2, 2)) == \
        "steel_gemm_fused_nt_float16_float16_bm64_bn32_bk32_wm2_wn2"
    r = mm.route(mm.Problem(4096, 4096, 4096, "float16", True, False), G17)
    assert r.kernel_name == "steel_gemm_fused_nax_tn_float16_float16_bm128_bn128_bk512_wm4_wn4"
    assert mm.route(mm.Problem(33, 20, 1000), G15).kernel_name == \
        "steel_gemm_splitk_nn_float32_float32_bm16_bn16_bk16_wm2_wn2_MN_naligned_K_naligned"
    assert mm.route(mm.Problem(1, 4096, 4096), G15).kernel_name == \
        "gemv_t_float32_bm1_bn16_sm8_sn4_tm4_tn4_nc0_axpby0"


@pytest.mark.parametrize("rows,cols,threads,expected", [
    (64, 16, 128, (8, 2, 64, 1)), (16, 64, 128, (8, 8, 16, 1)), (64, 32, 128, (16, 2, 64, 1)),
    (32, 16, 128, (4, 4, 32, 1)), (64, 16, 64, (16, 1, 64, 1)), (64, 8, 128, (4, 2, 64, 1))])
def test_block_loader(rows, cols, threads, expected):
    s = mm.block_loader(rows, cols, threads)
    assert (s.n_reads, s.tcols, s.trows, s.passes) == expected


def test_every_loader_of_every_host_configuration_loads_in_one_pass():
    configs = set(mm.regular_configs()) | {mm.splitk_plan(M, N, 4096).config
                                           for M in (20, 64) for N in (20, 64)}
    for c in configs:
        for ta in (False, True):
            for tb in (False, True):
                for loader in mm.gemm_loaders(c, ta, tb):
                    assert loader.passes == 1 and loader.trows == loader.rows, (c, ta, tb, loader)


def test_threadgroup_memory():
    # (64·(16+4) + 16·(64+4)) floats: both tiles padded by 16 bytes a row.
    assert mm.threadgroup_bytes(mm.TileConfig(64, 64, 16, 2, 2), "float32") == (64 * 20 + 16 * 68) * 4
    assert mm.threadgroup_bytes(mm.TileConfig(64, 64, 16, 2, 2), "float16", True, True) == \
        (16 * 72 + 64 * 24) * 2


@pytest.mark.parametrize("bad", [
    lambda: mm.Problem(0, 1, 1), lambda: mm.Problem(1, 1, 1, "int8"), lambda: mm.Device("gg", 15),
    lambda: mm.Device("g", 100), lambda: mm.regular_config("float32", G15, False, False, 1, 0, 1),
    lambda: mm.rule_url("nope"), lambda: mm.block_loader(4, 4, 128)])
def test_bad_input_is_an_error(bad):
    with pytest.raises(mm.HostError):
        bad()


def test_rule_lines_are_ordered_ranges():
    for name, (start, end) in mm.LINES.items():
        assert 0 < start <= end, name
    assert mm.rule_url("tile_macro") == (
        f"https://github.com/ml-explore/mlx/blob/{mm.MLX_TAG}/mlx/backend/metal/matmul.cpp#L90-L171")


# --------------------------------------------------------------------------- steel.py agrees

def _operands(M, N, K, dtype, batch=()):
    rng = np.random.default_rng(M * 7 + N)
    return (rng.uniform(-1, 1, (*batch, M, K)).astype(dtype),
            rng.uniform(-1, 1, (*batch, K, N)).astype(dtype))


@pytest.mark.parametrize("problem", [mm.Problem(33, 130, 17), mm.Problem(64, 128, 16, "float16"),
                                     mm.Problem(40, 70, 20, batch=3), mm.Problem(100, 72, 50, "float16")])
def test_steel_plans_the_dispatch_route_chooses(problem):
    r = mm.route(problem, S15)  # class s: the 64×64×16, 2×2 configuration steel_gemm.metal instantiates
    assert r.kernel == "fused" and r.config.as_tuple in steel.CONFIGS
    dtype = np.float32 if problem.dtype == "float32" else np.float16
    batch = (problem.batch,) if problem.batch > 1 else ()
    a, b = _operands(problem.M, problem.N, problem.K, dtype, batch)
    launch = steel.plan(a, b, config=r.config.as_tuple)
    assert (launch.host_name, launch.threadgroups, launch.threads_per_threadgroup) == \
        (r.kernel_name, r.threadgroups, r.threads_per_threadgroup)
    assert launch.buffers[4]["swizzle_log"] == r.swizzle_log


def test_the_configuration_route_chooses_runs_on_the_emulator():
    from gemmglossary.emulator import load_kernel

    problem = mm.Problem(70, 90, 40)
    r = mm.route(problem, S15)
    a, b = _operands(70, 90, 40, np.float32)
    launch = steel.plan(a, b, config=r.config.as_tuple)
    kernel = load_kernel(steel.source_path(), launch.host_name,
                         function_constants=launch.function_constants,
                         include_dirs=steel.include_dirs())
    kernel(launch.buffers, threadgroups=launch.threadgroups,
           threads_per_threadgroup=launch.threads_per_threadgroup)
    np.testing.assert_allclose(launch.out, a.astype(np.float64) @ b, atol=1e-4, rtol=1e-5)
