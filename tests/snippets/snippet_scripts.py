"""Running a snippet as a reader does (``python snippets/<name>.py``), for the snippet tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def script_env(**extra) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    env.update(extra)
    return env


def run_script(path: Path, **env) -> subprocess.CompletedProcess:
    """Run a snippet as a reader does."""
    return subprocess.run(
        [sys.executable, str(path)], cwd=ROOT, env=script_env(**env),
        capture_output=True, text=True, timeout=900,
    )
