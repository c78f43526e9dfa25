"""One kernel API over two backends: the Apple GPU and the CPU emulator.

For now only the emulator backend exists; backend selection and the Metal path
arrive with the runtime issue.
"""

from __future__ import annotations


def load_kernel(path_or_source, name, **kwargs):
    from ..emulator import load_kernel as emulator_load_kernel

    return emulator_load_kernel(path_or_source, name, **kwargs)


def metal_kernel(*args, **kwargs):
    raise NotImplementedError("gemmglossary.metal_kernel arrives with the runtime issue (#5)")
