"""One process at a time: an advisory lock on a file, released by the system if its
holder dies (the compile cache, the coverage report, the test run's shared site)."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path


@contextlib.contextmanager
def exclusive(lock: Path):
    """Hold the lock file `lock` (made, with its folder, if missing) for the block."""
    lock = Path(lock)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
