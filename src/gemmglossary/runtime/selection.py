"""Which backend runs kernels: the Apple GPU (``metal``) or the CPU emulator.

Automatic: ``metal`` on macOS arm64 when there is a Metal device (the one MLX would
use) that has every GPU family the project's kernels need
(:data:`gemmglossary.metal.device.FEATURES`: simdgroup matrices, Apple7 or later);
else ``emulator``.  ``GEMMGLOSSARY_BACKEND=metal|emulator`` forces one.  Forcing
``metal`` where no Metal device is reachable raises :class:`BackendUnavailable`;
forcing it on a device that lacks a family is allowed, and each kernel that needs
the missing family is refused with the reason when it is loaded.  Nothing ever falls
back silently.
"""

from __future__ import annotations

import platform

from .. import settings
from ..backend_errors import BackendUnavailable

BACKENDS = ("metal", "emulator")
ENV_VAR = "GEMMGLOSSARY_BACKEND"

_probed: dict = {}


def _probe_metal_device():
    """(available, reason it is not, DeviceInfo or None): asks Metal through PyObjC, once."""
    if "result" not in _probed:
        try:
            from ..metal.device import probe

            info = probe()
        except ImportError as exc:  # pyobjc-framework-Metal is a macOS-only dependency
            _probed["result"] = (False, f"PyObjC's Metal bindings are not importable ({exc}); "
                                        "pip install pyobjc-framework-Metal", None)
        else:
            if info is None:
                _probed["result"] = (False, "no Metal device: MTLCopyAllDevices() is empty and "
                                            "MTLCreateSystemDefaultDevice() returned nil", None)
            else:
                _probed["result"] = (True, "", info)
    return _probed["result"]


def _on_apple_silicon() -> tuple[bool, str]:
    system, machine = platform.system(), platform.machine()
    if system != "Darwin" or machine != "arm64":
        return False, f"needs an Apple GPU (Metal); this machine is {system} {machine}"
    return True, ""


def metal_status() -> tuple[bool, str]:
    """(available, reason it is not): is there a Metal device to force the backend onto?"""
    ok, reason = _on_apple_silicon()
    if not ok:
        return False, reason
    available, reason, _ = _probe_metal_device()
    return available, reason


def metal_device():
    """The :class:`~gemmglossary.metal.device.DeviceInfo` of the Metal device, or None."""
    if not _on_apple_silicon()[0]:
        return None
    return _probe_metal_device()[2]


def automatic() -> tuple[str, str]:
    """(backend, why) of the automatic choice."""
    ok, reason = metal_status()
    if not ok:
        return "emulator", reason
    info = metal_device()
    missing = info.missing()
    if missing:
        needs = "; ".join(f"{f.what} need {f.family} or later" for f in missing)
        return "emulator", f"the Metal device {info.describe()} lacks what the kernels use ({needs})"
    return "metal", f"the Metal device {info.describe()}"


def backend(requested: str | None = None) -> str:
    """The active backend name: ``requested``, else ``$GEMMGLOSSARY_BACKEND``, else automatic."""
    if requested is None:
        try:
            choice = settings.value(ENV_VAR)
        except settings.SettingError as exc:
            raise BackendUnavailable(str(exc)) from None
    else:
        choice = requested.strip().lower()
    if choice in ("", "auto"):
        return automatic()[0]
    if choice not in BACKENDS:
        source = "backend" if requested is not None else ENV_VAR
        raise BackendUnavailable(f"{source}={choice!r}: expected one of {', '.join(BACKENDS)}")
    if choice == "metal":
        ok, reason = metal_status()
        if not ok:
            raise BackendUnavailable(f"the metal backend was requested but is unavailable: {reason}")
    return choice
