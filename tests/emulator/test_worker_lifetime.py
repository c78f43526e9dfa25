"""Worker processes never outlive the launch that started them (issue #13 item 5): when
the caller is killed (SIGKILL, SIGTERM from a CI cancel or an IDE's stop button) they
stop within a fraction of a second, even with timeout=None; when the wait is interrupted
(Ctrl-C, pytest-timeout's SIGALRM) they are killed before the exception propagates."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import load_kernel

DIAG = Path(__file__).parent / "kernels" / "diagnostics.metal"
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from Linux's /proc")

# a caller that launches a kernel spinning forever, with no timeout, on 2 workers
CALLER = """
import sys, numpy as np
from gemmglossary.emulator import load_kernel
k = load_kernel(sys.argv[1], "spin")
print("launching", flush=True)
k(np.zeros(1, np.int32), np.zeros(1, np.int32), threadgroups=4, threads_per_threadgroup=1, timeout=None, workers=2)
"""


def _stat(pid: int):
    """(state, parent pid) of a process, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1])


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(int(d.name))
            if st and st[1] == pid and st[0] != "Z":
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] != "Z"


def _wait_for(cond, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@pytest.fixture(scope="module", autouse=True)
def compiled():
    load_kernel(DIAG, "spin")  # compile once, in this process, before the callers load it


@pytest.mark.parametrize("sig, env", [
    (signal.SIGKILL, {}),
    (signal.SIGTERM, {}),
    # the portable way (what macOS relies on): each worker's timer sees that its parent changed
    (signal.SIGKILL, {"GEMMGLOSSARY_EMULATOR_NO_PDEATHSIG": "1"}),
    # forked workers (GEMMGLOSSARY_EMULATOR_START=fork; spawned ones are the default)
    (signal.SIGKILL, {"GEMMGLOSSARY_EMULATOR_START": "fork"}),
    (signal.SIGKILL, {"GEMMGLOSSARY_EMULATOR_START": "fork", "GEMMGLOSSARY_EMULATOR_NO_PDEATHSIG": "1"}),
], ids=["SIGKILL", "SIGTERM", "SIGKILL-timer-only", "SIGKILL-forked-workers", "SIGKILL-forked-timer-only"])
def test_workers_stop_when_the_caller_is_killed(sig, env):
    caller = subprocess.Popen([sys.executable, "-c", CALLER, str(DIAG)], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, **env))
    try:
        assert caller.stdout.readline().strip() == "launching"
        assert _wait_for(lambda: len(_children(caller.pid)) == 2, 20), "the workers did not start"
        workers = _children(caller.pid)
        time.sleep(0.2)
        assert all(_alive(w) for w in workers), "the workers should spin until stopped"
        # spawned by default: the worker executable, not a copy of the caller
        spawned = env.get("GEMMGLOSSARY_EMULATOR_START", "spawn") == "spawn"
        names = {Path(f"/proc/{w}/comm").read_text().strip() for w in workers}
        assert all(n.startswith("worker-") == spawned for n in names), names
        caller.send_signal(sig)
        caller.wait(10)
        assert _wait_for(lambda: not any(_alive(w) for w in workers), 2.0), \
            f"workers {[w for w in workers if _alive(w)]} outlived their caller"
    finally:
        caller.kill()
        caller.wait()


def test_an_interrupted_wait_kills_the_workers():
    k = load_kernel(DIAG, "spin")

    def interrupt(signum, frame):
        raise RuntimeError("interrupted while waiting")

    before = set(_children(os.getpid()))  # (other tests may have left a browser driver running)
    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    t0 = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match="interrupted while waiting"):
            k(np.zeros(1, np.int32), np.zeros(1, np.int32), threadgroups=4, threads_per_threadgroup=1,
              timeout=None, workers=2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - t0 < 5
    assert set(_children(os.getpid())) - before == set(), "the workers were left running"
