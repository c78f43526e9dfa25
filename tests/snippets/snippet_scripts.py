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


def run_script(path: Path, *, record: Path | None = None, **env) -> subprocess.CompletedProcess:
    """Run a snippet as a reader does; with ``record``, through record_inputs.py."""
    argv = [str(path)] if record is None else [str(Path(__file__).with_name("record_inputs.py")), str(path), str(record)]
    return subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=script_env(**env),
        capture_output=True, text=True, timeout=900,
    )
