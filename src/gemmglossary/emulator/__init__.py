"""CPU emulator for Metal Shading Language compute kernels.

``load_kernel(path_or_source, name, ...)`` compiles a kernel with the host C++ compiler
and a shim of the Metal standard library; every GPU thread runs as a fiber, barriers and
simd-group functions are rendezvous points, and misuse is reported as an exception that
names the .metal line. See ``Kernel.__call__`` for launching.

Buffer binding: the i-th positional argument binds the i-th buffer parameter in
declaration order (parameters switched off by a function constant are skipped); a single
dict ``{n: array}`` binds by ``[[buffer(n)]]`` index instead.
"""

from __future__ import annotations

from .build import stats as build_stats
from .errors import (BarrierError, CompileError, DataRaceError, EmulatorError, KernelCrash, KernelTimeoutError,
                     LaunchError, OutOfBoundsError, PortabilityWarning, SimdgroupDivergenceError, TimeoutError_)
from .kernel import Kernel, load_kernel

__all__ = [
    "load_kernel", "Kernel", "EmulatorError", "CompileError", "DataRaceError", "BarrierError", "OutOfBoundsError",
    "SimdgroupDivergenceError", "KernelTimeoutError", "TimeoutError_", "LaunchError", "KernelCrash",
    "PortabilityWarning", "build_stats",
]
