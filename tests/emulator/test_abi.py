"""The interface between the emulator's C++ and Python sides is read from one header
(shim/mslemu_abi.h) and checked against the compiled layout at load."""

import ctypes
import subprocess

import pytest

from gemmglossary.emulator import build, load_kernel
from gemmglossary.emulator.abi import HEADER, Abi, AbiMismatch, abi
from gemmglossary.emulator.kernel import _lib

SRC = "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* o [[buffer(0)]]) { o[0] = 1.0f; }\n"


@pytest.fixture(scope="module")
def lib():
    return _lib(load_kernel(SRC, "k").so)


def test_the_header_matches_the_compiled_layout(lib):
    abi().check_layout(lib, "kernel.so")  # also done by every load; here it must not raise


@pytest.mark.parametrize("edit, names", [
    # a field moved: Python would write `workers` where C++ reads `oob_reads`
    (("FIELD(int32_t, oob_reads)", "FIELD(int32_t, workers)"), "MslemuLaunch.oob_reads"),
    # a field's type changed on one side only
    (("FIELD(double, timeout)", "FIELD(int64_t, timeout)"), "MslemuLaunch.timeout"),
    # a size constant changed on one side only
    (("MSLEMU_MSG_BYTES = 16384", "MSLEMU_MSG_BYTES = 16000"), "sizeof(MslemuResult)"),
])
def test_a_mismatch_is_refused_naming_the_field(lib, edit, names):
    text = HEADER.read_text()
    old, new = edit
    if "oob_reads" in old:  # swap the two lines
        text = text.replace("FIELD(int32_t, workers)", "@@").replace(old, new).replace("@@", old)
    else:
        text = text.replace(old, new)
    assert text != HEADER.read_text()
    with pytest.raises(AbiMismatch, match=r"out of step") as e:
        Abi(text).check_layout(lib, "kernel.so")
    assert names in str(e.value)


def test_an_unknown_field_type_is_refused():
    text = HEADER.read_text().replace("FIELD(double, timeout)", "FIELD(float, timeout)")
    with pytest.raises(AbiMismatch, match="'float' is not one abi.py knows"):
        Abi(text)


def test_enum_values_are_the_compilers(tmp_path):
    """abi.py's reading of every enumerator (implicit values included) is what C++ sees."""
    names = sorted(abi().constants)
    prog = tmp_path / "enums.cpp"
    prog.write_text('#include <cstdio>\n#include "mslemu_abi.h"\nint main() {\n'
                    + "".join(f'  std::printf("%s %lld\\n", "{n}", (long long)mslemu::{n});\n' for n in names) + "}\n")
    cxx, _ = build.compiler()
    exe = tmp_path / "enums"
    subprocess.run([cxx, "-std=c++17", "-I", str(build.SHIM_DIR), str(prog), "-o", str(exe)], check=True)
    out = dict(ln.split() for ln in subprocess.run([str(exe)], capture_output=True, text=True, check=True)
               .stdout.splitlines())
    assert {n: int(v) for n, v in out.items()} == abi().constants
    assert abi()["OP_SIMD_BARRIER"] == 100 and abi()["P_TPITG"] == abi()["P_TPIG"] + 1


def test_ctypes_structures_come_from_the_header():
    launch = abi().structs["MslemuLaunch"]
    assert [f for f, _ in launch._fields_][:3] == ["ntg", "grid", "tptg"]
    assert launch.buf.size == ctypes.sizeof(ctypes.c_void_p) * abi()["MSLEMU_MAX_BUFFERS"]
