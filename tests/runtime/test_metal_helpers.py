"""The pure-Python parts of the Metal backend: parameter types and the features a kernel uses.

These run everywhere; the GPU calls themselves are the ``metal`` cases of the other
tests (skipped off Apple Silicon).
"""

from __future__ import annotations

import numpy as np

from gemmglossary import paths
from gemmglossary.metal.parameters import BFLOAT, buffer_parameters, function_constants
from gemmglossary.msl.includes import inline_includes


def test_buffer_parameters_of_first_party_kernels():
    tiled = paths.kernels_dir() / "matmul_tiled.metal"
    params = buffer_parameters(tiled.read_text(), "matmul_tiled")
    assert {i: (p.declared, p.dtype, p.reference) for i, p in params.items()} == {
        0: ("device const float*", np.dtype(np.float32), False),
        1: ("device const float*", np.dtype(np.float32), False),
        2: ("device float*", np.dtype(np.float32), False),
        3: ("constant uint&", np.dtype(np.uint32), True),
        4: ("constant uint&", np.dtype(np.uint32), True),
        5: ("constant uint&", np.dtype(np.uint32), True),
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
