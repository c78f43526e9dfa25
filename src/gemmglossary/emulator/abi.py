"""The emulator's interface between C++ and Python, read from shim/mslemu_abi.h.

The header is the one description of the launch and result structs, the parameter
descriptions, the error kinds, parameter kinds and op codes. This module parses the small
subset of C++ the header keeps to (see its opening comment), builds the ctypes structures
from it, and checks them against the layout the compiler chose, which every compiled
kernel exports (``mslemu_abi_layout``): a difference is an :class:`AbiMismatch`, raised
before anything is launched.
"""

from __future__ import annotations

import ctypes
import re
from functools import lru_cache
from pathlib import Path

from .errors import EmulatorError

HEADER = Path(__file__).resolve().parent / "shim" / "mslemu_abi.h"

# the C++ types the header may use in its field lists, and what ctypes calls them
CTYPES = {
    "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16,
    "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
    "double": ctypes.c_double, "char": ctypes.c_char, "void*": ctypes.c_void_p, "const char*": ctypes.c_char_p,
    "MslemuEntry": ctypes.c_void_p,
}

# ctypes structure name -> the header's field-list macro
STRUCTS = {"MslemuResult": "MSLEMU_RESULT_FIELDS", "MslemuLaunch": "MSLEMU_LAUNCH_FIELDS",
           "ParamInfo": "MSLEMU_PARAM_INFO_FIELDS", "TraceHeader": "MSLEMU_TRACE_HEADER_FIELDS",
           "TraceEvent": "MSLEMU_TRACE_EVENT_FIELDS", "TraceSnapshotHead": "MSLEMU_TRACE_SNAPSHOT_FIELDS",
           "TraceRegion": "MSLEMU_TRACE_REGION_FIELDS"}


class AbiMismatch(EmulatorError):
    """Python's reading of mslemu_abi.h disagrees with the compiled C++ (a bug of the emulator)."""


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_enums(text: str) -> dict[str, dict[str, int]]:
    """{enum name: {enumerator: value}}; an enumerator without a value is the previous plus one."""
    enums: dict[str, dict[str, int]] = {}
    for m in re.finditer(r"\benum\s+(\w+)\s*(?::\s*\w+\s*)?\{(.*?)\}", _strip_comments(text), flags=re.S):
        values: dict[str, int] = {}
        nxt = 0
        for item in (x.strip() for x in m.group(2).split(",")):
            if not item:
                continue
            im = re.fullmatch(r"(\w+)(?:\s*=\s*(-?\w+))?", item)
            if not im:
                raise AbiMismatch(f"{HEADER}: enum {m.group(1)}: cannot read {item!r} (use NAME or NAME = integer)")
            nxt = int(im.group(2), 0) if im.group(2) else nxt
            values[im.group(1)] = nxt
            nxt += 1
        enums[m.group(1)] = values
    return enums


def parse_fields(text: str, macro: str, constants: dict[str, int]) -> list[tuple[str, str, int | None]]:
    """[(C++ type, field name, array length or None)] of one MSLEMU_*_FIELDS macro."""
    m = re.search(rf"#define\s+{macro}\(FIELD,\s*ARRAY\)(.*?)(?<!\\)\n", _strip_comments(text).replace("\\\n", "\\ "),
                  flags=re.S)
    if not m:
        raise AbiMismatch(f"{HEADER}: no '#define {macro}(FIELD, ARRAY)'")
    fields = []
    for kind, args in re.findall(r"\b(FIELD|ARRAY)\(([^()]*)\)", m.group(1)):
        parts = [a.strip() for a in args.split(",")]
        if kind == "FIELD" and len(parts) == 2:
            fields.append((parts[0], parts[1], None))
        elif kind == "ARRAY" and len(parts) == 3:
            n = parts[2]
            fields.append((parts[0], parts[1], int(n) if n.isdigit() else constants[n]))
        else:
            raise AbiMismatch(f"{HEADER}: {macro}: cannot read {kind}({args})")
    return fields


def _ctype(cxx: str, structs: dict[str, type]) -> type:
    if cxx in CTYPES:
        return CTYPES[cxx]
    if cxx.endswith("*") and cxx[:-1].strip() in structs:
        return ctypes.POINTER(structs[cxx[:-1].strip()])
    raise AbiMismatch(f"{HEADER}: field type {cxx!r} is not one abi.py knows (add it to CTYPES)")


class Abi:
    """What the header says, as Python values and ctypes structures."""

    def __init__(self, text: str):
        self.enums = parse_enums(text)
        self.constants = {k: v for e in self.enums.values() for k, v in e.items()}
        self.fields: dict[str, list[tuple[str, str, int | None]]] = {}
        self.structs: dict[str, type] = {}
        for name, macro in STRUCTS.items():
            fields = parse_fields(text, macro, self.constants)
            cfields = []
            for cxx, fname, n in fields:
                t = _ctype(cxx, self.structs)
                cfields.append((fname, t * n if n is not None else t))
            self.fields[name] = fields
            self.structs[name] = type(name, (ctypes.Structure,), {"_fields_": cfields})

    def __getitem__(self, name: str) -> int:
        """The value of an enumerator, e.g. abi["E_OOB"]."""
        return self.constants[name]

    def check_layout(self, lib: ctypes.CDLL, where: str) -> None:
        """Compare the ctypes structures with the compiled ones (mslemu_abi_layout of `lib`)."""
        layout = lib.mslemu_abi_layout
        layout.restype = ctypes.POINTER(_AbiField)
        layout.argtypes = [ctypes.POINTER(ctypes.c_int)]
        n = ctypes.c_int()
        rows = layout(ctypes.byref(n))
        compiled: dict[str, dict[str, tuple[str, int, int]]] = {}
        sizes: dict[str, int] = {}
        current = None
        for i in range(n.value):
            r = rows[i]
            typ, name = r.type.decode(), r.name.decode()
            if typ == "struct":
                current = name
                sizes[name] = r.size
                compiled[name] = {}
            else:
                compiled[current][name] = (typ, r.offset, r.size)
        problems = []
        for sname, st in self.structs.items():
            if sname not in compiled:
                problems.append(f"{sname} is missing from the compiled layout")
                continue
            if ctypes.sizeof(st) != sizes[sname]:
                problems.append(f"sizeof({sname}) is {sizes[sname]} in C++ but {ctypes.sizeof(st)} in Python")
            declared = {fname: cxx for cxx, fname, _ in self.fields[sname]}
            for fname, (typ, off, size) in compiled[sname].items():
                if fname not in declared:
                    problems.append(f"{sname}.{fname} exists in C++ only")
                    continue
                py = getattr(st, fname)
                if (py.offset, py.size) != (off, size) or declared[fname] != typ:
                    problems.append(f"{sname}.{fname}: C++ has {typ} at offset {off} ({size} bytes), Python read "
                                    f"{declared[fname]} at offset {py.offset} ({py.size} bytes)")
            problems += [f"{sname}.{f} exists in Python only" for f in declared if f not in compiled[sname]]
        if problems:
            raise AbiMismatch(f"{where}: the emulator's C++/Python interface is out of step ({HEADER.name}): "
                              + "; ".join(problems))


class _AbiField(ctypes.Structure):
    # the one struct Python must know before it can read the others' layout; its own
    # layout is checked by the first row, which describes AbiField itself
    _fields_ = [("type", ctypes.c_char_p), ("name", ctypes.c_char_p), ("offset", ctypes.c_uint64),
                ("size", ctypes.c_uint64)]


@lru_cache(maxsize=1)
def abi() -> Abi:
    return Abi(HEADER.read_text())
