"""What a launch refuses before anything is bound or run: sizes it cannot express, and
values given for memory the kernel may write.

Sizes. 
A kernel sees its grid through 32-bit attributes (``uint3 [[thread_position_in_grid]]``,
``[[threadgroups_per_grid]]``, ``[[threads_per_grid]]``), and the emulator's launch carries
each size as a ``uint32_t`` (shim/mslemu_abi.h): a size above UINT32_MAX would wrap around,
running fewer threads than asked (or none) or crashing. Each such size is a LaunchError
naming the argument it came from instead.

Values. A numpy array is a buffer's memory and gets the kernel's writes back; a list, a
tuple, a scalar or bytes is copied into the launch and never written back. Given for a
parameter the kernel may write (``device``, not ``const``), whatever the kernel writes
there would be thrown away without a word: refused, as a write to a read-only array is.
"""

from __future__ import annotations

import re

import numpy as np

from .abi import abi
from .errors import ArgumentTypeError, LaunchError

UINT32_MAX = 2 ** 32 - 1


def sizes(given: str, ntg, grid, tptg) -> None:
    """``given``: "threads" (dispatchThreads) or "threadgroups" (dispatchThreadgroups);
    ``ntg``, ``grid`` (in threads) and ``tptg``: three sizes each."""
    for what, sizes in (("threads_per_threadgroup", tptg), (given, grid if given == "threads" else ntg)):
        for axis, n in zip("xyz", sizes):
            if n > UINT32_MAX:
                raise LaunchError(f"{what} {tuple(sizes)}: {n} ({axis}) is above UINT32_MAX ({UINT32_MAX}), the "
                                  "largest size a kernel's 32-bit grid attributes can express")
    if given == "threadgroups":
        for axis, n, groups, per in zip("xyz", grid, ntg, tptg):
            if n > UINT32_MAX:
                raise LaunchError(f"threadgroups {tuple(ntg)} of threads_per_threadgroup {tuple(tptg)}: {groups} x "
                                  f"{per} = {n} threads in {axis}, above UINT32_MAX ({UINT32_MAX}), the largest "
                                  "[[thread_position_in_grid]] can count")


def writable(kernel: str, bparams: list, buffers: tuple) -> None:
    """ArgumentTypeError for a value (not an array) given to a parameter the kernel may write;
    ``buffers`` as the launch got them (positional, or one {index: value} dict)."""
    if len(buffers) == 1 and isinstance(buffers[0], dict):
        by_index = buffers[0]
    else:
        by_index = {p["index"]: b for (p, _), b in zip(bparams, buffers)}
    a = abi()
    for p, info in bparams:
        value = by_index.get(p["index"])
        if value is None or isinstance(value, np.ndarray):
            continue
        if info.address_space != a["AS_DEVICE"] or re.search(r"\bconst\b", p["type"]):
            continue
        raise ArgumentTypeError(
            f"kernel '{kernel}': parameter '{p['name']}' [[buffer({p['index']})]] ({p['type']}) may be written by "
            f"the kernel, but got a {type(value).__name__}: a value is copied into the launch and never written "
            f"back, so the results would be lost; pass a numpy array (or declare the parameter const)")
