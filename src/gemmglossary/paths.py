"""Where the project's files live.

The site's tooling runs from an editable install of this repository (both README commands
install it with ``pip install -e``), so the repository root is two levels above this
package. ``GEMMGLOSSARY_ROOT`` overrides it, e.g. for tests that work on a copy.

The emulator also runs from an installed wheel (``pip install gemmglossary``), with no
checkout: :func:`in_checkout` tells the two apart, and there the pins of the MLX headers a
``metal_kernel`` source includes are the wheel's copy of ``kernels/vendor.toml`` and the
headers are materialized into the user's cache (:func:`vendor_dir`).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import settings


#: two levels above this package (resolved once: the package does not move while it runs,
#: and callers ask for the root thousands of times in a build)
_CHECKOUT = Path(__file__).resolve().parents[2]


def project_root() -> Path:
    override = settings.value("GEMMGLOSSARY_ROOT")
    if override is not None:
        return override
    return _CHECKOUT


def kernels_dir() -> Path:
    return project_root() / "kernels"


#: The wheel's copy of ``kernels/vendor.toml`` (in a checkout, a symbolic link to it).
PACKAGED_PINS = Path(__file__).resolve().parent / "vendor.toml"


def in_checkout() -> bool:
    """Whether the project's files are here (a checkout, or the copy GEMMGLOSSARY_ROOT
    names), not only the installed package."""
    return settings.value("GEMMGLOSSARY_ROOT") is not None or (kernels_dir() / "vendor.toml").is_file()


def pins_file() -> Path:
    """The manifest of the pinned upstream files: ``kernels/vendor.toml`` in a checkout,
    the wheel's copy of it elsewhere."""
    return kernels_dir() / "vendor.toml" if in_checkout() else PACKAGED_PINS


def vendor_dir() -> Path:
    """Include root of the materialized MLX headers (``#include "mlx/backend/..."``):
    ``kernels/vendor/`` in a checkout; outside one, a folder of the user's cache named by
    the pins, so that another version of this package never meets files of an older pin."""
    if in_checkout():
        return kernels_dir() / "vendor"
    import hashlib

    pins = hashlib.sha256(PACKAGED_PINS.read_bytes()).hexdigest()[:16]
    return cache_dir() / "vendored" / pins


def docs_dir() -> Path:
    return project_root() / "docs"


def cache_dir() -> Path:
    """Per-user cache (compiled emulator kernels, ...), made if missing. A folder that cannot
    be made or written is a :class:`CacheUnusable` naming it, before anything is built."""
    override = settings.value("GEMMGLOSSARY_CACHE_DIR")
    if override is not None:
        return _usable(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return _usable(Path(base) / "gemmglossary")


class CacheUnusable(settings.SettingError):
    """The cache folder cannot be made or written: the user's environment, one line."""


_checked: set[Path] = set()


def _usable(folder: Path) -> Path:
    if folder not in _checked:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheUnusable(f"the cache folder {folder} cannot be made ({exc.strerror}); set "
                                f"GEMMGLOSSARY_CACHE_DIR to a folder you can write") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise CacheUnusable(f"the cache folder {folder} is not writable; set GEMMGLOSSARY_CACHE_DIR "
                                f"to a folder you can write")
        _checked.add(folder)
    return folder
