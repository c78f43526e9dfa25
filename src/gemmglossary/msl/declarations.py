"""What a kernel file declares at file scope: its ``-D`` constants, its compile-time
constants, and the layout of its structs.

- :func:`macro_defaults`: ``#ifndef TM`` / ``#define TM 4`` / ``#endif`` is a constant the
  caller may override with ``-DTM=...``; its default is read from those lines.
- :func:`constants`: the integer value of every macro and ``constant constexpr``
  constant of the file, for given ``-D`` overrides, evaluated in file order.
- :func:`struct_dtype`: the numpy dtype of a ``struct`` with the Metal layout (the sizes
  and alignments of the Metal Shading Language specification, Table 2.2-2.4: a 3-vector
  takes the space of a 4-vector, ``packed_`` vectors align to their element);
- :func:`function_constants`: every ``constant T name [[function_constant(i)]];``.

The file is read as written (not preprocessed): these are facts stated at top level of
the file, which is how the first-party kernels state them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

from .expressions import ExpressionError, evaluate
from .lexer import Tok, assign_lines, tokenize
from .tokens import (TRIVIA, attribute_end, attribute_items, error, is_attribute_start, match, next_sig,
                     prev_sig, split_top_level, text)

_DIRECTIVE = re.compile(r"#\s*(\w+)\s*(.*?)\s*$", re.S)

#: Scalar types: (numpy type code, size in bytes).
SCALARS = {
    "bool": ("?", 1),
    "char": ("i1", 1), "int8_t": ("i1", 1), "uchar": ("u1", 1), "uint8_t": ("u1", 1),
    "short": ("i2", 2), "int16_t": ("i2", 2), "ushort": ("u2", 2), "uint16_t": ("u2", 2),
    "int": ("i4", 4), "int32_t": ("i4", 4), "uint": ("u4", 4), "uint32_t": ("u4", 4),
    "unsigned": ("u4", 4), "unsigned int": ("u4", 4),
    "long": ("i8", 8), "int64_t": ("i8", 8), "ulong": ("u8", 8), "uint64_t": ("u8", 8),
    "size_t": ("u8", 8),
    "half": ("f2", 2), "float16_t": ("f2", 2), "float": ("f4", 4),
}
_VECTOR = re.compile(r"^(packed_)?(bool|char|uchar|short|ushort|int|uint|long|ulong|half|float)([234])$")


def _directive(tok: Tok) -> tuple[str, str]:
    """``#  define X 4 // c`` -> ("define", "X 4"), comments and continuations removed."""
    body = re.sub(r"/\*.*?\*/|//[^\n]*", " ", tok.text.replace("\\\n", " "), flags=re.S)
    m = _DIRECTIVE.match(body)
    return (m.group(1), " ".join(m.group(2).split())) if m else ("", "")


def _directives(source: str) -> list[tuple[str, str]]:
    return [_directive(t) for t in tokenize(source) if t.kind == "pp"]


def macro_defaults(source: str) -> dict[str, str]:
    """``{NAME: default text}`` of every ``#ifndef NAME`` / ``#define NAME text`` / ``#endif``."""
    out: dict[str, str] = {}
    pp = _directives(source)
    for (d0, a0), (d1, a1) in zip(pp, pp[1:]):
        if d0 == "ifndef" and d1 == "define":
            name, _, value = a1.partition(" ")
            if name == a0 and "(" not in name:
                out[name] = value
    return out


@dataclass
class Constants:
    """Integer constants of a file; ``unknown`` says why a named constant has no value."""

    values: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> int:
        if name in self.values:
            return self.values[name]
        raise KeyError(self.unknown.get(name, f"{name} is not a constant of the file"))

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def get(self, name: str, default=None):
        return self.values.get(name, default)


def _constexpr(toks: list[Tok], i: int) -> tuple[str, str, int] | None:
    """At a file-scope ``constant constexpr T NAME = expr;`` (either keyword order,
    ``static`` allowed): (NAME, expr text, index after ``;``)."""
    j, words = i, []
    while j < len(toks) and toks[j].kind == "id":
        words.append(toks[j].text)
        j = next_sig(toks, j + 1)
    if "constexpr" not in words or len(words) < 3 or j >= len(toks) or toks[j].text != "=":
        return None
    end = j
    while end < len(toks) and toks[end].text != ";":
        end += 1
    expr = "".join(t.text if t.kind not in TRIVIA else " " for t in toks[j + 1:end])
    return words[-1], " ".join(expr.split()), end + 1


def constants(source: str, defines: dict | None = None) -> Constants:
    """Every integer macro and ``constexpr`` constant, with ``defines`` overriding the
    ``#ifndef`` defaults as ``-D`` does (a non-integer ``-D`` value, and what is built on
    it, has no value: asking for it raises ``KeyError`` saying why)."""
    out = Constants()
    defines = {str(k): v for k, v in (defines or {}).items()}
    for name, value in defines.items():
        try:
            out.values[name] = value if isinstance(value, int) else evaluate(str(value), out.values)
        except ExpressionError:  # not an error until a constant that needs it is asked for
            out.unknown[name] = f"-D{name}={value!r} is not an integer"
    toks = tokenize(source)
    depth = 0
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "pp":
            kind, rest = _directive(t)
            name, _, value = rest.partition(" ")
            if kind == "define" and re.fullmatch(r"[A-Za-z_]\w*", name) and name not in defines:
                if name in out.values or name in out.unknown:
                    # e.g. one value per #if branch: without preprocessing, no value is known
                    out.values.pop(name, None)
                    out.unknown[name] = f"{name} is #defined more than once (#if is not evaluated here)"
                else:
                    _define(out, name, value)
        elif t.text in ("{", "}") and t.kind == "punct":
            depth += 1 if t.text == "{" else -1
        elif depth == 0 and t.kind == "id" and t.text in ("constant", "constexpr", "static"):
            found = _constexpr(toks, i)
            if found:
                _define(out, found[0], found[1])
                i = found[2]
                continue
        i += 1
    return out


def _define(out: Constants, name: str, expr: str) -> None:
    try:
        out.values[name] = evaluate(expr, out.values)
        out.unknown.pop(name, None)
    except ExpressionError as exc:
        # A constant built on one without a value has the same reason for having none.
        cause = next((out.unknown[w] for w in re.findall(r"[A-Za-z_]\w*", expr) if w in out.unknown), None)
        out.unknown[name] = cause or f"{name} = {expr}: {exc}"


# ---------------------------------------------------------------------------- structs

def _member_type(words: list[str], structs: dict[str, tuple[np.dtype, int]], where: Tok
                 ) -> tuple[object, int, int]:
    """(numpy format, size, alignment) of a member type named by ``words``."""
    words = [w for w in words if w not in ("const", "volatile")]
    name = " ".join(words).replace(" :: ", "::")
    name = name[len("metal::"):] if name.startswith("metal::") else name
    if name in SCALARS:
        code, size = SCALARS[name]
        return ("<" + code if size > 1 else code), size, size
    m = _VECTOR.match(name)
    if m:
        code, size = SCALARS[m.group(2)]
        n = int(m.group(3))
        fmt = (("<" + code if size > 1 else code), (n,))
        if m.group(1):  # packed_: tightly packed, aligned to the element
            return fmt, n * size, size
        slots = 4 if n == 3 else n
        return fmt, slots * size, slots * size
    if name in structs:
        dt, align = structs[name]
        return dt, dt.itemsize, align
    raise error(where, f"cannot lay out a struct member of type '{' '.join(words)}' "
                       "(scalars, vectors, arrays and structs of this file are supported)")


def _without_attributes(toks: list[Tok], a: int, b: int) -> list[Tok]:
    """The significant tokens of ``toks[a..b]``, ``[[...]]`` attribute lists left out."""
    out = []
    k = a
    while k <= b:
        if is_attribute_start(toks, k):
            k = attribute_end(toks, k) + 1
            continue
        if toks[k].kind not in TRIVIA:
            out.append(toks[k])
        k += 1
    return out


def _struct_body(toks: list[Tok], lb: int, rb: int, structs: dict[str, tuple[np.dtype, int]]
                 ) -> tuple[np.dtype, int]:
    names, formats, offsets = [], [], []
    offset, align_max = 0, 1
    for a, b in split_top_level(toks, lb + 1, rb - 1, ";"):
        member = _without_attributes(toks, a, b)
        k = 0
        while k < len(member) and (member[k].kind == "id" or member[k].text == "::"):
            k += 1
        if k < 2 or (k < len(member) and member[k].text not in (",", "[")):
            raise error(member[0], f"cannot lay out the struct member '{' '.join(t.text for t in member)}' "
                                   "(scalars, vectors, arrays and structs of this file are supported)")
        fmt, size, align = _member_type([t.text for t in member[:k - 1]], structs, member[0])
        declarators: list[list[Tok]] = [[member[k - 1]]]
        for t in member[k:]:
            if t.text == ",":
                declarators.append([])
            else:
                declarators[-1].append(t)
        for decl in declarators:
            if not decl or decl[0].kind != "id":
                raise error(member[0], "cannot read the declarators of this struct member")
            dims, j = [], 1
            while j < len(decl) and decl[j].text == "[":
                close = match(decl, j)
                dims.append(evaluate(" ".join(t.text for t in decl[j + 1:close])))
                j = close + 1
            if j != len(decl):
                raise error(decl[j], f"cannot read the declarator of struct member '{decl[0].text}'")
            offset = (offset + align - 1) // align * align
            names.append(decl[0].text)
            formats.append((fmt, tuple(dims)) if dims else fmt)
            offsets.append(offset)
            offset += size * (int(np.prod(dims)) if dims else 1)
            align_max = max(align_max, align)
    size = (offset + align_max - 1) // align_max * align_max
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size}), align_max


def struct_dtypes(source: str, filename: str = "<source>") -> dict[str, np.dtype]:
    """The numpy dtype of every ``struct NAME { ... };`` and ``typedef struct { ... } NAME;``
    of the file, by name."""
    toks = tokenize(source)
    assign_lines(toks, filename)
    structs: dict[str, tuple[np.dtype, int]] = {}
    i = 0
    while i < len(toks):
        if toks[i].kind == "id" and toks[i].text == "struct":
            n = next_sig(toks, i + 1)
            while n < len(toks) and is_attribute_start(toks, n):
                n = next_sig(toks, attribute_end(toks, n) + 1)
            lb = next_sig(toks, n + 1)
            if n < len(toks) and toks[n].kind == "id" and lb < len(toks) and toks[lb].text == "{":
                rb = match(toks, lb)
                structs[toks[n].text] = _struct_body(toks, lb, rb, structs)
                i = rb + 1
                continue
            # C's `typedef struct { ... } NAME;` (llama.cpp's ggml-metal-impl.h declares its
            # argument structs so, for its C++ host and its Metal kernels alike)
            if n < len(toks) and toks[n].text == "{" and toks[prev_sig(toks, i - 1)].text == "typedef":
                rb = match(toks, n)
                name = next_sig(toks, rb + 1)
                if name < len(toks) and toks[name].kind == "id" and toks[next_sig(toks, name + 1)].text == ";":
                    structs[toks[name].text] = _struct_body(toks, n, rb, structs)
                    i = rb + 1
                    continue
        i += 1
    return {name: dt for name, (dt, _) in structs.items()}


def struct_dtype(source: str, name: str, filename: str = "<source>") -> np.dtype:
    """The numpy dtype of ``struct name``, laid out as Metal lays it out."""
    structs = struct_dtypes(source, filename)
    if name not in structs:
        raise KeyError(f"{filename}: no 'struct {name} {{...}};' declared at file scope")
    return structs[name]


# ---------------------------------------------------------------------- function constants

@dataclass(frozen=True)
class FunctionConstant:
    """``constant T name [[function_constant(index)]];``"""

    name: str
    type: str  # its significant tokens joined by spaces: "bool", "metal :: uint"
    argument: str  # the attribute's argument as written
    index: int | None  # its integer value, None when it is not plain arithmetic
    file: str
    line: int


def function_constants(source: str | list[Tok], filename: str = "<source>") -> list[FunctionConstant]:
    """Every function constant declaration of a source (comments and strings ignored)."""
    if isinstance(source, str):
        return list(_found_in_text(source, filename))
    return _function_constants(source)


# Tokenizing is the cost: a launch plan of llama.cpp asks on each launch, in a 6,700-line file.
@functools.lru_cache(maxsize=16)
def _found_in_text(source: str, filename: str) -> tuple[FunctionConstant, ...]:
    toks = tokenize(source)
    assign_lines(toks, filename)
    return tuple(_function_constants(toks))


def _function_constants(toks: list[Tok]) -> list[FunctionConstant]:
    out = []
    for i, t in enumerate(toks):
        if t.kind != "id" or t.text != "constant":
            continue
        semi = i + 1
        while semi < len(toks) and toks[semi].text not in (";", "{", "}"):
            semi += 1
        attr = next((k for k in range(i, semi) if is_attribute_start(toks, k)), None)
        if attr is None or semi >= len(toks) or toks[semi].text != ";":
            continue
        items = dict(attribute_items(toks, attr, attribute_end(toks, attr)))
        if "function_constant" not in items:
            continue
        name_i = prev_sig(toks, attr - 1)
        argument = items["function_constant"]
        try:
            index = evaluate(argument)
        except ExpressionError:
            index = None
        out.append(FunctionConstant(toks[name_i].text, text(toks, i + 1, name_i - 1), argument, index,
                                    t.file, t.line))
    return out
