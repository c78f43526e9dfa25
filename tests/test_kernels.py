"""The kernel table (gemmglossary.kernels) against what each kernel file says.

The table holds only the dispatch rule of each kernel's header comment; everything else
is read from the file. These tests check the header comments against the table and the
file, so the comment a reader sees, the table the tools use and the kernel agree.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmglossary import paths
from gemmglossary.kernels import KERNELS, MATVEC_KERNELS, BindError, GemmKernel, cdiv
from gemmglossary.msl.expressions import evaluate

_TPG = re.compile(r"threadgroup size (?:exactly )?(\S+) x (\S+) x (\S+)")
_GRID = re.compile(r"dispatchThreadgroups\(ceil\(N/(\w+)\), ceil\(M/(\w+)\), 1\)")


def header(spec) -> str:
    """The kernel's leading comment, without the comment markers."""
    lines = []
    for line in spec.source().splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return " ".join(lines)


def test_every_first_party_gemm_kernel_is_in_the_table():
    # steel_gemm.metal and mlx_*.metal only instantiate MLX's kernels (gemmglossary.mlx plans them);
    # outside the float32 GEMM table, each run by its own test: nax_matmul.metal (Metal 4, half
    # inputs, tests/emulator/test_tensor_ops.py), matmul_simd_half.metal (16-bit inputs,
    # tests/emulator/test_half_precision_kernels.py), splitk_sum.metal and swizzled_copy.metal
    # (not GEMMs: the solutions of exercises/split_k and threadgroup_swizzle), reductions.metal
    # (three kernels whose dispatch is the caller's choice, as its header says;
    # tests/emulator/test_decode_kernels.py)
    outside = ("steel_gemm", "nax_matmul", "matmul_simd_half", "splitk_sum", "swizzled_copy", "reductions")
    files = {p.stem for p in paths.kernels_dir().glob("*.metal")
             if p.stem not in outside and not p.stem.startswith("mlx_")}
    assert files == set(KERNELS) | set(MATVEC_KERNELS)


@pytest.mark.parametrize("defines", [None, {"WM": 1, "WN": 4, "TM": 2, "TN": 1}], ids=["defaults", "-D"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_dispatch_line_of_the_header_comment_is_the_tables(name, defines):
    spec = KERNELS[name]
    text = header(spec)
    tpg, grid = _TPG.search(text), _GRID.search(text)
    assert tpg and grid, f"{spec.path}: no 'threadgroup size X x Y x Z' / 'dispatchThreadgroups(...)' line"
    c = spec.constants(defines).values
    d = spec.dispatch(100, 70, 9, defines)
    assert d.threads_per_threadgroup == tuple(evaluate(e.strip("()"), c) for e in tpg.groups())
    bn, bm = (evaluate(e, c) for e in grid.groups())
    assert d.threadgroups == (cdiv(70, bn), cdiv(100, bm), 1)
    if spec.max_total_threads(defines) is not None:  # the bound is the threadgroup it is written for
        assert spec.max_total_threads(defines) == np.prod(d.threads_per_threadgroup)


@pytest.mark.parametrize("name", ["tiled_gemm", "tiled_gemm_db"])
def test_the_params_comment_of_tiled_gemm_is_its_struct(name):
    spec = KERNELS[name]
    text = header(spec)
    m = re.search(r"numpy: (dtype\(\[.*?\]\))", text)
    assert m, "the header comment shows the numpy dtype of GemmParams"
    assert eval(m.group(1), {"dtype": np.dtype}) == spec.params_dtype
    table = re.findall(r"offset\s+(\d+)\s+(uint|float)\s+(\w+)", text)
    assert len(table) == len(spec.params_dtype.names) == 8
    for offset, ctype, field in table:
        dt, at = spec.params_dtype.fields[field]
        assert (at, dt) == (int(offset), np.dtype("<u4" if ctype == "uint" else "<f4")), field
    assert f"{spec.params_dtype.itemsize} bytes, no padding" in text


def test_defaults_are_the_ifndef_lines():
    assert KERNELS["tiled_gemm"].defaults() == {"WM": 2, "WN": 2, "TM": 4, "TN": 4, "BK": 16}
    assert KERNELS["matmul_simd_blocked"].defaults() == {"WM": 2, "WN": 2, "TM": 4, "TN": 2, "BK": 16}
    assert KERNELS["matmul_tiled"].defaults() == {}


def test_arguments_follow_the_signature():
    A, B, C = np.zeros((5, 3), np.float32), np.zeros((3, 4), np.float32), np.zeros((5, 4), np.float32)
    a, b, c, *scalars = KERNELS["matmul_simd"].arguments(A, B, C)
    assert a is A and b is B and c is C
    assert scalars == [5, 4, 3] and all(s.dtype == np.uint32 for s in scalars)
    *arrays, params = KERNELS["tiled_gemm"].arguments(A, B, C, alpha=2.0, beta=0.5)
    assert params.dtype == KERNELS["tiled_gemm"].params_dtype
    assert params.tolist() == (5, 4, 3, 3, 4, 4, 2.0, 0.5)
    sub = KERNELS["tiled_gemm"].arguments(np.zeros((9, 8), np.float32), B, np.zeros((9, 6), np.float32), K=3)
    assert sub[-1].tolist()[:6] == (9, 4, 3, 8, 4, 6)  # a block of wider arrays: lda, ldc
    with pytest.raises(BindError, match="computes C = A\\*B"):
        KERNELS["matmul_tiled"].arguments(A, B, C, beta=1.0)


def test_a_parameter_the_table_cannot_fill_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "odd.metal").write_text(
        "kernel void odd(device float* A [[buffer(0)]], constant float& bias [[buffer(1)]]) {}\n")
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(tmp_path))
    spec = GemmKernel("odd", tile=("BM", "BN"), threadgroup=(32, 1, 1))
    with pytest.raises(BindError, match=r"odd.metal:1: cannot bind parameter 'constant float & bias'"):
        spec.arguments(np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1)))
    with pytest.raises(KeyError, match="BM is not a constant"):
        spec.dispatch(1, 1, 1)


_MATVEC_GRID = re.compile(r"dispatchThreadgroups\(ceil\((\w+)/(\w+)\), 1, 1\)")
_MATVEC_TPG = re.compile(r"threadgroup size (\w+) x 1 x 1")


@pytest.mark.parametrize("defines", [None, {"ROWS": 2, "SIMDGROUPS": 1}], ids=["defaults", "-D"])
@pytest.mark.parametrize("name", sorted(MATVEC_KERNELS))
def test_the_dispatch_line_of_a_matvec_kernel_is_the_tables(name, defines):
    spec = MATVEC_KERNELS[name]
    text = header(spec)
    tpg, grid = _MATVEC_TPG.search(text), _MATVEC_GRID.search(text)
    assert tpg and grid, f"{spec.path}: no 'threadgroup size X x 1 x 1' / 'dispatchThreadgroups(ceil(M/R), 1, 1)' line"
    c = spec.constants(defines).values
    d = spec.dispatch(70, defines)
    assert d.threads_per_threadgroup == (c[tpg.group(1)], 1, 1) == (spec.max_total_threads(defines), 1, 1)
    assert d.threadgroups == (cdiv(70, c[grid.group(2)]), 1, 1)
    assert c[grid.group(2)] == c["ROWS"] * c["SIMDGROUPS"] and c[tpg.group(1)] == 32 * c["SIMDGROUPS"]


def test_matvec_arguments_follow_the_signature():
    A, x, y = np.zeros((3, 5), np.float32), np.zeros(5, np.float32), np.zeros(3, np.float32)
    a, xx, yy, M, K = MATVEC_KERNELS["gemv"].arguments(A=A, x=x, y=y, M=3, K=5)
    assert a is A and xx is x and yy is y and (M, K) == (3, 5) and M.dtype == K.dtype == np.uint32
    with pytest.raises(BindError, match=r"gemv.metal:\d+: no value for parameter 'constant uint & K'"):
        MATVEC_KERNELS["gemv"].arguments(A=A, x=x, y=y, M=3)
    with pytest.raises(BindError, match="no parameter\\(s\\) N"):
        MATVEC_KERNELS["gemv"].arguments(A=A, x=x, y=y, M=3, K=5, N=2)
