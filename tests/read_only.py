"""Running a command in a read-only checkout, for the tests of what it does there.

As root (who writes through file permissions) the checkout is bind-mounted read-only in a
mount namespace of the command's own (``unshare -m``); as anyone else, its files are made
read-only for the command and given back their modes after it. Where neither can be done
the test is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest


def _can_mount() -> str:
    if not shutil.which("unshare"):
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind -o ro / / 2>&1 || mount -o remount,bind,ro / /"],
                           capture_output=True, text=True, timeout=30)
    return "" if probe.returncode == 0 else f"cannot make a read-only mount here: {probe.stdout.strip() or probe.stderr.strip()}"


@contextlib.contextmanager
def _read_only_modes(root: Path):
    modes = {}
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        modes[path] = path.stat().st_mode
        path.chmod(modes[path] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield
    finally:
        for path, mode in reversed(list(modes.items())):
            path.chmod(mode)


def run(root: Path, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``argv`` run with ``root`` read-only (as it would be in a read-only checkout)."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 600)
    if os.geteuid() == 0:
        why = _can_mount()
        if why:
            pytest.skip(why)
        script = 'mount --bind -o ro "$0" "$0" && exec "$@"'
        return subprocess.run(["unshare", "-m", "sh", "-c", script, str(root), *argv], **kwargs)
    with _read_only_modes(root):
        return subprocess.run(argv, **kwargs)
