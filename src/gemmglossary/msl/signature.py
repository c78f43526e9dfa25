"""Best-effort reading of a kernel's ``[[buffer(i)]]`` scalar parameters.

The Metal backend passes Python scalars with ``setBytes``, so it needs to know how
many bytes and which encoding the kernel expects for ``constant T& x [[buffer(i)]]``.
This reads the declared ``T`` from the source text for plain scalar types; anything
else (structs, template parameters, macros) is left out and the caller must pass a
numpy scalar, a structured array or bytes.  The emulator has its own, complete parser;
this one only serves the GPU path.
"""

from __future__ import annotations

import re

import numpy as np

SCALAR_TYPES = {
    "bool": np.bool_,
    "char": np.int8, "int8_t": np.int8,
    "uchar": np.uint8, "uint8_t": np.uint8,
    "short": np.int16, "int16_t": np.int16,
    "ushort": np.uint16, "uint16_t": np.uint16,
    "int": np.int32, "int32_t": np.int32,
    "uint": np.uint32, "uint32_t": np.uint32, "unsigned": np.uint32, "unsigned int": np.uint32,
    "long": np.int64, "int64_t": np.int64, "size_t": np.uint64,
    "ulong": np.uint64, "uint64_t": np.uint64,
    "half": np.float16, "float16_t": np.float16,
    "float": np.float32,
}

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PARAM = re.compile(
    r"^\s*(?:const\s+)?constant\s+(?:const\s+)?(?P<type>[A-Za-z_][\w ]*?)\s*&\s*\w+\s*"
    r"\[\[\s*buffer\s*\(\s*(?P<index>\d+)\s*\)\s*\]\]\s*$"
)


def _params(source: str, name: str) -> list[str] | None:
    text = _COMMENTS.sub(" ", source)
    for m in re.finditer(r"\b" + re.escape(name) + r"\s*\(", text):
        before = text[max(0, m.start() - 200):m.start()]
        if not re.search(r"(\bkernel\b|\[\[\s*kernel\b)[^;{}]*\bvoid\s*$", before):
            continue
        depth, i, start = 1, m.end(), m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        body = text[start:i - 1]
        parts, depth, cur = [], 0, []
        for ch in body:
            if ch in "(<[":
                depth += 1
            elif ch in ")>]":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
        parts.append("".join(cur))
        return parts
    return None


def scalar_parameter_types(source: str, name: str) -> dict[int, np.dtype]:
    """{buffer index: numpy dtype} for ``constant T& x [[buffer(i)]]`` with scalar ``T``."""
    params = _params(source, name)
    out: dict[int, np.dtype] = {}
    for p in params or ():
        m = _PARAM.match(" ".join(p.split()))
        if m and m.group("type") in SCALAR_TYPES:
            out[int(m.group("index"))] = np.dtype(SCALAR_TYPES[m.group("type")])
    return out
