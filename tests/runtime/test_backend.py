"""Backend selection: automatic, forced by GEMMGLOSSARY_BACKEND, never a silent fallback.

The platform is monkeypatched, so every branch runs on any machine.
"""

from __future__ import annotations

import platform

import pytest

import gemmglossary as gg
from gemmglossary.runtime import selection as be
from gemmglossary.metal.device import DeviceInfo
from gemmglossary.runtime import BackendUnavailable, automatic, backend, metal_status

APPLE_M1 = tuple(f"Apple{n}" for n in range(1, 8)) + ("Mac2", "Common1", "Common2", "Common3", "Metal3")
VIRTUAL = ("Mac2", "Common1", "Common2", "Common3", "Metal3")


@pytest.fixture
def fake_platform(monkeypatch):
    probes = []

    def set_(system, machine, device=True, families=APPLE_M1):
        monkeypatch.setattr(platform, "system", lambda: system)
        monkeypatch.setattr(platform, "machine", lambda: machine)

        def probe():
            probes.append(1)
            if not device:
                return False, "no Metal device: MTLCopyAllDevices() is empty and MTLCreateSystemDefaultDevice() returned nil", None
            return True, "", DeviceInfo("Apple M1", families)

        monkeypatch.setattr(be, "_probe_metal_device", probe)
        return probes

    monkeypatch.delenv("GEMMGLOSSARY_BACKEND", raising=False)
    return set_


def test_auto_linux_is_emulator(fake_platform):
    probes = fake_platform("Linux", "x86_64")
    assert backend() == "emulator"
    assert probes == []  # no Metal probe off macOS arm64
    ok, reason = metal_status()
    assert not ok and reason == "needs an Apple GPU (Metal); this machine is Linux x86_64"


def test_auto_apple_silicon_is_metal(fake_platform):
    fake_platform("Darwin", "arm64")
    assert backend() == "metal"


def test_auto_intel_mac_is_emulator(fake_platform):
    fake_platform("Darwin", "x86_64")
    assert backend() == "emulator"


def test_auto_apple_silicon_without_device_is_emulator(fake_platform):
    fake_platform("Darwin", "arm64", device=False)
    assert backend() == "emulator"


def test_env_forces_emulator_on_apple(fake_platform, monkeypatch):
    fake_platform("Darwin", "arm64")
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    assert backend() == "emulator"
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", " Emulator ")
    assert backend() == "emulator"


def test_env_forces_metal_where_available(fake_platform, monkeypatch):
    fake_platform("Darwin", "arm64")
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "metal")
    assert backend() == "metal"


def test_forcing_metal_where_unavailable_is_an_error(fake_platform, monkeypatch):
    fake_platform("Linux", "x86_64")
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "metal")
    with pytest.raises(BackendUnavailable, match="metal backend was requested but is unavailable: needs an Apple GPU"):
        backend()
    # and every entry point refuses instead of falling back to the emulator
    with pytest.raises(BackendUnavailable):
        gg.metal_kernel("k", ["a"], ["b"], "b[0] = a[0];")
    with pytest.raises(BackendUnavailable):
        gg.load_kernel("kernel void k(device float* a [[buffer(0)]]) {}", "k")


def test_forcing_metal_on_mac_without_device(fake_platform, monkeypatch):
    fake_platform("Darwin", "arm64", device=False)
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "metal")
    with pytest.raises(BackendUnavailable, match="MTLCreateSystemDefaultDevice.. returned nil"):
        backend()


def test_auto_on_a_device_without_simdgroup_matrices_is_emulator(fake_platform, monkeypatch):
    fake_platform("Darwin", "arm64", families=VIRTUAL)
    assert automatic() == ("emulator", "the Metal device 'Apple M1' (GPU families: Mac2, Common1, Common2, "
                                       "Common3, Metal3) lacks what the kernels use (simdgroup matrices need "
                                       "Apple7 or later)")
    # forcing it is allowed: the device is there; each kernel that needs Apple7 is refused when loaded
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "metal")
    assert backend() == "metal"


def test_auto_reason_names_the_device(fake_platform):
    fake_platform("Darwin", "arm64")
    name, why = automatic()
    assert name == "metal" and why.startswith("the Metal device 'Apple M1' (GPU families: Apple1, ")


def test_unknown_backend_name(fake_platform, monkeypatch):
    fake_platform("Linux", "x86_64")
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "cuda")
    with pytest.raises(BackendUnavailable, match="GEMMGLOSSARY_BACKEND='cuda': expected one of metal, emulator"):
        backend()
    with pytest.raises(BackendUnavailable, match="backend='vulkan'"):
        backend("vulkan")


def test_explicit_argument_beats_env(fake_platform, monkeypatch):
    fake_platform("Darwin", "arm64")
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "metal")
    assert backend("emulator") == "emulator"


def test_metal_kernel_picks_class_by_backend(fake_platform, monkeypatch):
    fake_platform("Linux", "x86_64")
    k = gg.metal_kernel("k", ["a"], ["b"], "b[0] = a[0];")
    assert k.backend == "emulator"


def test_real_probe_off_apple():
    if platform.system() == "Darwin":
        pytest.skip("this checks the probe on a non-Apple machine")
    assert metal_status()[0] is False
