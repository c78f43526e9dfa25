"""The facts of one emulator diagnostic: which lines, threads, buffer, element.

Hints are written against :class:`Facts`, never against message text. The facts come
from attributes of the exception or warning when the emulator sets them (asked of
stream emu-robust: ``site``, ``thread``, ``threadgroup``, ``other_site``, ``access``,
``buffer``, ``index``, ``length``, ``sites``, ``kind``...); until it does, and for any
attribute it leaves unset, they are read from the message, in the formats pinned by
tests/exercises/test_facts.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..emulator import errors

#: exception type -> problem kind (see spec.PROBLEM_KINDS)
KINDS = (
    (errors.CompileError, "compile"), (errors.DataRaceError, "race"), (errors.OutOfBoundsError, "out-of-bounds"),
    (errors.BarrierError, "barrier"), (errors.SimdgroupDivergenceError, "divergence"),
    (errors.KernelTimeoutError, "timeout"), (errors.KernelCrash, "crash"), (errors.LaunchError, "launch"),
    (errors.PortabilityWarning, "warning"),
)


@dataclass(frozen=True)
class Site:
    file: str
    line: int


@dataclass(frozen=True)
class Thread:
    position: tuple
    index: int
    simdgroup: int
    lane: int

    def __str__(self) -> str:
        x, y, z = self.position
        return f"thread ({x},{y},{z}) [index {self.index}, simdgroup {self.simdgroup} lane {self.lane}]"


@dataclass
class Facts:
    kind: str
    message: str
    threadgroup: tuple | None = None
    thread: Thread | None = None
    site: Site | None = None
    access: str | None = None  # "read" | "write"
    other_thread: Thread | None = None
    other_site: Site | None = None
    other_access: str | None = None
    memory: str | None = None  # buffer or threadgroup variable name
    element: str | None = None  # threadgroup element as shown, "tileA[0][1]"
    index: int | None = None  # out-of-bounds element index
    length: int | None = None  # elements in the buffer
    sites: list = field(default_factory=list)  # every file:line named, in order
    warning: str | None = None  # "uninitialized-read" | "returned-before-barrier" | "oob-read"


_THREAD = r"thread \((\d+),(\d+),(\d+)\) \[index (\d+), simdgroup (\d+) lane (\d+)\]"
_TG = re.compile(r"threadgroup \((\d+),(\d+),(\d+)\)")
_SITE = re.compile(r"(\S+?):(\d+)(?![\d:])")
_RACE_PARTS = re.compile(
    _THREAD + r" (?P<access>reads|writes) it at (?P<site>\S+?:\d+), but " + _THREAD
    + r" (?P<other>read|wrote) it at (?P<osite>\S+?:\d+)"
)
_OOB = re.compile(
    r"out-of-bounds (?P<access>read|write|access)\w*(?: \w+)? (?:to|of|from|in) '(?P<buffer>[^']*)': element index "
    r"(?P<index>-?\d+) is outside the valid range \[0, (?P<length>\d+)\)"
)
_UNINIT = re.compile(r"reads threadgroup memory (?P<element>'[^']*'|\S+) at (?P<site>\S+?:\d+)")
_RETURNED = re.compile(r"returned before the threadgroup_barrier at (?P<site>\S+?:\d+)")


def _site(text: str) -> Site:
    file, _, line = text.rpartition(":")
    return Site(file, int(line))


def _thread(groups) -> Thread:
    x, y, z, i, s, lane = (int(g) for g in groups)
    return Thread((x, y, z), i, s, lane)


def _element_name(element: str | None) -> str | None:
    if not element:
        return None
    m = re.match(r"'?([A-Za-z_]\w*)", element)
    return m.group(1) if m else None


def kind_of(diagnostic) -> str:
    for cls, kind in KINDS:
        if isinstance(diagnostic, cls):
            return kind
    # Outside the emulator: the Metal backend's MetalError, or the ValueError/TypeError with
    # which gg.metal_kernel and the GPU path refuse a launch (threadgroup too large, a dtype).
    if type(diagnostic).__name__ == "MetalError" or isinstance(diagnostic, (ValueError, TypeError)):
        return "launch"
    return "crash"


def from_text(kind: str, message: str) -> Facts:
    """The facts the message states (the fallback reader)."""
    f = Facts(kind, message)
    f.sites = [Site(m.group(1), int(m.group(2))) for m in _SITE.finditer(message)
               if not m.group(1).startswith(("(", "["))]
    tg = _TG.search(message)
    if tg:
        f.threadgroup = tuple(int(g) for g in tg.groups())
    th = re.search(_THREAD, message)
    if th:
        f.thread = _thread(th.groups())
    if kind == "race":
        m = re.search(r"data race on threadgroup memory ('[^']*'|\S+)", message)
        if m:
            f.element = m.group(1).strip("'")
            f.memory = _element_name(f.element)
        p = _RACE_PARTS.search(message)
        if p:
            g = p.groups()
            f.thread, f.other_thread = _thread(g[0:6]), _thread(g[8:14])
            f.access = "read" if p.group("access") == "reads" else "write"
            f.other_access = "read" if p.group("other") == "read" else "write"
            f.site, f.other_site = _site(p.group("site")), _site(p.group("osite"))
    elif kind == "out-of-bounds":
        m = _OOB.search(message)
        if m:
            f.memory = m.group("buffer")
            f.index, f.length = int(m.group("index")), int(m.group("length"))
            f.access = m.group("access") if m.group("access") in ("read", "write") else None
            after = message[m.end():]
            s = _SITE.search(after)
            if s:
                f.site = Site(s.group(1), int(s.group(2)))
    elif kind == "warning":
        if "returned before the threadgroup_barrier" in message:
            f.warning = "returned-before-barrier"
            m = _RETURNED.search(message)
            if m:
                f.site = _site(m.group("site"))
        elif "before any thread of the threadgroup wrote it" in message:
            f.warning = "uninitialized-read"
            m = _UNINIT.search(message)
            if m:
                f.element = m.group("element").strip("'")
                f.memory = _element_name(f.element)
                f.site = _site(m.group("site"))
        elif "read outside a buffer" in message:
            f.warning = "oob-read"
            sub = from_text("out-of-bounds", message)
            f.memory, f.index, f.length, f.site = sub.memory, sub.index, sub.length, sub.site
    elif f.sites:
        f.site = f.sites[0]
    return f


def _as_site(value) -> Site | None:
    if value is None or isinstance(value, Site):
        return value
    file = getattr(value, "file", None)
    line = getattr(value, "line", None)
    if file is None and isinstance(value, (tuple, list)) and len(value) == 2:
        file, line = value
    return Site(str(file), int(line)) if file is not None and line is not None else None


def _as_thread(value) -> Thread | None:
    if value is None or isinstance(value, Thread):
        return value
    try:
        return Thread(tuple(value.position), int(value.index), int(value.simdgroup), int(value.lane))
    except (AttributeError, TypeError, ValueError):
        return None


def of(diagnostic) -> Facts:
    """The facts of an emulator exception or warning (a ``warnings.WarningMessage`` too)."""
    diagnostic = getattr(diagnostic, "message", diagnostic) if not isinstance(diagnostic, BaseException) else diagnostic
    kind = kind_of(diagnostic)
    f = from_text(kind, str(diagnostic))
    # Structured fields, where the emulator provides them, win over the text.
    for name, convert in (("threadgroup", tuple), ("thread", _as_thread), ("site", _as_site),
                          ("other_thread", _as_thread), ("other_site", _as_site), ("access", str),
                          ("other_access", str), ("memory", str), ("element", str), ("index", int),
                          ("length", int)):
        value = getattr(diagnostic, name, None)
        if name == "element" and isinstance(value, str):
            value = value.strip("'")  # the emulator's element is quoted as its message shows it
        if value is not None:
            converted = convert(value)
            if converted is not None:
                setattr(f, name, converted)
    if getattr(diagnostic, "buffer", None) is not None:
        f.memory = str(diagnostic.buffer)
    sites = getattr(diagnostic, "sites", None)
    if sites:
        f.sites = [s for s in (_as_site(x) for x in sites) if s is not None]
    if kind == "warning" and getattr(diagnostic, "kind", None):
        f.warning = str(diagnostic.kind)
    return f
