"""Constructs of real Metal code, one small kernel each (kernels/constructs.metal), checked
against numpy or exact values; the file is compiled once for the whole module."""

from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import load_kernel

SRC = Path(__file__).parent / "kernels" / "constructs.metal"


@pytest.fixture(scope="module")
def kernel():
    return lambda name, **kw: load_kernel(SRC, name, **kw)


def test_uniform_values(kernel):
    out = np.zeros(4 * 3, np.int32)
    kernel("uniform_values")(np.array([23], np.int32), out, threads=3, threads_per_threadgroup=3)
    iters = 23 // 4
    for i, row in enumerate(out.reshape(3, 4)):
        assert row.tolist() == [iters, 23 - 4 * iters, sum(range(iters)), 8 + i]
