"""The pinned MLX headers a ``metal_kernel`` source includes.

MLX compiles ``metal::utils() + source``: its kernels' ``utils.h``, and what that includes,
before the generated kernel. The emulator compiles the same text, so it needs those headers
of the pinned MLX (never the installed mlx's, whose version is the user's): they are
materialized by :mod:`gemmglossary.vendor` on first use, into ``kernels/vendor/`` in a
checkout and into the user's cache under an installed wheel.
"""

from __future__ import annotations

from pathlib import Path


def include_root() -> Path:
    """The include root of the pinned MLX headers, materialized if missing (MLX's only: the
    other pinned sources, llama.cpp's, are the site's)."""
    from .. import vendor

    pins = vendor.load_pins()
    return vendor.ensure(vendor.Pins(pins.path, (pins.mlx,)))


def version() -> str:
    """The MLX version whose ``mx.fast.metal_kernel`` the emulator reproduces: the pinned one."""
    from .. import vendor

    return vendor.load_pins().mlx.version
