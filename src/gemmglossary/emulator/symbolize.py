"""Source lines for the code addresses in the runtime's messages.

The runtime writes ``{{pc:<hex offset into the kernel's shared object>}}`` wherever a
diagnostic names a place in kernel code; this module replaces each with ``file:line`` of
the kernel source (or vendored header), skipping frames inside the emulator's own library.

Where addr2line exists (Linux), it answers, with every inlined frame. Elsewhere (macOS has
none) the compiler's line table is read directly (dwarf_lines.py); that is exact for
clang++, whose shim helpers keep no lines of their own. $GEMMGLOSSARY_EMULATOR_SYMBOLIZER
("addr2line" or "dwarf") chooses one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from . import build as _build
from .. import settings
from .dwarf_lines import DwarfError, LineTable

_PC = re.compile(r"\{\{pc:([0-9a-f]+)\}\}")
UNKNOWN = "an unknown location (no line information)"


def _is_library_frame(frame: str) -> bool:
    return str(_build.SHIM_DIR) in frame or "kernel.cpp:" in frame or "runtime.cpp:" in frame


def _has_line(frame: str) -> bool:
    """addr2line writes '??:0', '??:?', 'file:?' or 'file:0' when it knows no line."""
    file, _, line = frame.rpartition(":")
    return bool(file) and not file.startswith("??") and line.isdigit() and line != "0"


def _clean(frame: str) -> str:
    # a source string's name ("<source>") is relative: the debug info joins it to the
    # compiler's working directory
    return re.sub(r"^.*/(<[^/>]+>:\d+)$", r"\1", frame)


class Symbolizer:
    """Callable: message with {{pc:...}} markers -> message with source locations.

    `kernel` (e.g. "kernel 'k' (file:line)") names where the code is when the compiler kept
    no line for an instruction of the kernel's own translation unit."""

    def __init__(self, so: Path, kernel: str = ""):
        self.so = so
        self.kernel = kernel
        self._size = so.stat().st_size if so.exists() else 0
        self._table: LineTable | None = None

    @staticmethod
    def method() -> str:
        return settings.value("GEMMGLOSSARY_EMULATOR_SYMBOLIZER") or ("addr2line" if shutil.which("addr2line") else "dwarf")

    def __call__(self, msg: str) -> str:
        pcs = _PC.findall(msg)
        if not pcs:
            return msg
        frames = self._frames(pcs)
        return _PC.sub(lambda m: self._describe(m.group(1), frames.get(m.group(1), [])), msg)

    def locate(self, pc: str) -> tuple[str, int] | None:
        """(file, line) of a code offset, or None."""
        best = self._best(self._frames([pc]).get(pc, []))
        if best is None:
            return None
        file, _, line = best.rpartition(":")
        return file, int(line)

    @staticmethod
    def _best(frames: list[str]) -> str | None:
        """The innermost frame with a line in kernel source (inlined library helpers are skipped)."""
        for f in frames:
            if _has_line(f) and not _is_library_frame(f):
                return _clean(f)
        return None

    def _describe(self, pc: str, frames: list[str]) -> str:
        best = self._best(frames)
        if best:
            return best
        if int(pc, 16) >= self._size:
            return f"an address outside the kernel's code (offset 0x{pc}: a jump through a bad pointer?)"
        if any("runtime.cpp:" in f for f in frames):
            return "the emulator's runtime (in a barrier or simd-group function, or scheduling threads)"
        if self.kernel and any("kernel.cpp:" in f for f in frames):
            return f"a place in {self.kernel} for which the compiler kept no source line"
        return UNKNOWN

    def _frames(self, pcs: list[str]) -> dict[str, list[str]]:
        """{pc: [file:line of each inlined frame, innermost first]}."""
        if self.method() != "addr2line":
            return self._line_table(pcs)
        frames = self._addr2line(pcs)
        # addr2line (binutils 2.40) names the compiled file (kernel.cpp) for the rows of a
        # DWARF 5 line table that come before its first change of file, where the table's
        # file is the kernel's source: a fault in a kernel's first statements had no line.
        # The line table, read directly, has the row's own file. (-gdwarf-4 avoids the bug
        # too, at 40% more compile time.)
        misread = [pc for pc, fs in frames.items() if fs and fs[0].rpartition(":")[0].endswith("kernel.cpp")]
        if misread:
            for pc, row in self._line_table(misread).items():
                if row and not row[0].rpartition(":")[0].endswith("kernel.cpp"):
                    frames[pc] = row + frames[pc][1:]
        return frames

    def _line_table(self, pcs: list[str]) -> dict[str, list[str]]:
        """{pc: [file:line]}: the line table's one, innermost, frame."""
        if self._table is None:
            try:
                self._table = LineTable.for_object(self.so)
            except (OSError, DwarfError, IndexError, ValueError):  # no or unreadable debug info: no lines
                return {}
        out = {}
        for pc in pcs:
            loc = self._table.locate(int(pc, 16))
            out[pc] = [loc] if loc else []
        return out

    def _addr2line(self, pcs: list[str]) -> dict[str, list[str]]:
        locs: dict[str, list[str]] = {}
        try:
            out = subprocess.run(["addr2line", "-e", str(self.so), "-i", "-a", *[f"0x{p}" for p in pcs]],
                                 capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return locs
        cur = None
        for ln in out.splitlines():
            if ln.startswith("0x"):
                cur = f"{int(ln, 16):x}"
                locs.setdefault(cur, [])
            elif cur is not None:
                locs[cur].append(ln.split(" (discriminator")[0].strip())
        return locs
