"""The device memory of a launch: one copy of each memory the arguments share.

Metal binds buffers, not copies: two parameters bound to one buffer (llama.cpp's host binds
src0's buffer again where a kernel has no src1), or to overlapping ranges of it, read and
write one memory, each from its own offset. So do numpy arrays here. Arguments whose bytes
overlap in the caller's memory (the same array twice, or views of one base whose byte ranges
intersect) are one :class:`Memory`: one copy of the range they span, each parameter bound at
its array's byte offset in it. Arrays that do not overlap, views of one base included, are
memories of their own, as two buffers are.

After a successful launch the memory is written back through the arrays that share it, so
the kernel's writes are seen through every name. An array whose ``writeable`` flag is off
is never written through; the bytes the kernel changed must then lie in a writable array
of the same memory (numpy's read-only view of a writable array sees them, as it sees any
write through the other), else the launch is a LaunchError naming it.

A memory is the contiguous bytes of a range: a non-contiguous view is bound as a compact
copy of its elements, which is one memory only with itself. A strided view that overlaps
another argument is refused (a LaunchError), unless every argument of the memory is that
same view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import LaunchError


@dataclass
class Memory:
    """One copy of device memory: its bytes when the launch starts, and the arrays (each
    with its byte offset in it) the results are written back through."""

    data: bytes
    arrays: list[tuple[np.ndarray, int, str]] = field(default_factory=list)  # (array, offset, parameter name)

    def check(self, new: bytes, kernel: str) -> None:
        """A LaunchError if the kernel changed bytes that no writable array of this memory holds."""
        if new == self.data:
            return
        changed = self._changed(new)
        writable = np.zeros(len(new), bool)
        for arr, off, _ in self.arrays:
            if arr.flags.writeable:
                writable[off:off + arr.nbytes] = True
        for arr, off, name in self.arrays:
            if not arr.flags.writeable and (changed[off:off + arr.nbytes] & ~writable[off:off + arr.nbytes]).any():
                names = list(dict.fromkeys(n for _, _, n in self.arrays))
                shared = (f" (parameters {', '.join(repr(n) for n in names)} are bound to one memory, and no "
                          f"writable array holds the bytes written)") if len(names) > 1 else ""
                raise LaunchError(f"kernel '{kernel}' wrote to buffer '{name}', but the array is read-only{shared}")

    def write_back(self, new: bytes) -> None:
        """Copy what the kernel wrote into the writable arrays (check() first)."""
        if new == self.data:
            return
        changed = self._changed(new)
        for arr, off, _ in self.arrays:
            if arr.flags.writeable and changed[off:off + arr.nbytes].any():
                arr[...] = np.frombuffer(new, dtype=arr.dtype, count=arr.size, offset=off).reshape(arr.shape)

    def _changed(self, new: bytes) -> np.ndarray:
        return np.frombuffer(new, np.uint8) != np.frombuffer(self.data, np.uint8)


def _extent(arr: np.ndarray) -> tuple[int, int]:
    """[low, high) of the caller's memory the array's elements occupy."""
    lo = hi = arr.__array_interface__["data"][0]
    for n, s in zip(arr.shape, arr.strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + arr.itemsize


def _alignment(elem_size: int) -> int:
    """The alignment of an element of `elem_size` bytes: the largest power of two dividing it,
    at most 16 (Metal's offset rule: aligned to the data type read, which is at most 16)."""
    a = 1
    while a < 16 and elem_size % (2 * a) == 0:
        a *= 2
    return a


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.shape == b.shape
            and a.strides == b.strides and a.itemsize == b.itemsize)


@dataclass
class Bound:
    """An array given for one buffer parameter: the parameter's name, how messages name it,
    and the size of its elements (for the offset's alignment)."""

    name: str
    where: str
    array: np.ndarray
    elem_size: int


def share(kernel: str, bound: list[Bound]) -> list[tuple[Memory, int]]:
    """(memory, byte offset in it) for each array, in order: one Memory per set of arrays
    whose bytes overlap."""
    extents = [_extent(b.array) if b.array.nbytes else None for b in bound]
    order = sorted((i for i, e in enumerate(extents) if e is not None), key=lambda i: extents[i])
    groups: list[list[int]] = []
    hi = 0
    for i in order:  # a sweep over the extents: each group ends where the next one starts after it
        lo_i, hi_i = extents[i]
        if groups and lo_i < hi:
            groups[-1].append(i)
            hi = max(hi, hi_i)
        else:
            groups.append([i])
            hi = hi_i
    groups += [[i] for i, e in enumerate(extents) if e is None]  # no bytes: overlaps nothing
    placed: list = [None] * len(bound)
    for members in groups:
        mem, offsets = _memory(kernel, [bound[i] for i in members])
        for i, off in zip(members, offsets):
            placed[i] = (mem, off)
    return placed


def _memory(kernel: str, members: list[Bound]) -> tuple[Memory, list[int]]:
    first = members[0].array
    if all(_same_view(first, b.array) for b in members):
        # one array (or one view, given more than once): bound whole, a compact copy if it is strided
        mem = Memory(np.ascontiguousarray(first).tobytes())
        mem.arrays = [(b.array, 0, b.name) for b in members]
        return mem, [0] * len(members)
    for b in members:
        if not b.array.flags.c_contiguous:
            others = ", ".join(o.where for o in members if o is not b)
            raise LaunchError(
                f"kernel '{kernel}': the array bound to {b.where} shares memory with the one bound to {others} "
                f"and is not contiguous (strides {b.array.strides}): Metal binds a buffer, a contiguous range of "
                f"memory, at an offset, and the emulator binds a strided view as a copy of its elements, which "
                f"would not be the memory the other parameter sees; pass contiguous arrays (np.ascontiguousarray), "
                f"or a copy where the two need not alias")
    base = min(_extent(b.array)[0] for b in members)
    data = bytearray(max(_extent(b.array)[1] for b in members) - base)
    offsets = []
    for b in members:
        off = _extent(b.array)[0] - base
        align = _alignment(b.elem_size) if b.elem_size else 1
        if off % align:
            raise LaunchError(
                f"kernel '{kernel}': the array bound to {b.where} starts {off} bytes into the memory it shares "
                f"with the other arguments, which is not a multiple of the {align}-byte alignment of its "
                f"{b.elem_size}-byte elements; Metal requires a buffer's offset to be aligned to the type the "
                f"kernel reads")
        data[off:off + b.array.nbytes] = b.array.tobytes()
        offsets.append(off)
    mem = Memory(bytes(data))
    mem.arrays = [(b.array, off, b.name) for b, off in zip(members, offsets)]
    return mem, offsets
