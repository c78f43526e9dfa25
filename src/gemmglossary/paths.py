"""Where the project's files live.

The tooling runs from an editable install of this repository (both README commands
install it with ``pip install -e``), so the repository root is two levels above this
package. ``GEMMGLOSSARY_ROOT`` overrides it, e.g. for tests that work on a copy.
"""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    override = os.environ.get("GEMMGLOSSARY_ROOT")
    if override:
        return Path(override).resolve()
    return Path(__file__).resolve().parents[2]


def kernels_dir() -> Path:
    return project_root() / "kernels"


def vendor_dir() -> Path:
    """Include root of the materialized MLX headers (``#include "mlx/backend/..."``)."""
    return kernels_dir() / "vendor"


def docs_dir() -> Path:
    return project_root() / "docs"


def cache_dir() -> Path:
    """Per-user cache (compiled emulator kernels, ...)."""
    override = os.environ.get("GEMMGLOSSARY_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gemmglossary"
