"""Files that several processes share: an advisory lock for one process at a time,
released by the system if its holder dies (the compile cache, the coverage report, the
test run's shared site, the exercises' status), and a write that every reader sees whole
or not at all."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
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


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file of this writer's own in the same
    folder, renamed over `path`: a reader sees the old file or the new one, never part of
    one, whoever else writes it at the same time. A file that was there keeps its
    permissions; a new one is readable by all (0644), as open() leaves a file under the
    usual umask."""
    path = Path(path)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def mark_used(path: Path) -> None:
    """Record that a cached file was just used (its modification time, which pruning reads
    to keep what is used). Only a record: where the cache cannot be written (a read-only
    checkout) the file is used all the same."""
    try:
        os.utime(path)
    except OSError:
        pass
