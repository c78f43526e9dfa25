"""Exceptions raised by the Metal emulator."""

from __future__ import annotations


class EmulatorError(Exception):
    """Base class of every emulator diagnostic."""


class CompileError(EmulatorError):
    """The kernel source does not compile (message names the .metal file and line)."""


class LaunchError(EmulatorError):
    """The launch is invalid (too many threads per threadgroup, missing buffers, ...)."""


class DataRaceError(EmulatorError):
    """Two threads touched the same threadgroup memory with no barrier in between."""


class BarrierError(EmulatorError):
    """threadgroup_barrier misuse: divergent call sites or a barrier some threads never reach."""


class OutOfBoundsError(EmulatorError):
    """A device/constant/threadgroup access outside its buffer."""


class SimdgroupDivergenceError(EmulatorError):
    """A simd-group operation reached by only part of a simdgroup, or at different call sites."""


class KernelTimeoutError(EmulatorError):
    """The kernel did not finish within the time bound."""


class KernelCrash(EmulatorError):
    """The kernel crashed (segfault, trap, ...); the caller's process survived."""


class PortabilityWarning(UserWarning):
    """Behaviour that works on Apple GPUs but that the Metal specification does not promise."""


class ArgumentTypeError(LaunchError, TypeError):
    """An argument's type does not match its kernel parameter (e.g. a float64 array for ``device float*``)."""


class ArgumentValueError(LaunchError, ValueError):
    """An argument's value does not fit its kernel parameter (e.g. -1 for a ``uint``)."""


class CacheWarning(UserWarning):
    """A damaged entry of the compile cache was found and is being rebuilt."""
