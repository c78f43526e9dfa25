"""Metal GEMM Glossary tooling.

``gemmglossary.load_kernel`` and ``gemmglossary.metal_kernel`` run Metal kernels on an
Apple GPU when there is one and on the CPU emulator everywhere else.
"""

from __future__ import annotations

__version__ = "0.1.0"


def load_kernel(path_or_source, name, **kwargs):
    """Compile kernel ``name`` from a .metal file or source string; see the runtime."""
    from .runtime import load_kernel as _load_kernel

    return _load_kernel(path_or_source, name, **kwargs)


def metal_kernel(*args, **kwargs):
    """Same signature and call as ``mx.fast.metal_kernel`` of the pinned mlx."""
    from .runtime import metal_kernel as _metal_kernel

    return _metal_kernel(*args, **kwargs)


def backend() -> str:
    """The backend kernels run on here: ``"metal"`` or ``"emulator"`` (see the runtime)."""
    from .runtime import backend as _backend

    return _backend()


__all__ = ["backend", "load_kernel", "metal_kernel", "__version__"]
