"""``bench emulator``'s compile table: each of llama.cpp's vendored Metal files compiled
whole into one emulator library (``load_library``, as llama.cpp's host compiles each file
with ``newLibraryWithSource``), in an empty compile cache so that every figure is a compile,
with the wall time and the CPU seconds of the rewriter and the compiler processes (the
machine may be shared: the CPU seconds are what the compile itself costs)."""

from __future__ import annotations

import os
import resource
import tempfile
import time
from contextlib import contextmanager
from unittest import mock

#: the vendored llama.cpp kernel files (kernels/vendor.toml), smallest first
FILES = ("softmax", "norm", "binbcast", "mul_mm", "mul_mv")
TARGET_SECONDS = 30.0  # issue #34: a large production file compiles in under 30 s


def _cpu() -> float:
    """CPU seconds of this process (the rewriter) and of its finished children (the compiler)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + r.ru_utime + r.ru_stime


#: the variable that moves the compile cache (gemmglossary.settings parses it; set here only)
CACHE_VARIABLE = "GEMMGLOSSARY_CACHE_DIR"


@contextmanager
def _empty_cache():
    """The emulator's compile cache moved to a new empty folder for the duration (the
    variable set and then restored: the emulator's processes read it through settings)."""
    with tempfile.TemporaryDirectory(prefix="gemmglossary-bench-compile-") as tmp:
        with mock.patch.dict(os.environ, {CACHE_VARIABLE: tmp}):
            yield


def measure(names=FILES) -> list[tuple[str, int, float, float]]:
    """(file, kernels, wall seconds, CPU seconds) of each file's library compile.
    The emulator's runtime and precompiled shim are built first, outside the figures: every
    kernel compile shares them."""
    from ..emulator import load_kernel, load_library
    from ..llama import source

    dirs = source.include_dirs()  # what llama.cpp compiles its kernels with
    rows = []
    with _empty_cache():
        load_kernel("kernel void warm_up(device float* a [[buffer(0)]]) { a[0] = 1.0f; }\n", "warm_up")
        for name in names:
            cpu, t = _cpu(), time.perf_counter()
            lib = load_library(source.metal_path(f"kernels/{name}.metal"), include_dirs=dirs)
            rows.append((name, len(lib.names), time.perf_counter() - t, _cpu() - cpu))
    return rows
