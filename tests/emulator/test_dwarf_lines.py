"""The line-table reader that replaces addr2line where there is none (macOS; issue #19):
DWARF 4 and 5, ELF and Mach-O (the file of a .dSYM bundle), checked against addr2line and
against the same code compiled for Linux."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import DataRaceError, OutOfBoundsError, build, cache, load_kernel
from gemmglossary.emulator.dwarf_lines import LineTable, line_rows, macho_sections

HERE = Path(__file__).parent
LINES = HERE / "macos" / "lines.cpp"
CLANG = shutil.which("clang++")
needs_clang = pytest.mark.skipif(CLANG is None, reason="needs clang++ (Xcode's compiler, and what macOS uses)")


def _symbols(so: Path) -> dict[str, int]:
    out = subprocess.run(["nm", str(so)], capture_output=True, text=True, check=True).stdout
    return {ln.split()[2]: int(ln.split()[0], 16) for ln in out.splitlines() if len(ln.split()) == 3}


@pytest.mark.parametrize("dwarf", [4, 5])
def test_lines_of_a_shared_object(tmp_path, dwarf):
    cxx, _ = build.compiler()
    so = tmp_path / "lines.so"
    subprocess.run([cxx, f"-gdwarf-{dwarf}", "-O0", "-shared", "-fPIC", str(LINES), "-o", str(so)], check=True)
    t = LineTable(so)
    sym = _symbols(so)
    square = next(a for n, a in sym.items() if "square" in n)
    assert t.locate(square) == f"{LINES}:3"  # the function's first instruction
    lines = {int(loc.rsplit(":", 1)[1]) for a in range(square, square + 64) if (loc := t.locate(a))}
    assert {3, 4, 5} <= lines, lines
    assert t.locate(10 ** 9) is None or not t.locate(10 ** 9).endswith("lines.cpp:0")


@needs_clang
def test_a_clang_kernel_agrees_with_addr2line():
    """Every address of a kernel's line table: our innermost line is addr2line's."""
    if shutil.which("addr2line") is None:
        pytest.skip("needs addr2line to compare with")
    os.environ["CXX"] = CLANG
    build.compiler.cache_clear()
    try:
        so = load_kernel(HERE / "kernels" / "diagnostics.metal", "oob_read").so
    finally:
        del os.environ["CXX"]
        build.compiler.cache_clear()
    t = LineTable(so)
    addrs = t._addrs[::7]
    out = subprocess.run(["addr2line", "-e", str(so), *map(hex, addrs)], capture_output=True, text=True).stdout
    for a, theirs in zip(addrs, out.splitlines()):
        theirs = theirs.split(" (discriminator")[0].strip()
        ours = t.locate(a)
        if ours is None:
            assert re.search(r":(\?|0)$", theirs), (hex(a), theirs)
        else:
            assert ours == theirs, hex(a)


@needs_clang
@pytest.mark.parametrize("symbolizer", ["addr2line", "dwarf"])
def test_reports_from_the_line_table_are_addr2lines(monkeypatch, symbolizer):
    """With clang++, what macOS gets (the line table) is what Linux gets (addr2line)."""
    monkeypatch.setenv("CXX", CLANG)
    monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_SYMBOLIZER", symbolizer)
    build.compiler.cache_clear()
    try:
        diag = HERE / "kernels" / "diagnostics.metal"
        with pytest.raises(DataRaceError) as race:
            load_kernel(diag, "tg_race_simple")(np.zeros(64, np.float32), threads=64, threads_per_threadgroup=64)
        with pytest.raises(OutOfBoundsError) as oob:
            load_kernel(diag, "oob_read")(np.zeros(8, np.float32), np.zeros(8, np.float32), threads=8,
                                          threads_per_threadgroup=8)
    finally:
        build.compiler.cache_clear()
    assert f"{diag}:74" in str(race.value) and f"{diag}:75" in str(race.value)
    assert oob.value.site == (str(diag), 68)


def _rows(obj: Path, sections) -> set[tuple[str, int]]:
    return {(Path(f).name, line) for _, f, line in line_rows(sections) if f is not None and line}


@needs_clang
@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_mach_o_debug_info_is_read(tmp_path, arch):
    """A Mach-O object (what a .dSYM holds) from clang for a Darwin target, no SDK needed."""
    macho = tmp_path / f"lines-{arch}.o"
    subprocess.run([CLANG, "-target", f"{arch}-apple-macos11", "-g", "-O0", "-c", str(LINES), "-o", str(macho)],
                   check=True)
    sections, base = macho_sections(macho.read_bytes())
    assert base == 0 and ".debug_line" in sections
    rows = _rows(macho, sections)
    assert {("lines.cpp", 4), ("lines.cpp", 14)} <= rows, rows
    if arch == "x86_64":  # the same code for Linux has the same lines
        elf = tmp_path / "lines-linux.so"  # linked: an ELF object's string offsets are relocations
        subprocess.run([CLANG, "-target", "x86_64-linux-gnu", "-g", "-O0", "-shared", "-fPIC", "-nostdlib",
                        str(LINES), "-o", str(elf)], check=True)
        from gemmglossary.emulator.dwarf_lines import elf_sections
        assert rows == _rows(elf, elf_sections(elf.read_bytes())[0])


@needs_clang
def test_a_dsym_bundle_is_found_and_moved_with_its_kernel(tmp_path):
    macho = tmp_path / "x.o"
    subprocess.run([CLANG, "-target", "arm64-apple-macos11", "-g", "-c", str(LINES), "-o", str(macho)], check=True)
    d = tmp_path / "entry"
    d.mkdir()
    tmp = d / ".kernel.so.123"
    tmp.write_bytes(b"a dylib")
    bundle = d / ".kernel.so.123.dSYM" / "Contents" / "Resources" / "DWARF"
    bundle.mkdir(parents=True)
    shutil.copy(macho, bundle / ".kernel.so.123")
    so, _ = cache.write_kernel_entry(d, tmp, {"kernels": {}})
    assert (d / "kernel.so.dSYM").is_dir() and not (d / ".kernel.so.123.dSYM").exists()
    t = LineTable.for_object(so)
    assert t.locate(0) == f"{LINES}:3"  # square() starts the object's __text
