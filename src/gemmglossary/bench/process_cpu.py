"""The CPU seconds of one process tree, on a machine other people use too.

The machine's own counters (``/proc/stat``) count everyone's work; on a shared machine
they say how busy it was, not what the measured command cost. Here the command runs in a
cgroup of its own (cgroup v1's ``cpuacct`` controller, where the kernel offers it and we
may make one: root on Linux): every process it starts is counted, however it was
started (chromium outlives the Playwright driver that launched it; ipykernels are
started by jupyter_client, emulator workers by posix_spawn), and nobody else's. Where there is
no such cgroup, the command's own children, as ``getrusage`` counts them, stand in, and
the report says so.

While the command runs, a sampler reads each of its processes' CPU time from
``/proc/<pid>/stat`` a few times a second and sums it by program (:func:`program`), for
the table of where the seconds went. A process that lives less than a sampling period
is missed or undercounted, so the table's total is below the cgroup's; the difference is
printed as "unsampled".
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
#: Seconds between two readings of the tree's processes.
SAMPLE_PERIOD = 0.2
#: Seconds the processes a command left running are given to end before its CPU is read.
LINGER = 15.0


def program(comm: str, cmdline: list[str]) -> str:
    """The row a process's CPU is added to: the compiler, the browser, or which Python."""
    if comm in ("cc1plus", "cc1", "as", "ld", "ld.gold", "collect2", "g++", "gcc", "c++", "clang", "clang++",
                "lto-wrapper", "gcov"):
        return "g++ (compile, assemble, link, gcov)"
    if re.fullmatch(r"worker-[0-9a-f]+", comm):  # emulator/workers.py's spawned worker executable
        return "emulator workers (kernel launches)"
    if comm.startswith(("chromium", "chrome")) or any("chromium" in a for a in cmdline[:1]):
        return "chromium"
    if comm in ("node",) or any("playwright" in a for a in cmdline[:2]):
        return "playwright driver"
    text = " ".join(cmdline[:6])
    if "ipykernel" in text:
        return "ipykernel (snippets)"
    if "mkdocs" in text:
        return "mkdocs build"
    if "zensical" in text:
        return "zensical"
    if re.search(r"\bpip\b", text):
        return "pip"
    if comm.startswith("python") or "python" in text:
        return "python (pytest and the other Python processes)"
    return comm


@dataclass
class ProcessTreeCPU:
    """The CPU of the processes started through :meth:`join` (call it in the child, before
    exec) between :meth:`start` and :meth:`stop`."""

    busy: float = 0.0
    source: str = ""
    by_program: dict[str, float] = field(default_factory=dict)
    #: processes of the tree still running a few seconds after the command ended
    leftovers: int = 0
    _group: Path | None = field(default=None, repr=False)
    _seen: dict = field(default_factory=dict, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> None:
        try:
            group = CPUACCT / f"gemmglossary-bench-{os.getpid()}-{time.monotonic_ns()}"
            group.mkdir()
        except OSError:
            self._group = None
        else:
            self._group = group
        self._thread = threading.Thread(target=self._sample, name="cpu-sampler", daemon=True)
        self._thread.start()

    def join(self) -> None:
        """In the child (``preexec_fn``): enter the cgroup."""
        if self._group is not None:
            (self._group / "cgroup.procs").write_text(str(os.getpid()))

    def _pids(self) -> list[int]:
        if self._group is None:
            return []
        try:
            return [int(p) for p in (self._group / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def _read(self, pid: int) -> None:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        key = (pid, fields[19])  # the start time tells a reused pid apart
        self._seen[key] = (program(comm, [a.decode(errors="replace") for a in cmdline if a]), ticks)

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_PERIOD):
            for pid in self._pids():
                self._read(pid)

    def stop(self, children_cpu: float) -> None:
        """After the command ended: wait up to :data:`LINGER` seconds for what it left running,
        then count. `children_cpu`: the command's children as getrusage counts them (the fallback)."""
        deadline = time.monotonic() + LINGER
        while self._pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        tick = os.sysconf("SC_CLK_TCK")
        totals: dict[str, float] = {}
        for name, ticks in self._seen.values():
            totals[name] = totals.get(name, 0.0) + ticks / tick
        self.by_program = dict(sorted(totals.items(), key=lambda kv: -kv[1]))
        if self._group is None:
            self.busy, self.source = children_cpu, "getrusage, children only"
            return
        self.busy = int((self._group / "cpuacct.usage").read_text()) / 1e9
        self.source = "cgroup cpuacct"
        self._remove()

    def _remove(self) -> None:
        self.leftovers = len(self._pids())
        for pid in self._pids():  # still running: back to the root group, so this one can go
            try:
                (CPUACCT / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass
        try:
            self._group.rmdir()
        except OSError:
            pass
