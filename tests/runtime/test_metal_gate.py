"""conftest.py's rules for the metal cases, run in a pytest of their own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gemmglossary.runtime import metal_status
from metal_gate import require_metal

HERE = Path(__file__).parent

CASES = textwrap.dedent(
    """
    from gemmglossary.metal.device import UnsupportedOnDevice

    def test_uses_a_backend(backend_name):
        assert backend_name in ("emulator", "metal")

    def test_needs_a_family_the_device_lacks():
        raise UnsupportedOnDevice("k.metal:3: kernel 'k' uses simdgroup matrices ... 'Fake GPU' ...")

    def test_other_errors_still_fail():
        raise RuntimeError("a real failure")
    """
)


def test_forced_metal_without_a_gpu_fails_and_a_missing_family_skips(tmp_path):
    if metal_status()[0]:
        pytest.skip("this machine has a Metal device: forcing the backend cannot fail here")
    for name in ("conftest.py", "metal_gate.py"):
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / "test_cases.py").write_text(CASES)
    env = dict(os.environ, GEMMGLOSSARY_BACKEND="metal")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "ERROR test_cases.py::test_uses_a_backend[metal]" in out  # failed in its set-up
    assert "GEMMGLOSSARY_BACKEND=metal, but there is no Metal backend here: needs an Apple GPU" in out
    assert "SKIPPED [1] test_cases.py" in out and "uses simdgroup matrices ... 'Fake GPU'" in out
    assert "FAILED test_cases.py::test_other_errors_still_fail" in out
    assert "1 failed, 1 passed, 1 skipped, 1 error" in out
    assert "metal cases did not run: needs an Apple GPU" in out  # the device report


def test_unforced_without_a_gpu_skips(monkeypatch):
    if metal_status()[0]:
        pytest.skip("this machine has a Metal device")
    monkeypatch.delenv("GEMMGLOSSARY_BACKEND", raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs an Apple GPU"):
        require_metal()
