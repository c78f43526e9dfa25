"""Run every runtime test on each backend this machine has.

``backend_name`` is parametrized over ``emulator`` and ``metal``; the metal case skips
off Apple Silicon with the reason (e.g. "needs an Apple GPU (Metal); this machine is
Linux x86_64") and otherwise forces the backend through GEMMGLOSSARY_BACKEND, so a
test can never pass on the emulator while claiming the GPU.
"""

from __future__ import annotations

import pytest

from gemmglossary.runtime import metal_status


@pytest.fixture(params=["emulator", pytest.param("metal", marks=pytest.mark.metal)])
def backend_name(request, monkeypatch):
    if request.param == "metal":
        ok, reason = metal_status()
        if not ok:
            pytest.skip(reason)
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", request.param)
    return request.param
