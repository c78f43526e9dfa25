"""Generated figures cached on disk, keyed by everything they are computed from.

A figure's key hashes its name and arguments, the source of the code that draws it and
runs the kernels (the figures, emulator, kernels and msl packages of gemmglossary, and
``mlx/`` for MLX's host choices), and the content of every kernel file it may read:
``kernels/*.metal``, ``kernels/vendor.toml`` (which pins MLX's headers by sha256) and the
test kernels a figure is given by path. Change any of them and the figure is recomputed;
otherwise a build reuses it without compiling or running anything.

Entries live in ``.cache/figures/`` of the project (git-ignored); entries not read for
:data:`MAX_AGE_DAYS` are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import lru_cache
from pathlib import Path

from ..file_lock import mark_used
from ..paths import project_root
from .base import Figure

MAX_AGE_DAYS = 30
#: Packages of gemmglossary whose code can change a figure.
PACKAGES = ("figures", "emulator", "msl", "mlx", "vendor")
#: Single modules of gemmglossary whose code can change a figure.
MODULES = ("kernels.py", "paths.py")


def cache_dir() -> Path:
    return project_root() / ".cache" / "figures"


def _package_root() -> Path:
    return Path(__file__).resolve().parent.parent


@lru_cache(maxsize=1)
def code_hash() -> str:
    """Hash of the code that generates figures (computed once per process)."""
    h = hashlib.sha256()
    root = _package_root()
    files = [root / m for m in MODULES]
    for pkg in PACKAGES:
        files += sorted(p for p in (root / pkg).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for p in files:
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def inputs_hash(extra: list[Path] = ()) -> str:
    """Hash of the kernel files figures read (not cached: kernels change during `mkdocs serve`)."""
    h = hashlib.sha256()
    kernels = project_root() / "kernels"
    files = sorted(kernels.glob("*.metal")) + [kernels / "vendor.toml"] + sorted(extra)
    for p in files:
        if p.is_file():
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def key(name: str, args: dict[str, str], extra: list[Path] = ()) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([name, sorted(args.items())]).encode())
    h.update(code_hash().encode())
    h.update(inputs_hash(extra).encode())
    return h.hexdigest()[:32]


def load(k: str) -> Figure | None:
    path = cache_dir() / f"{k}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        figure = Figure.from_json(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    mark_used(path)  # read: keep it
    return figure


def store(k: str, figure: Figure) -> None:
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{k}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(figure.to_json()), encoding="utf-8")
    os.replace(tmp, folder / f"{k}.json")


def prune(now: float | None = None) -> int:
    """Remove entries not read for MAX_AGE_DAYS; how many went."""
    folder = cache_dir()
    if not folder.is_dir():
        return 0
    limit = (now or time.time()) - MAX_AGE_DAYS * 86400
    removed = 0
    for p in folder.glob("*.json"):
        try:
            if p.stat().st_mtime < limit:
                p.unlink()
                removed += 1
        except OSError:
            pass
    return removed
