"""Source lines for the code addresses in the runtime's messages.

The runtime writes ``{{pc:<hex offset into the kernel's shared object>}}`` wherever a
diagnostic names a place in kernel code; this module replaces each with ``file:line`` of
the kernel source (or vendored header), skipping frames inside the emulator's own library.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from . import build as _build

_PC = re.compile(r"\{\{pc:([0-9a-f]+)\}\}")
UNKNOWN = "an unknown location (no line information)"


def _is_library_frame(frame: str) -> bool:
    return "??" in frame or str(_build.SHIM_DIR) in frame or "kernel.cpp:" in frame or "runtime.cpp:" in frame


class Symbolizer:
    """Callable: message with {{pc:...}} markers -> message with source locations."""

    def __init__(self, so: Path):
        self.so = so

    def __call__(self, msg: str) -> str:
        pcs = _PC.findall(msg)
        if not pcs:
            return msg
        frames = self._frames(pcs)
        return _PC.sub(lambda m: self._best(frames.get(m.group(1), [])), msg)

    @staticmethod
    def _best(frames: list[str]) -> str:
        """The innermost frame in kernel source (inlined library helpers are skipped)."""
        for f in frames:
            if not _is_library_frame(f):
                return f
        return UNKNOWN

    def _frames(self, pcs: list[str]) -> dict[str, list[str]]:
        """{pc: [file:line of each inlined frame, innermost first]} from addr2line."""
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
