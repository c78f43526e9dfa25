"""Run every runtime test on each backend this machine has.

``backend_name`` is parametrized over ``emulator`` and ``metal`` and forces the backend
through GEMMGLOSSARY_BACKEND, so a test can never pass on the emulator while claiming
the GPU.  The metal case:

* skips off Apple Silicon with the reason (e.g. "needs an Apple GPU (Metal); this
  machine is Linux x86_64") -- unless GEMMGLOSSARY_BACKEND=metal is set for the run,
  where a missing GPU fails the test instead: forcing the GPU and getting none is an
  error, not a skip;
* is reported as skipped, with the device and its GPU families, when the kernel needs
  a family the device lacks (:class:`~gemmglossary.metal.device.UnsupportedOnDevice`:
  simdgroup matrices on a virtual GPU, say) -- the device is there, it cannot run that.

The end of the run says which Metal device the metal cases ran on, and its families.
"""

from __future__ import annotations

import pytest

from gemmglossary.metal.device import UnsupportedOnDevice
from gemmglossary.runtime import ENV_VAR, metal_device, metal_status
from metal_gate import require_metal


@pytest.fixture(params=["emulator", pytest.param("metal", marks=pytest.mark.metal)])
def backend_name(request, monkeypatch):
    if request.param == "metal":
        require_metal()
    monkeypatch.setenv(ENV_VAR, request.param)
    return request.param


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" and call.excinfo is not None and call.excinfo.errisinstance(UnsupportedOnDevice):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")


def pytest_terminal_summary(terminalreporter):
    ok, reason = metal_status()
    if ok:
        info = metal_device()
        missing = ", ".join(f"{f.what} ({f.family})" for f in info.missing()) or "nothing the kernels use"
        terminalreporter.write_line(f"metal cases ran on the Metal device {info.describe()}; it lacks {missing}")
    else:
        terminalreporter.write_line(f"metal cases did not run: {reason}")
