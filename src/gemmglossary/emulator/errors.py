"""Exceptions raised by the Metal emulator.

Besides its message, a launch-time diagnostic carries what the message says as attributes,
so that programs need not parse the wording (every one is None when it does not apply):

- ``threadgroup`` (x, y, z); ``thread``, a :class:`Thread`; ``site`` (file, line) of the
  current thread's access or call;
- DataRaceError: ``memory`` (the threadgroup variable, or the buffer), ``element`` ("tile[0][1]",
  no quotes; on device memory "C[12]", counted in ``element_size``-byte accesses), ``access``
  ("read" / "write"); ``other_thread``, ``other_site``, ``other_access``, and on device
  memory ``other_threadgroup`` (another threadgroup's access races too);
- OutOfBoundsError: ``buffer``, ``index``, ``length`` (elements), ``element_size``,
  ``access`` ("read", "write", or "unknown" for elements over 32 KiB);
- BarrierError: ``sites`` [(file, line)...] of the barriers involved; for a barrier some
  threads never reached, ``not_reached`` and ``waiting`` (thread indices);
- SimdgroupDivergenceError: ``sites``, ``operation`` ("simd_sum"...), ``simdgroup``;
- KernelCrash: ``signal`` ("SIGSEGV"...);
- PortabilityWarning: ``kind`` ("uninitialized-read", "returned-before-barrier",
  "oob-read", "library": found by the emulator's Metal library; with device_races,
  "device-barrier-without-memory-order" and "same-value-write-race"), with the fields above
  that apply.
"""

from __future__ import annotations

import re

from typing import NamedTuple


class Thread(NamedTuple):
    position: tuple  # thread_position_in_threadgroup
    index: int       # thread_index_in_threadgroup
    simdgroup: int
    lane: int


_FACT_ATTRS = ("threadgroup", "thread", "site", "memory", "element", "access", "other_thread", "other_site",
               "other_access", "buffer", "index", "length", "element_size", "sites", "not_reached", "waiting",
               "operation", "simdgroup", "signal", "kind", "other_threadgroup")


class _Facts:
    """The attributes a diagnostic may carry (class defaults: None)."""


for _name in _FACT_ATTRS:
    setattr(_Facts, _name, None)


class EmulatorError(_Facts, Exception):
    """Base class of every emulator diagnostic."""


class CompileError(EmulatorError):
    """The kernel source does not compile (message names the .metal file and line)."""


class LaunchError(EmulatorError):
    """The launch is invalid (too many threads per threadgroup, missing buffers, ...)."""


class DataRaceError(EmulatorError):
    """Two threads touched the same threadgroup memory with no barrier in between, or (with
    device_races) the same device memory with nothing ordering them."""


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


class PortabilityWarning(_Facts, UserWarning):
    """Behaviour the Metal specification does not promise (or rules out) but a kernel relies on,
    MLX's among them: the emulator gives the result the kernel's authors assume, and says so,
    because no Apple document says what a GPU does."""


class PortabilityError(EmulatorError):
    """A PortabilityWarning in strict mode (strict=True or $GEMMGLOSSARY_EMULATOR_STRICT)."""


class ArgumentTypeError(LaunchError, TypeError):
    """An argument's type does not match its kernel parameter (e.g. a float64 array for ``device float*``)."""


class ArgumentValueError(LaunchError, ValueError):
    """An argument's value does not fit its kernel parameter (e.g. -1 for a ``uint``)."""


class CacheWarning(UserWarning):
    """A damaged entry of the compile cache was found and is being rebuilt."""


def parse_facts(text: str) -> dict[str, str]:
    """The runtime's `key=value` lines (mslemu_abi.h) as a dict."""
    return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln)


def _ids(s: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, s.split(",")):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def _site(s: str):
    file, _, line = s.rpartition(":")
    return (file, int(line)) if line.isdigit() else None


def with_facts(exc, facts: dict[str, str], symbolizer=None):
    """`exc` with the attributes of `facts` (symbolizer(hex pc) -> (file, line) or None)."""
    def ints(s):
        return tuple(int(x) for x in s.split(","))

    def thread(s):
        v = ints(s)
        return Thread(v[:3], v[3], v[4], v[5])

    conv = {"threadgroup": ints, "other_threadgroup": ints, "thread": thread, "other_thread": thread, "index": int, "length": int,
            "element_size": int, "simdgroup": int, "not_reached": _ids, "waiting": _ids,
            "site": _site, "sites": lambda s: [_site(x) for x in s.split(";") if x],
            "operation": lambda s: s if ";" not in s else s.split(";"),
            # the message quotes the element ('tile[0][1]'); the attribute holds it bare
            "element": lambda s: re.sub(r"^'([^']*)'", r"\1", s)}
    for key, value in facts.items():
        if key.endswith("_pc"):
            key = key[:-3]
            exc_value = symbolizer.locate(value) if symbolizer else None
        elif key in conv:
            exc_value = conv[key](value)
        else:
            exc_value = value
        if key in _FACT_ATTRS:
            setattr(exc, key, exc_value)
    return exc
