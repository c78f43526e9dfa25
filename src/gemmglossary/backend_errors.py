"""The error of a backend that cannot run here, below both the backends and the choice
between them: :mod:`gemmglossary.runtime.selection` raises it when the backend asked for is
unavailable, and :mod:`gemmglossary.metal.device` refines it for a kernel the device cannot
run (``UnsupportedOnDevice``), so one ``except BackendUnavailable`` catches both, and the
Metal backend needs nothing from the runtime that selects it."""

from __future__ import annotations


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run on this machine."""
