"""What the figures read from the first-party kernel files (through gemmglossary.kernels)."""

from __future__ import annotations

from typing import Literal

from ..kernels import KERNELS, GemmKernel
from .base import FigureError

#: A first-party GEMM kernel, as a figure's ``kernel=`` argument.
FIRST_PARTY = Literal[tuple(KERNELS)]  # type: ignore[valid-type]

#: The constants a tile pyramid is made of.
PYRAMID = ("WM", "WN", "TM", "TN", "SM", "SN", "BM", "BN", "BK", "THREADS")


def first_party(kernel: str) -> GemmKernel:
    if kernel not in KERNELS:
        raise FigureError(f"kernel must be one of {', '.join(KERNELS)} (the first-party kernels of "
                          f"gemmglossary.kernels), got {kernel!r}")
    return KERNELS[kernel]


def constants(spec: GemmKernel, names: tuple[str, ...], defines: dict | None = None) -> dict[str, int]:
    """``{name: value}`` of the kernel file's constants, built with ``defines``; a constant
    the file does not declare (or cannot evaluate) is a FigureError naming it."""
    if defines:
        unknown = sorted(set(defines) - set(spec.defaults()))
        if unknown:
            raise FigureError(f"kernels/{spec.path.name} has no -D constant {', '.join(unknown)} "
                              f"(it takes {', '.join(spec.defaults()) or 'none'})")
    c = spec.constants(defines)
    missing = [n for n in names if n not in c]
    if missing:
        raise FigureError(f"kernels/{spec.path.name} declares no constant {', '.join(missing)}; "
                          f"this figure needs {', '.join(names)}")
    return {n: c[n] for n in names}


def pyramid_constants(spec: GemmKernel, defines: dict | None = None) -> dict[str, int]:
    return constants(spec, PYRAMID, defines)
