"""Session-wide set-up shared by every suite.

The pinned MLX headers are materialized before any test runs, so `pytest` on a
fresh checkout needs no separate `gemmglossary vendor` step.
"""

from __future__ import annotations

import pytest

from gemmglossary import vendor


def pytest_sessionstart(session: pytest.Session) -> None:
    try:
        vendor.ensure()
    except vendor.VendorError as exc:
        raise pytest.UsageError(f"the pinned MLX files the tests run: {exc}") from None
