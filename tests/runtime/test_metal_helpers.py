"""The pure-Python parts of the Metal backend: include inlining and scalar parameter types.

These run everywhere; the GPU calls themselves are the ``metal`` cases of the other
tests (skipped off Apple Silicon).
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmglossary import paths
from gemmglossary.metal.includes import IncludeError, inline_includes
from gemmglossary.msl.signature import scalar_parameter_types


def test_inline_quoted_includes_with_pragma_once_and_line_markers(tmp_path):
    inc = tmp_path / "inc"
    (inc / "sub").mkdir(parents=True)
    (inc / "a.h").write_text('#pragma once\n#include "sub/b.h"\nint a();\n')
    (inc / "sub" / "b.h").write_text('#pragma once\nint b();\n')
    src = '#include <metal_stdlib>\n#include "a.h"\n#include "sub/b.h"\n#include "missing.h"\nkernel void k() {}\n'
    out = inline_includes(src, [inc], filename="k.metal")
    lines = out.split("\n")
    assert lines[0] == "#include <metal_stdlib>"  # angle brackets left to the compiler
    assert out.count("int b();") == 1  # pragma once honoured across files
    assert out.count("int a();") == 1
    assert "#pragma once" not in out
    assert f'#line 1 "{(inc / "a.h").resolve()}"' in lines
    assert '#line 3 "k.metal"' in lines  # back in the main file after a.h
    assert '#include "missing.h"' in lines  # unresolved: the compiler reports it
    assert lines[-2] == "kernel void k() {}"


def test_include_search_order_prefers_the_including_files_directory(tmp_path):
    (tmp_path / "here").mkdir()
    (tmp_path / "there").mkdir()
    (tmp_path / "here" / "x.h").write_text("int here;\n")
    (tmp_path / "there" / "x.h").write_text("int there;\n")
    out = inline_includes('#include "x.h"\n', [tmp_path / "there"], base_dir=tmp_path / "here")
    assert "int here;" in out and "int there;" not in out


def test_recursive_include_is_an_error(tmp_path):
    (tmp_path / "a.h").write_text('#include "b.h"\n')
    (tmp_path / "b.h").write_text('#include "a.h"\n')
    with pytest.raises(IncludeError, match="recursive"):
        inline_includes('#include "a.h"\n', [tmp_path])


def test_inlines_the_vendored_steel_gemm_completely():
    steel = paths.kernels_dir() / "steel_gemm.metal"
    if not steel.exists():
        pytest.skip("kernels/steel_gemm.metal not present")
    out = inline_includes(steel.read_text(), [paths.vendor_dir()], base_dir=steel.parent, filename=str(steel))
    remaining = [ln for ln in out.split("\n") if ln.strip().startswith("#include \"")]
    assert remaining == []
    assert "struct BlockLoader" in out or "BlockLoader" in out


def test_scalar_parameter_types():
    src = """
    // kernel void decoy(constant float& x [[buffer(0)]]) {}
    struct P { uint a; };
    [[kernel, max_total_threads_per_threadgroup(128)]]
    void k(device const float* A [[buffer(0)]],
           constant uint&   M [[buffer(1)]],
           constant float & alpha [[buffer(2)]],
           const constant half& h [[buffer(3)]],
           constant P& p [[buffer(4)]],
           constant bool& flag [[buffer(5)]],
           uint2 tid [[thread_position_in_grid]]) {}
    """
    assert scalar_parameter_types(src, "k") == {
        1: np.dtype(np.uint32), 2: np.dtype(np.float32), 3: np.dtype(np.float16), 5: np.dtype(np.bool_)
    }
    assert scalar_parameter_types(src, "nope") == {}


def test_scalar_parameter_types_of_first_party_kernels():
    tiled = paths.kernels_dir() / "matmul_tiled.metal"
    if not tiled.exists():
        pytest.skip("kernels/matmul_tiled.metal not present")
    assert scalar_parameter_types(tiled.read_text(), "matmul_tiled") == {
        3: np.dtype(np.uint32), 4: np.dtype(np.uint32), 5: np.dtype(np.uint32)
    }


def test_features_used_names_the_file_and_line_through_includes(tmp_path):
    from gemmglossary.metal.device import features_used

    (tmp_path / "mma.h").write_text("// simdgroup_float8x8 in a comment does not count\n"
                                    "inline void f() {\n  simdgroup_half8x8 m;\n}\n")
    src = '#include <metal_simdgroup_matrix>\nconstant char* s = "simdgroup_matrix";\n#include "mma.h"\nkernel void k() {}\n'
    out = inline_includes(src, [tmp_path], filename="k.metal")
    ((feature, file, line, ident),) = features_used(out, "k.metal")
    assert (feature.what, feature.family, file, line, ident) == (
        "simdgroup matrices", "Apple7", str((tmp_path / "mma.h").resolve()), 3, "simdgroup_half8x8")
    assert features_used("kernel void k(device float* x [[buffer(0)]]) { x[0] = simd_sum(x[1]); }") == []


def test_buffer_parameter_types():
    from gemmglossary.metal.parameters import BFLOAT, buffer_parameters, function_constants

    src = """
    // constant int in_a_comment [[function_constant(9)]];
    constant ushort mode [[function_constant(3)]];
    constant bool named [[function_constant(FLAG_INDEX)]];
    kernel void k(device const float* A [[buffer(0)]], constant uint & n [[buffer(1)]],
                  device metal::atomic<int>* c [[buffer(2)]], const device bfloat16_t* b [[buffer(3)]],
                  device T* t [[buffer(4)]], device float4x4* m [[buffer(5)]],
                  uint i [[thread_position_in_grid]]) {}
    """
    params = buffer_parameters(src, "k")
    assert {i: (p.name, p.declared, p.dtype, p.reference) for i, p in params.items()} == {
        0: ("A", "device const float*", np.dtype(np.float32), False),
        1: ("n", "constant uint&", np.dtype(np.uint32), True),
        2: ("c", "device metal::atomic<int>*", np.dtype(np.int32), False),
        3: ("b", "const device bfloat16_t*", BFLOAT, False),
        4: ("t", "device T*", None, False),
        5: ("m", "device float4x4*", np.dtype(np.float32), False),
    }
    assert [(c.name, c.index, c.type_name, c.dtype) for c in function_constants(src)] == [
        ("mode", 3, "ushort", np.dtype(np.uint16)), ("named", None, "bool", np.dtype(np.bool_))]
