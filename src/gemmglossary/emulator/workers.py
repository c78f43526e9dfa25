"""The worker processes of a launch: started, waited for, and merged into one result.

Every launch runs in child processes, so a crash in kernel code never ends the caller.
How they start (``GEMMGLOSSARY_EMULATOR_START``):

- ``spawn`` (the default, on every platform): a small worker executable
  (cpp/worker_main.cpp, compiled once per compiler) is started with ``posix_spawn`` and
  loads the kernel itself. Its cost does not depend on the caller, where a fork copies
  the caller's page tables and then pays a fault for each page either side writes: a
  process that holds much memory (a test session with hundreds of modules, a notebook
  with large arrays) forks slowly. `gemmglossary bench emulator` prints both; on 7
  December a launch of a tiny kernel from a process holding 300 MB more of Python
  objects cost 32 ms of CPU forked and 5 ms spawned (a pytest process of this suite
  holds about 300 MB), and from a small process about 5 ms either way. On macOS it is
  also the only safe way: a process that has loaded Apple's frameworks (PyObjC is
  imported to look for a Metal device) may not run after ``fork()`` without ``exec()``:
  the Objective-C runtime and libdispatch hold state a forked child cannot use, and
  Apple documents only async-signal-safe calls as safe there, which the runtime's
  diagnostics (snprintf, allocation) are not. ``OBJC_DISABLE_INITIALIZE_FORK_SAFETY``
  would only silence one of the runtime's checks, not make the child safe, so it is
  not used.
- ``fork`` (Linux): the kernel's runtime forks the workers (``mslemu_fork_workers``); they
  share the caller's memory map and run only the emulator's own C++ code before
  ``_exit``. Kept for comparison (tests/emulator/test_spawn.py runs both).

The launch, the results and the buffers live in one shared region, backed by a file
descriptor (memfd on Linux, an unlinked temporary file elsewhere) so that a spawned worker
can map it too. Python waits for the workers (pidfd on Linux, kqueue on macOS, else
polling ``waitpid``), so Ctrl-C, SIGTERM and pytest-timeout interrupt the wait; the
workers are then killed. Each worker also stops by itself when the caller is gone
(PR_SET_PDEATHSIG on Linux, and on every platform a 0.1 s timer that checks getppid()).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from . import build as _build
from .. import settings
from . import cache as _cache
from .abi import abi
from .errors import CompileError

WORKER_SRC = Path(__file__).resolve().parent / "cpp" / "worker_main.cpp"


def start_method() -> str:
    """'fork' or 'spawn' ($GEMMGLOSSARY_EMULATOR_START, else spawn)."""
    return settings.value("GEMMGLOSSARY_EMULATOR_START") or "spawn"


class Region:
    """Shared memory backed by a file descriptor (so that a spawned process can map it)."""

    def __init__(self, size: int):
        size = max(size, mmap.PAGESIZE)
        if hasattr(os, "memfd_create"):
            self.fd = os.memfd_create("mslemu-launch", os.MFD_CLOEXEC)
        else:
            with tempfile.TemporaryFile(prefix="mslemu-launch-") as f:  # unlinked at once on POSIX
                self.fd = os.dup(f.fileno())
        os.ftruncate(self.fd, size)
        self.size = size
        self.mm = mmap.mmap(self.fd, size)
        self._anchor = ctypes.c_char.from_buffer(self.mm)
        self.base = ctypes.addressof(self._anchor)

    def close(self) -> None:
        self._anchor = None
        try:
            self.mm.close()
        except BufferError:  # a ctypes view still exported: the map goes with its last user
            pass
        os.close(self.fd)


def worker_executable() -> Path:
    """The spawn-mode worker, compiled once per compiler and emulator version (cached)."""
    cxx, ver = _build.compiler()
    import hashlib

    key = hashlib.sha256((_build.shim_hash() + cxx + ver).encode()).hexdigest()[:16]
    exe = _build.cache_root() / f"worker-{key}"
    if _cache.read_file_entry(exe):
        return exe
    tmp = exe.with_name(f".{exe.name}.{os.getpid()}")
    r = subprocess.run([cxx, "-O1", "-o", str(tmp), str(WORKER_SRC), "-ldl"], capture_output=True, text=True)
    if r.returncode:
        raise CompileError("the emulator's worker executable failed to compile:\n" + r.stderr[-4000:])
    return _cache.write_file_entry(exe, tmp)


def start(lib: ctypes.CDLL, launch, region: Region, so: Path) -> list[int]:
    """Start launch.workers processes; their pids."""
    n = launch.workers
    if start_method() == "fork":
        pids = (ctypes.c_int32 * n)()
        if lib.mslemu_fork_workers(ctypes.byref(launch), pids) < 0:
            raise OSError("fork failed: cannot start the emulator's worker processes")
        return list(pids)
    exe = str(worker_executable())
    symbol = launch.entry_symbol.decode()
    target = 3 if region.fd != 3 else 4  # dup2 onto itself would leave close-on-exec set
    pids = []
    try:
        for i in range(n):
            pids.append(os.posix_spawn(exe, [exe, str(so), symbol, str(target), str(region.size), str(i)], os.environ,
                                       file_actions=[(os.POSIX_SPAWN_DUP2, region.fd, target)]))
    except BaseException:
        kill(pids)
        raise
    return pids


def kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def wait(pids: list[int], limit: float | None) -> list[int] | None:
    """The wait status of each worker, or None if they outlived `limit` seconds (then they
    are killed). Interrupts (KeyboardInterrupt, a signal handler's exception) kill them too."""
    status: dict[int, int] = {}
    deadline = None if limit is None else time.monotonic() + limit
    try:
        if hasattr(os, "pidfd_open"):
            _wait_pidfd(pids, status, deadline)
        elif hasattr(select, "kqueue"):
            _wait_kqueue(pids, status, deadline)
        else:
            _wait_polling(pids, status, deadline)
    except BaseException:
        kill([p for p in pids if p not in status])
        raise
    if len(status) < len(pids):
        kill([p for p in pids if p not in status])
        return None
    return [status[p] for p in pids]


def _remaining(deadline):
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _reap(pid: int, status: dict) -> None:
    _, st = os.waitpid(pid, 0)
    status[pid] = st


def _wait_pidfd(pids, status, deadline):
    fds = {}
    try:
        for pid in pids:
            try:
                fds[os.pidfd_open(pid)] = pid
            except OSError:  # no pidfd (old kernel, seccomp): poll waitpid instead
                for fd in fds:
                    os.close(fd)
                fds = {}
                return _wait_polling(pids, status, deadline)
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        while len(status) < len(pids):
            left = _remaining(deadline)
            if left == 0.0:
                return
            for fd, _ in poller.poll(None if left is None else max(1, int(left * 1000))):
                poller.unregister(fd)
                _reap(fds[fd], status)
    finally:
        for fd in fds:
            os.close(fd)


def _wait_kqueue(pids, status, deadline):  # macOS
    kq = select.kqueue()
    try:
        events = [select.kevent(pid, select.KQ_FILTER_PROC, select.KQ_EV_ADD | select.KQ_EV_ONESHOT,
                                select.KQ_NOTE_EXIT) for pid in pids]
        for ev in events:
            try:
                kq.control([ev], 0, 0)
            except ProcessLookupError:  # exited already: a zombie waitpid reaps at once
                _reap(ev.ident, status)
        while len(status) < len(pids):
            left = _remaining(deadline)
            if left == 0.0:
                return
            for ev in kq.control(None, len(pids), left):
                if ev.ident not in status:
                    _reap(ev.ident, status)
    finally:
        kq.close()


def _wait_polling(pids, status, deadline):
    # back off from 20 us to 2 ms: short launches return quickly, long ones cost no CPU
    delay = 20e-6
    while len(status) < len(pids):
        for pid in pids:
            if pid not in status:
                r, st = os.waitpid(pid, os.WNOHANG)
                if r == pid:
                    status[pid] = st
        if len(status) == len(pids) or _remaining(deadline) == 0.0:
            return
        time.sleep(delay)
        delay = min(delay * 2, 2e-3)


def describe_exit(res, st: int) -> None:
    """A worker that died without writing its result gets one saying how it ended."""
    a = abi()
    if os.WIFSIGNALED(st):
        res.status = a["E_CRASH"]
        res.sig = os.WTERMSIG(st)
        res.msg = f"kernel process died with signal {res.sig} ({signal.strsignal(res.sig)})".encode()
    elif os.WIFEXITED(st) and os.WEXITSTATUS(st) != 0 and res.status <= 0:
        res.status = a["E_GENERIC"]
        res.msg = f"kernel process exited with status {os.WEXITSTATUS(st)}".encode()
    elif res.status < 0:
        res.status = a["E_GENERIC"]
        res.msg = b"kernel process ended without a result"


def merge(results: list) -> dict:
    """One report from the workers': the error of the lowest-numbered failing threadgroup,
    the first warning of each kind, so it does not depend on the number of workers."""
    failing = [r for r in results if r.status != 0]
    best = min(failing, key=lambda r: r.err_tg) if failing else None
    first = lambda field: next((getattr(r, field) for r in results if getattr(r, field)), b"")  # noqa: E731
    return {
        "status": best.status if best else 0,
        "msg": best.msg if best else b"",
        "warn_msg": next((r.warn_msg for r in results if r.warn), b""),
        "oob_msg": first("oob_msg"),
        "uninit_msg": first("uninit_msg"),
    }
