"""A scratch git repository for tests of the commands that clone the committed HEAD
(`gemmglossary bench suite`, `bench serve`)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def commit_all(root: Path, message: str = "tiny") -> Path:
    """`root` made a git repository whose one commit holds every file in it."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)
    return root
