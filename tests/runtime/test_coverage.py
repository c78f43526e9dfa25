"""Every kernel file a page quotes is executed by a test (issue 5, item 4).

The quoted files come from the excerpt lock.  A first-party kernel counts as executed
when it is in the GEMM table (gemmglossary.kernels), which
test_load_kernel.py runs on every backend, or is nax_matmul.metal (Metal 4 only), which
tests/emulator/test_tensor_ops.py runs; an MLX header counts when kernels/steel_gemm.metal
or kernels/mlx_steel_gemm_nax.metal includes it (transitively, as the preprocessor answers,
``#if`` honoured), which test_steel_gemm.py and test_nax_gemm.py run, or by an
instantiation file of :data:`MLX_FAMILY_TESTS`, which its family's test runs; a vendored
llama.cpp kernel file counts, with what it includes, when :data:`LLAMA_FILE_TESTS` names
the test module that runs its kernels against numpy.
"""

from __future__ import annotations

import json

from gemmglossary import paths
from gemmglossary.exercises import all_exercises
from gemmglossary.mlx import nax as mlx_nax
from gemmglossary.mlx import steel as mlx_steel
from gemmglossary.kernels import KERNELS
from gemmglossary.llama import source as llama_source
from gemmglossary.msl.includes import included_files


def quoted_files() -> set:
    lock = json.loads((paths.project_root() / "excerpts.lock.json").read_text())
    return {(paths.project_root() / e["file"]).resolve() for e in lock["excerpts"]}


#: MLX instantiation files (kernels/mlx_*.metal) and the test module that runs their kernels
#: against numpy; each counts as executed with everything it includes.
MLX_FAMILY_TESTS = {
    "mlx_steel_splitk.metal": "tests/mlx/test_steel_splitk.py",
    "mlx_gemv.metal": "tests/mlx/test_gemv.py",
    "mlx_quantized.metal": "tests/mlx/test_quantized.py",
    "mlx_reduce.metal": "tests/mlx/test_reduce.py",
    "mlx_steel_gather.metal": "tests/mlx/test_gather.py",
}


#: llama.cpp's kernel files (its ggml-metal/kernels/ folder) and the test module that runs
#: their kernels as llama.cpp's host dispatches them.
LLAMA_FILE_TESTS = {
    "mul_mm.metal": "tests/llama/test_llama_mul_mat.py",
    "mul_mv.metal": "tests/llama/test_llama_mul_mat.py",
    "softmax.metal": "tests/llama/test_llama_rows.py",
    "norm.metal": "tests/llama/test_llama_rows.py",
    "binbcast.metal": "tests/llama/test_llama_rows.py",
}


def executed_files() -> set:
    executed = {spec.path.resolve() for spec in KERNELS.values()}
    executed.add((paths.kernels_dir() / "nax_matmul.metal").resolve())
    for family in (mlx_steel, mlx_nax):
        source = family.source_path()
        executed.add(source.resolve())
        executed |= included_files(source, family.include_dirs())
    for source, test in MLX_FAMILY_TESTS.items():
        path = paths.kernels_dir() / source
        assert (paths.project_root() / test).is_file(), f"{test} (which runs {source}) is missing"
        executed.add(path.resolve())
        executed |= included_files(path, mlx_steel.include_dirs())
    for name, test in LLAMA_FILE_TESTS.items():
        path = llama_source.metal_path(f"kernels/{name}")
        assert (paths.project_root() / test).is_file(), f"{test} (which runs {name}) is missing"
        executed.add(path.resolve())
        executed |= included_files(path, llama_source.include_dirs())
    executed |= {p.resolve() for e in all_exercises() for p in e.kernel_files}
    return executed


def test_every_quoted_kernel_file_is_executed():
    quoted = quoted_files()
    assert quoted, "the excerpt lock quotes no files"
    missing = sorted(str(p.relative_to(paths.project_root())) for p in quoted - executed_files())
    assert not missing, f"quoted on a page but executed by no test: {missing}"


def test_the_check_can_fail():
    # A quoted file outside both sets is reported.
    assert (paths.kernels_dir() / "not_a_kernel.metal").resolve() not in executed_files()
