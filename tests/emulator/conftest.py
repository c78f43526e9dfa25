import shutil
from pathlib import Path

import pytest

KERNELS = Path(__file__).parent / "kernels"

if shutil.which("g++") is None and shutil.which("clang++") is None:  # pragma: no cover
    pytest.skip("the Metal emulator needs g++ or clang++", allow_module_level=True)


@pytest.fixture(scope="session")
def conformance():
    from gemmglossary.emulator import load_kernel

    cache = {}

    def get(name, **kw):
        key = (name, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = load_kernel(KERNELS / "conformance.metal", name, **kw)
        return cache[key]

    return get
