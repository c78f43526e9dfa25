"""Which Metal device the backend uses, what it supports, and what a kernel needs of it.

The device is the one MLX picks (``mlx/backend/metal/device.cpp``, ``load_device``):
the first of ``MTLCopyAllDevices()``, else ``MTLCreateSystemDefaultDevice()`` -- in
headless or virtualized sessions the list can be empty while the default device
exists, or both can be missing.

A GPU family is a set of features a device has (``MTLDevice.supportsFamily:``);
Apple's "Metal feature set tables" (https://developer.apple.com/metal/Metal-Feature-Set-Tables.pdf)
say which family each feature needs.  The one this project's kernels depend on is
:data:`FEATURES`: simdgroup matrices (``simdgroup_float8x8``,
``simdgroup_multiply_accumulate``...), Apple7 (M1, A14) or later.  A virtualized GPU
such as the "Apple Paravirtual device" of a hosted macOS CI runner may report fewer
families than the Apple silicon it runs on; a kernel that needs a family the device
lacks is refused with :class:`UnsupportedOnDevice`, naming the line that needs it,
instead of being compiled for a device that cannot run it.

Nothing here imports PyObjC at module level, so the pure parts run on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..msl.lexer import assign_lines, tokenize
from ..backend_errors import BackendUnavailable

#: MTLGPUFamily constants reported for a device, without the ``MTLGPUFamily`` prefix.
FAMILY_NAMES = ("Apple1", "Apple2", "Apple3", "Apple4", "Apple5", "Apple6", "Apple7", "Apple8",
                "Apple9", "Apple10", "Mac2", "Common1", "Common2", "Common3", "Metal3", "Metal4")


@dataclass(frozen=True)
class Feature:
    """A kernel-language feature only some GPU families have."""

    what: str
    family: str  # the oldest family that has it; later families of its line have it too
    identifiers: frozenset[str]


FEATURES = (
    Feature("simdgroup matrices", "Apple7", frozenset({
        "simdgroup_matrix", "simdgroup_float8x8", "simdgroup_half8x8", "simdgroup_bfloat8x8",
        "simdgroup_multiply_accumulate", "simdgroup_load", "simdgroup_store",
    })),
)


class UnsupportedOnDevice(BackendUnavailable):
    """The kernel needs a GPU family this Metal device does not have: the backend cannot run it here."""


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    families: tuple[str, ...]  # every family of FAMILY_NAMES the device reports

    def supports(self, family: str) -> bool:
        return family in self.families

    def describe(self) -> str:
        return f"'{self.name}' (GPU families: {', '.join(self.families) or 'none reported'})"

    def missing(self) -> list[Feature]:
        """The :data:`FEATURES` this device lacks."""
        return [f for f in FEATURES if not self.supports(f.family)]


def pick_device(Metal):
    """The MTLDevice MLX would use, or None."""
    devices = Metal.MTLCopyAllDevices()
    if devices is not None and len(devices) > 0:
        return devices[0]
    return Metal.MTLCreateSystemDefaultDevice()


def device_info(device, Metal) -> DeviceInfo:
    families = tuple(
        name for name in FAMILY_NAMES
        if hasattr(Metal, "MTLGPUFamily" + name) and device.supportsFamily_(getattr(Metal, "MTLGPUFamily" + name))
    )
    return DeviceInfo(str(device.name()), families)


def probe() -> DeviceInfo | None:
    """The device MLX would use, described; None when there is none.  macOS only."""
    import Metal  # pyobjc-framework-Metal

    device = pick_device(Metal)
    return None if device is None else device_info(device, Metal)


def features_used(source: str, filename: str = "<source>") -> list[tuple[Feature, str, int, str]]:
    """(feature, file, line, identifier) of the first use of each :data:`FEATURES` entry.

    Reads identifiers outside comments and string literals; ``#line`` markers (which
    :func:`gemmglossary.msl.includes.inline_includes` writes) give each use its own file and line.
    Code in a branch the preprocessor drops still counts: the answer may be "needs"
    where the compiled kernel would not.
    """
    toks = tokenize(source)
    assign_lines(toks, filename)
    found: dict[str, tuple[Feature, str, int, str]] = {}
    for tok in toks:
        if tok.kind != "id":
            continue
        for feature in FEATURES:
            if feature.what not in found and tok.text in feature.identifiers:
                found[feature.what] = (feature, tok.file, tok.line, tok.text)
    return list(found.values())


def check_kernel_runs(info: DeviceInfo, source: str, filename: str, kernel: str) -> None:
    """Raise :class:`UnsupportedOnDevice` when the source needs what the device lacks."""
    for feature, file, line, ident in features_used(source, filename):
        if not info.supports(feature.family):
            raise UnsupportedOnDevice(
                f"{file}:{line}: kernel '{kernel}' uses {feature.what} ({ident}), which need a GPU of "
                f"the {feature.family} family or later; the Metal device {info.describe()} is not "
                f"one, so the kernel cannot run on it (the emulator runs it: GEMMGLOSSARY_BACKEND=emulator)"
            )


def main() -> int:
    """``python -m gemmglossary.metal.device``: print the device the backend would use."""
    try:
        info = probe()
    except ImportError as exc:
        print(f"no Metal bindings: {exc}")
        return 1
    if info is None:
        print("no Metal device (MTLCopyAllDevices() is empty and MTLCreateSystemDefaultDevice() returned nil)")
        return 1
    print(f"Metal device {info.describe()}")
    for feature in FEATURES:
        state = "yes" if info.supports(feature.family) else "NO: kernels that use them cannot run here"
        print(f"  {feature.what} ({feature.family} or later): {state}")
    return 0


if __name__ == "__main__":  # pragma: no cover - run by the macOS workflow
    raise SystemExit(main())
