"""The opt-in trace of an emulated launch: what every thread did at its synchronization points.

``kernel(..., trace=True)`` (or ``trace=Tracing(...)``) returns a :class:`Trace` and keeps
it as ``kernel.last_trace`` (also after a launch that failed, to see how far it got). Its
events are, per thread of each traced threadgroup:

- ``start`` and ``end`` of the thread;
- ``barrier-arrive``, ``barrier-release`` (once per barrier, by the thread whose arrival
  completed it) and ``barrier-depart`` of every ``threadgroup_barrier``, with its
  ``mem_flags``;
- ``simd-arrive`` and ``simd-depart`` of every simd-group function that is a rendezvous in
  the emulator: the ``simd_*`` reductions and shuffles, ``simdgroup_barrier``, and the point
  where a simdgroup's queued ``simdgroup_multiply_accumulate``\\ s are computed (named
  "simdgroup matrix multiply", at the line that first needs a result);

each with the source file and line, and ``step``: its place in the order the emulator ran
the threadgroup's events (a logical clock, not a time: the emulator runs one thread at a
time, in the order of the launch's ``schedule``). With ``Tracing(snapshots=True)`` every
barrier release also records a :class:`Snapshot` of threadgroup memory as the barrier
sees it: each array's bytes, and for every element the thread that last wrote it.

The C++ side is the ``trace`` section of cpp/runtime.cpp; tracing off costs one branch per
synchronization point. The buffer lives in the launch's shared region (so spawned workers
write to it too); its structures (TraceHeader, TraceEvent, TraceSnapshotHead, TraceRegion,
TraceKind) are described once, in shim/mslemu_abi.h, and read through abi.py.
"""

from __future__ import annotations

import ctypes
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .abi import abi
from .errors import LaunchError

NEVER_WRITTEN = 0xFFFF
FRESH = 0x8000


@lru_cache(maxsize=1)
def _layout():
    """numpy dtypes of the trace structures and the event kinds' names, from mslemu_abi.h."""
    a = abi()
    dt = {name: np.dtype(a.structs[name]) for name in ("TraceHeader", "TraceEvent", "TraceSnapshotHead", "TraceRegion")}
    kinds = {v: k[3:].lower().replace("_", "-") for k, v in a.enums["TraceKind"].items()}
    return dt, kinds


class TraceTruncated(UserWarning):
    """The trace buffer filled up: later events (or snapshots) were not recorded."""


@dataclass(frozen=True)
class Tracing:
    """What to trace. ``threadgroups``: positions ``(x, y, z)`` (or ``(x, y)``) to trace,
    None for all; ``snapshots``: also record threadgroup memory at every barrier release
    (needs ``race_check=True``, whose shadow memory knows the writers); the capacities
    bound the buffer (what does not fit is dropped, counted, and warned about)."""

    threadgroups: tuple | None = None
    snapshots: bool = False
    max_events: int = 1 << 20
    max_snapshot_bytes: int = 64 << 20


@dataclass
class Region:
    """One threadgroup array in a snapshot: its bytes and the last writer of each element."""

    name: str
    offset: int
    size: int
    element_size: int
    shape: tuple[int, ...]
    data: bytes
    _writers: np.ndarray = field(repr=False)

    def values(self, dtype) -> np.ndarray:
        """The array's contents as ``dtype`` (the trace does not know element types), in its
        declared shape when the element size matches."""
        a = np.frombuffer(self.data, dtype=dtype)
        n = int(np.prod(self.shape)) if self.shape else 0
        return a.reshape(self.shape) if n and a.size == n else a

    def writers(self) -> np.ndarray:
        """Thread index that last wrote each element (-1: never written in this threadgroup),
        in the array's declared shape."""
        w = self._writers.astype(np.int32)
        out = np.where(w == NEVER_WRITTEN, -1, w & ~FRESH)
        return self._shaped(out)

    def written_since_barrier(self) -> np.ndarray:
        """True for elements written since the previous threadgroup_barrier(mem_threadgroup)."""
        w = self._writers.astype(np.int32)
        return self._shaped((w != NEVER_WRITTEN) & ((w & FRESH) != 0))

    def _shaped(self, per_element: np.ndarray) -> np.ndarray:
        n = int(np.prod(self.shape)) if self.shape else per_element.size
        return per_element.reshape(self.shape) if per_element.size == n else per_element


@dataclass
class Snapshot:
    """Threadgroup memory of one threadgroup as the barrier at ``file:line`` released."""

    threadgroup: tuple[int, int, int]
    step: int
    file: str | None
    line: int
    regions: dict[str, Region]

    def __getitem__(self, name: str) -> Region:
        if name not in self.regions:
            raise KeyError(f"no threadgroup array {name!r} in this snapshot (arrays: {', '.join(self.regions)})")
        return self.regions[name]


@dataclass(frozen=True)
class Event:
    threadgroup: tuple[int, int, int]
    step: int
    thread: int           # thread_index_in_threadgroup
    kind: str             # start, end, barrier-arrive, barrier-release, barrier-depart, simd-arrive, simd-depart
    file: str | None
    line: int
    operation: str | None = None   # simd-group events: which function
    mem_flags: int = 0             # barrier events
    snapshot: Snapshot | None = None

    @property
    def simdgroup(self) -> int:
        return self.thread // 32

    @property
    def lane(self) -> int:
        return self.thread % 32

    def __str__(self) -> str:
        where = f" at {self.file}:{self.line}" if self.file else ""
        what = f" {self.operation}" if self.operation else ""
        return (f"tg {self.threadgroup} step {self.step}: thread {self.thread} "
                f"(simdgroup {self.simdgroup} lane {self.lane}) {self.kind}{what}{where}")


class Trace:
    """The events of a traced launch, ordered by threadgroup and step."""

    def __init__(self, events, threadgroups_per_grid: tuple[int, int, int],
                 threads_per_threadgroup: tuple[int, int, int], dropped_events: int = 0,
                 dropped_snapshots: int = 0, *, snapshots: list[Snapshot] | None = None):
        """``events``: the list, or a function that makes it when it is first asked for
        (a launch traced with snapshots has hundreds of thousands of events, and a reader
        of its snapshots needs none of them); ``snapshots``: the events' snapshots in
        their order, when known without the events."""
        self._events = events
        self._snapshots = snapshots
        self.threadgroups_per_grid = tuple(threadgroups_per_grid)
        self.threads_per_threadgroup = tuple(threads_per_threadgroup)
        self.dropped_events = dropped_events
        self.dropped_snapshots = dropped_snapshots

    @property
    def events(self) -> list[Event]:
        if callable(self._events):
            self._events = self._events()
        return self._events

    @property
    def complete(self) -> bool:
        return not self.dropped_events and not self.dropped_snapshots

    @property
    def snapshots(self) -> list[Snapshot]:
        if self._snapshots is not None:
            return list(self._snapshots)
        return [e.snapshot for e in self.events if e.snapshot is not None]

    def threadgroup(self, position) -> list[Event]:
        """The events of the threadgroup at ``position`` (x, y[, z])."""
        pos = tuple(position) + (0,) * (3 - len(position))
        return [e for e in self.events if e.threadgroup == pos]

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return (f"Trace({len(self)} events, {len(self.snapshots)} snapshots, grid {self.threadgroups_per_grid}, "
                f"threadgroup {self.threads_per_threadgroup}, dropped {self.dropped_events} events and "
                f"{self.dropped_snapshots} snapshots)")


def _position(linear: int, ntg) -> tuple[int, int, int]:
    return (linear % ntg[0], (linear // ntg[0]) % ntg[1], linear // (ntg[0] * ntg[1]))


def request(trace) -> Tracing | None:
    """The Tracing a launch's ``trace=`` argument asks for (None: no trace)."""
    if trace is None or trace is False:
        return None
    if trace is True:
        return Tracing()
    if isinstance(trace, Tracing):
        return trace
    raise LaunchError(f"trace= must be True, False, None or a Tracing(...), not {trace!r}")


class TracePlan:
    """Where one launch's trace goes in the shared region, and how to read it back."""

    def __init__(self, tracing: Tracing, ntg, tptg, race_check: bool):
        if tracing.snapshots and not race_check:
            raise LaunchError("trace snapshots need race_check=True (the race checker's shadow memory "
                              "records who wrote each element)")
        if tracing.max_events < 1 or tracing.max_snapshot_bytes < 0:
            raise LaunchError("Tracing: max_events must be at least 1 and max_snapshot_bytes not negative")
        self.tracing = tracing
        self.ntg, self.tptg = tuple(ntg), tuple(tptg)
        total = ntg[0] * ntg[1] * ntg[2]
        self.selected = None
        if tracing.threadgroups is not None:
            self.selected = set()
            for p in tracing.threadgroups:
                pos = tuple(int(v) for v in p) + (0,) * (3 - len(p))
                if len(pos) != 3 or any(not 0 <= pos[i] < ntg[i] for i in range(3)):
                    raise LaunchError(f"traced threadgroup {tuple(p)} is outside the grid of {tuple(ntg)} threadgroups")
                self.selected.add((pos[2] * ntg[1] + pos[1]) * ntg[0] + pos[0])
        dt, _ = _layout()
        self.total = total
        self.select_bytes = (total + 7) // 8 if self.selected is not None else 0
        self.events_at = (dt["TraceHeader"].itemsize + self.select_bytes + 63) // 64 * 64
        self.blob_at = self.events_at + tracing.max_events * dt["TraceEvent"].itemsize
        self.blob_bytes = tracing.max_snapshot_bytes if tracing.snapshots else 0
        self.nbytes = self.blob_at + max(self.blob_bytes, 8)
        self.offset = None

    def install(self, mm, offset: int) -> int:
        """Write the header at ``offset`` of the shared mapping; returns the offset."""
        h = abi().structs["TraceHeader"].from_buffer(mm, offset)
        h.event_capacity, h.event_count = self.tracing.max_events, 0
        h.blob_capacity, h.blob_used = self.blob_bytes, 0
        h.events_offset, h.blob_offset = self.events_at, self.blob_at
        h.select_offset = ctypes.sizeof(h)
        h.snapshots = 1 if self.tracing.snapshots else 0
        h.select_bits = self.total if self.selected is not None else 0
        if self.selected is not None:
            bits = bytearray(self.select_bytes)
            for i in self.selected:
                bits[i >> 3] |= 1 << (i & 7)
            at = offset + ctypes.sizeof(h)
            mm[at:at + self.select_bytes] = bytes(bits)
        del h
        self.offset = offset
        return offset

    def read(self, mm, lib) -> Trace:
        dt, kinds = _layout()
        base = self.offset
        h = np.frombuffer(mm, dt["TraceHeader"], count=1, offset=base)[0]
        n = int(min(h["event_count"], h["event_capacity"]))
        raw = np.frombuffer(mm, dt["TraceEvent"], count=n, offset=base + int(h["events_offset"])).copy()
        raw = raw[np.lexsort((raw["seq"], raw["tg"]))]
        blob_cap = int(h["blob_capacity"])
        blob = bytes(mm[base + int(h["blob_offset"]):base + int(h["blob_offset"]) + blob_cap]) if blob_cap else b""
        so_base = _call(lib, "mslemu_so_base", ctypes.c_uint64, [])()
        op_name = _call(lib, "mslemu_op_name", ctypes.c_char_p, [ctypes.c_int])
        # every string and snapshot is read now, while the kernel's object is loaded (the
        # strings are in it); the events themselves are made when first asked for
        strings: dict[int, str | None] = {0: None}
        for offset in np.unique(raw["file"]).tolist():
            if offset:
                strings[offset] = ctypes.string_at(so_base + offset).decode(errors="replace")
        names = {code: kinds.get(code, f"kind {code}") for code in np.unique(raw["kind"]).tolist()}
        simd = np.isin(raw["kind"], [code for code, name in names.items() if name.startswith("simd")])
        ops = {code: op_name(code).decode() for code in np.unique(raw["op"][simd]).tolist()}

        def text(offset: int) -> str | None:
            if offset not in strings:
                strings[offset] = ctypes.string_at(so_base + offset).decode(errors="replace")
            return strings[offset]

        snapshots: dict[int, Snapshot] = {}  # row -> its snapshot
        for row in np.flatnonzero(raw["blob"]).tolist():
            e = raw[row]
            snapshots[row] = _snapshot(blob, int(e["blob"]) - 1, _position(int(e["tg"]), self.ntg), int(e["seq"]),
                                       strings[int(e["file"])], int(e["line"]), text)
        ntg = self.ntg

        def events() -> list[Event]:
            out = []
            positions: dict[int, tuple[int, int, int]] = {}
            # the columns as Python lists: a field of a numpy record costs microseconds
            fields = ("tg", "seq", "tid", "kind", "file", "line", "op", "flags")
            for row, (tg, seq, tid, code_kind, file_at, line, code, flags) in enumerate(
                    zip(*(raw[f].tolist() for f in fields))):
                pos = positions.get(tg)
                if pos is None:
                    pos = positions[tg] = _position(tg, ntg)
                kind = names[code_kind]
                out.append(Event(pos, seq, tid, kind, strings[file_at], line, ops[code] if kind.startswith("simd") else None,
                                 flags, snapshots.get(row)))
            return out

        dropped_events = max(0, int(h["event_count"]) - int(h["event_capacity"]))
        release = [code for code, name in names.items() if name == "barrier-release"]
        releases = int(np.isin(raw["kind"], release).sum())
        dropped_snaps = releases - len(snapshots) if h["snapshots"] else 0
        trace = Trace(events, self.ntg, self.tptg, dropped_events, int(dropped_snaps),
                      snapshots=list(snapshots.values()))
        if not trace.complete:
            warnings.warn(TraceTruncated(
                f"the trace is incomplete: {trace.dropped_events} event(s) and {trace.dropped_snapshots} snapshot(s) "
                "did not fit; trace fewer threadgroups or raise Tracing(max_events=..., max_snapshot_bytes=...)"),
                stacklevel=3)
        return trace


def _call(lib, name: str, restype, argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, argtypes
    return f


def _snapshot(blob: bytes, at: int, pos, step: int, file, line: int, text) -> Snapshot:
    dt, _ = _layout()
    head_t, region_t = dt["TraceSnapshotHead"], dt["TraceRegion"]
    head = np.frombuffer(blob, head_t, count=1, offset=at)[0]
    nbytes, nreg = int(head["bytes"]), int(head["regions"])
    regs = np.frombuffer(blob, region_t, count=nreg, offset=at + head_t.itemsize)
    mem_at = at + head_t.itemsize + nreg * region_t.itemsize
    mem = blob[mem_at:mem_at + nbytes]
    writers_at = mem_at + (nbytes + 7) // 8 * 8
    units = np.frombuffer(blob, "<u2", count=nbytes, offset=writers_at)  # the last writer of each byte
    regions = {}
    for r in regs:
        off, size, esize, nd = int(r["offset"]), int(r["size"]), int(r["esize"]), int(r["nd"])
        shape = tuple(int(v) for v in r["dims"][:nd]) if nd else ((size // esize,) if esize else ())
        per_element = units[off:off + size:max(1, esize)]  # an element's writer is its first byte's
        name = text(int(r["name"])) or f"threadgroup memory at {off}"
        if name in regions:
            name = f"{name}@{off}"
        regions[name] = Region(name, off, size, esize, shape, bytes(mem[off:off + size]), per_element.copy())
    return Snapshot(pos, step, file, line, regions)
