"""Kernel signatures: which kernels a source declares, and each one's parameters.

:func:`parse_parameters` reads the parameter list between two parentheses of a token
list, the way the Metal compiler sees it: a parameter is its type, its name and its
attributes (``[[buffer(0)]]``, ``[[threadgroup(0)]]``, ``[[thread_position_in_grid]]``,
``[[function_constant(has_bias)]]``). :func:`kernels` finds every kernel declaration of
a source (``kernel void f(...)``, ``[[kernel]] void f(...)``, template kernels and their
``template [[host_name("x")]] [[kernel]] decltype(f<...>) f<...>;`` instantiations).

The Metal backend, ``gemmglossary run``, the kernel descriptions of
:mod:`gemmglossary.kernels` and the emulator read signatures through this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .expressions import ExpressionError, evaluate
from .lexer import Tok, assign_lines, tokenize
from .macros import expand_kernel_macros
from .tokens import (attribute_end, attribute_items, error, gnu_attribute_items, is_attribute_start,
                     match, match_back, next_sig, prev_sig, split_top_level, text)

#: Address spaces of Metal Shading Language.
ADDRESS_SPACES = ("device", "constant", "threadgroup", "thread", "threadgroup_imageblock",
                  "ray_data", "object_data")

#: numpy dtype of each scalar type of Metal Shading Language.
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

_QUALIFIERS = set(ADDRESS_SPACES) | {"const", "volatile", "restrict", "metal", "::"}


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter as declared."""

    name: str
    type: str  # its significant tokens joined by spaces: "device const float *"
    attributes: tuple[tuple[str, str], ...]  # ("buffer", "0"), ("thread_position_in_grid", "")
    file: str
    line: int

    def attribute(self, name: str) -> str | None:
        """The argument text of attribute ``name`` ("" when it takes none), or None."""
        return next((arg for n, arg in self.attributes if n == name), None)

    @property
    def words(self) -> list[str]:
        return self.type.split()

    @property
    def address_space(self) -> str | None:
        return next((w for w in self.words if w in ADDRESS_SPACES), None)

    @property
    def is_pointer(self) -> bool:
        return "*" in self.words

    @property
    def is_reference(self) -> bool:
        return "&" in self.words

    @property
    def value_type(self) -> str:
        """The type pointed or referred to, without address space and qualifiers:
        ``device const float *`` -> ``float``, ``constant GemmParams &`` -> ``GemmParams``."""
        return " ".join(w for w in self.words if w not in _QUALIFIERS and w not in ("*", "&"))

    def index(self, attribute: str, names: dict[str, int] | None = None) -> int | None:
        """The integer argument of ``[[buffer(i)]]`` / ``[[threadgroup(i)]]``, or None."""
        arg = self.attribute(attribute)
        if arg is None:
            return None
        try:
            return evaluate(arg, names)
        except ExpressionError as exc:
            raise ValueError(f"{self.file}:{self.line}: error: cannot evaluate the index of "
                             f"[[{attribute}({arg})]] of parameter '{self.name}': {exc}") from None

    @property
    def buffer(self) -> int | None:
        return self.index("buffer")


@dataclass(frozen=True)
class KernelSignature:
    name: str  # the host name: [[host_name("...")]] or the function name
    function: str
    parameters: tuple[Parameter, ...] | None  # None: a template declared in another file
    attributes: tuple[tuple[str, str], ...]  # of the declaration: kernel, max_total_threads_...
    file: str
    line: int
    template_parameters: str | None = None  # text inside template<...> of a template kernel
    template_arguments: str | None = None  # of an explicit instantiation

    def attribute(self, name: str) -> str | None:
        return next((arg for n, arg in self.attributes if n == name), None)

    @property
    def buffers(self) -> list[Parameter]:
        """The ``[[buffer(i)]]`` parameters, in declaration order."""
        return [p for p in self.parameters or () if p.attribute("buffer") is not None]


def parse_parameters(toks: list[Tok], lp: int, rp: int) -> list[Parameter]:
    """The parameters declared between the parentheses at ``lp`` and ``rp``."""
    params = []
    for a, b in split_top_level(toks, lp + 1, rp - 1):
        attrs: list[tuple[str, str]] = []
        first_attr = None
        m = a
        while m <= b:
            if is_attribute_start(toks, m):
                e = attribute_end(toks, m)
                attrs += attribute_items(toks, m, e)
                first_attr = m if first_attr is None else first_attr
                m = e + 1
                continue
            m += 1
        end = prev_sig(toks, first_attr - 1) if first_attr is not None else b
        name_i = end
        while name_i >= a and toks[name_i].kind != "id":
            name_i -= 1
        first = toks[next_sig(toks, a)]
        if name_i < a:
            raise error(first, "cannot find the name of this kernel parameter")
        params.append(Parameter(toks[name_i].text, text(toks, a, name_i - 1), tuple(attrs),
                                first.file, first.line))
    return params


def _leading_attributes(toks: list[Tok], i: int) -> tuple[list[tuple[str, str]], int]:
    """Attribute lists and ``__attribute__`` ending just before ``i``; (items, index
    of the significant token before them)."""
    items: list[tuple[str, str]] = []
    b = prev_sig(toks, i - 1)
    while True:
        if b > 0 and toks[b].text == "]" and toks[prev_sig(toks, b - 1)].text == "]":
            k = match_back(toks, b)
            items = attribute_items(toks, k, b) + items
            b = prev_sig(toks, k - 1)
        elif b >= 0 and toks[b].text == ")":
            m = match_back(toks, b)
            ga = prev_sig(toks, m - 1)
            if ga < 0 or toks[ga].text != "__attribute__":
                return items, b
            items = gnu_attribute_items(toks, ga, b) + items
            b = prev_sig(toks, ga - 1)
        else:
            return items, b


def _declaration_at(toks: list[Tok], i: int, templates: dict[str, KernelSignature]
                    ) -> tuple[KernelSignature | None, int]:
    """The kernel declared from token ``i`` (``kernel`` or the ``[[`` holding ``kernel``);
    (signature or None, index to continue from)."""
    attrs, b = _leading_attributes(toks, i)
    template_params = None
    instantiation = False
    if b >= 0 and toks[b].text == ">":
        k = match_back(toks, b)
        if k >= 0 and toks[prev_sig(toks, k - 1)].text == "template":
            template_params = text(toks, k + 1, b - 1)
    elif b >= 0 and toks[b].text == "template":
        instantiation = True
    j = i
    while True:  # over attributes and the `kernel` keyword, up to the declarator
        j = next_sig(toks, j)
        if j >= len(toks):
            return None, j
        if is_attribute_start(toks, j):
            e = attribute_end(toks, j)
            attrs += attribute_items(toks, j, e)
            j = e + 1
        elif toks[j].text == "kernel":
            j += 1
        elif toks[j].text == "__attribute__":
            k = match(toks, next_sig(toks, j + 1))
            attrs += gnu_attribute_items(toks, j, k)
            j = k + 1
        else:
            break
    host = next((a for n, a in attrs if n == "host_name"), None)
    host_name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', host)) if host else None
    if instantiation:
        # template [[host_name("x")]] [[kernel]] decltype(f<...>) f<...>;
        if toks[j].text != "decltype":
            raise error(toks[j], "expected decltype(...) in a kernel instantiation")
        p = next_sig(toks, j + 1)
        q = match(toks, p)
        inner = next_sig(toks, p + 1)
        function = toks[inner].text
        lt = next_sig(toks, inner + 1)
        args = text(toks, lt + 1, match(toks, lt) - 1) if toks[lt].text == "<" else None
        semi = q
        while semi < len(toks) and toks[semi].text != ";":
            semi += 1
        base = templates.get(function)  # None: the template is declared in another file
        sig = KernelSignature(host_name or f"{function}<{args}>", function,
                              base.parameters if base else None,
                              tuple(attrs) + (base.attributes if base else ()), toks[i].file, toks[i].line,
                              base.template_parameters if base else None, args)
        return sig, semi + 1
    k = j
    while k < len(toks) and toks[k].text != "(":
        if toks[k].text == "__attribute__":
            e = match(toks, next_sig(toks, k + 1))
            attrs += gnu_attribute_items(toks, k, e)
            k = e
        k += 1
    if k >= len(toks):
        return None, k
    name_i = prev_sig(toks, k - 1)
    while toks[name_i].text == ")":  # __attribute__((...)) after the name
        m = match_back(toks, name_i)
        ga = prev_sig(toks, m - 1)
        if toks[ga].text != "__attribute__":
            break
        attrs += gnu_attribute_items(toks, ga, name_i)
        name_i = prev_sig(toks, ga - 1)
    close = match(toks, k)
    after = next_sig(toks, close + 1)
    while after < len(toks) and toks[after].text == "__attribute__":
        e = match(toks, next_sig(toks, after + 1))
        attrs += gnu_attribute_items(toks, after, e)
        after = next_sig(toks, e + 1)
    name_tok = toks[name_i]
    sig = KernelSignature(host_name or name_tok.text, name_tok.text,
                          tuple(parse_parameters(toks, k, close)), tuple(attrs),
                          name_tok.file, name_tok.line, template_params)
    if template_params is not None:
        templates[sig.function] = sig
    return sig, close + 1


def is_kernel_start(toks: list[Tok], i: int) -> bool:
    """Whether token ``i`` starts a kernel declaration: the ``kernel`` keyword, or a
    ``[[...]]`` attribute list naming ``kernel``."""
    t = toks[i]
    if t.kind == "id" and t.text == "kernel":
        before = prev_sig(toks, i - 1)
        return before < 0 or toks[before].text not in (".", "->", "::")
    if is_attribute_start(toks, i):
        return any(n == "kernel" for n, _ in attribute_items(toks, i, attribute_end(toks, i)))
    return False


def kernels(source: str | list[Tok], filename: str = "<source>") -> list[KernelSignature]:
    """Every kernel a source declares, in order; template kernels themselves are left
    out (their instantiations are listed)."""
    if isinstance(source, str):
        toks = tokenize(expand_kernel_macros(source, filename))
        assign_lines(toks, filename)
    else:
        toks = source
    found: list[KernelSignature] = []
    templates: dict[str, KernelSignature] = {}
    i = 0
    while i < len(toks):
        if is_kernel_start(toks, i):
            sig, i = _declaration_at(toks, i, templates)
            if sig is not None and (sig.template_parameters is None or sig.template_arguments is not None):
                found.append(sig)
            continue
        i += 1
    return found


def find_kernel(source: str, name: str, filename: str = "<source>") -> KernelSignature | None:
    """The kernel whose host name (or function name) is ``name``, or None."""
    return next((k for k in kernels(source, filename) if k.name == name), None)
