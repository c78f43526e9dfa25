"""The emulator's macOS-specific code, compiled with clang for Darwin targets (no SDK is
needed for code that includes no system header; issue #19). What cannot be compiled
here (runtime.cpp needs Apple's system headers) is listed in docs/emulator.md."""

import shutil
import subprocess
from pathlib import Path

import pytest

from gemmglossary.emulator import build

CLANG = shutil.which("clang++")
pytestmark = pytest.mark.skipif(CLANG is None, reason="needs clang++ (it targets Darwin without an SDK)")
PROBE = '#include "context_switch.h"\nvoid* probe(void** a, void* b) { mslemu_switch(a, b); return (void*)&mslemu::fiber_initial_sp; }\n'


def _symbols(obj: Path) -> str:
    nm = shutil.which("llvm-nm") or shutil.which("nm")
    return subprocess.run([nm, str(obj)], capture_output=True, text=True).stdout


@pytest.mark.parametrize("target", ["arm64-apple-macos11", "x86_64-apple-macos10.15", "x86_64-linux-gnu",
                                    "aarch64-linux-gnu"])
def test_the_context_switch_assembles_for_elf_and_mach_o(tmp_path, target):
    src = tmp_path / "probe.cpp"
    src.write_text(PROBE)
    obj = tmp_path / "probe.o"
    r = subprocess.run([CLANG, "-target", target, "-std=c++17", "-O2", "-fPIC", "-nostdinc++", "-I",
                        str(build.RUNTIME_SRC.parent), "-c", str(src), "-o", str(obj)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    head = obj.read_bytes()[:4]
    if "apple" in target:
        assert head == b"\xcf\xfa\xed\xfe"  # Mach-O 64: the C symbol is _mslemu_switch
        assert "_mslemu_switch" in _symbols(obj)
    else:
        assert head == b"\x7fELF"
        assert " mslemu_switch" in _symbols(obj)


def test_the_worker_executable_compiles_for_darwin(tmp_path):
    """worker_main.cpp includes <dlfcn.h> and <cstdio>: without an SDK only its syntax is checked."""
    r = subprocess.run([CLANG, "-target", "arm64-apple-macos11", "-fsyntax-only", "-nostdinc", "-nostdinc++",
                        "-I", str(tmp_path), str(build.RUNTIME_SRC.parent / "worker_main.cpp")],
                       capture_output=True, text=True)
    # no SDK: the only errors allowed are the missing system headers
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert all("file not found" in ln for ln in errors), r.stderr
