"""When a metal test case runs, skips, or fails for want of a GPU (see conftest.py)."""

from __future__ import annotations

import os

import pytest

from gemmglossary.runtime import ENV_VAR, metal_status


def require_metal() -> None:
    """Skip without a Metal device -- or fail, when the run forces the metal backend."""
    ok, reason = metal_status()
    if ok:
        return
    if os.environ.get(ENV_VAR, "").strip().lower() == "metal":
        pytest.fail(f"{ENV_VAR}=metal, but there is no Metal backend here: {reason}", pytrace=False)
    pytest.skip(reason)
