"""Which backend runs kernels: the Apple GPU (``metal``) or the CPU emulator.

Automatic: ``metal`` on macOS arm64 when a Metal device exists, else ``emulator``.
``GEMMGLOSSARY_BACKEND=metal|emulator`` forces one.  Forcing ``metal`` where no Apple
GPU is reachable raises :class:`BackendUnavailable`; nothing ever falls back silently.
"""

from __future__ import annotations

import os
import platform

BACKENDS = ("metal", "emulator")
ENV_VAR = "GEMMGLOSSARY_BACKEND"


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run on this machine."""


def _probe_metal_device() -> tuple[bool, str]:
    """Ask Metal (through PyObjC) for the system default device."""
    try:
        import Metal  # pyobjc-framework-Metal, a macOS-only dependency
    except ImportError as exc:
        return False, f"PyObjC's Metal bindings are not importable ({exc}); pip install pyobjc-framework-Metal"
    if Metal.MTLCreateSystemDefaultDevice() is None:
        return False, "MTLCreateSystemDefaultDevice() returned no device"
    return True, ""


def metal_status() -> tuple[bool, str]:
    """(available, reason it is not) for the Metal backend on this machine."""
    system, machine = platform.system(), platform.machine()
    if system != "Darwin" or machine != "arm64":
        return False, f"needs an Apple GPU (Metal); this machine is {system} {machine}"
    return _probe_metal_device()


def backend(requested: str | None = None) -> str:
    """The active backend name: ``requested``, else ``$GEMMGLOSSARY_BACKEND``, else automatic."""
    choice = requested if requested is not None else os.environ.get(ENV_VAR, "")
    choice = choice.strip().lower()
    if choice in ("", "auto"):
        return "metal" if metal_status()[0] else "emulator"
    if choice not in BACKENDS:
        source = "backend" if requested is not None else ENV_VAR
        raise BackendUnavailable(f"{source}={choice!r}: expected one of {', '.join(BACKENDS)}")
    if choice == "metal":
        ok, reason = metal_status()
        if not ok:
            raise BackendUnavailable(f"the metal backend was requested but is unavailable: {reason}")
    return choice
