"""Kernel instantiations written through a macro of the same file, expanded for readers of
the source as written.

Kernel files name their instantiations the way MLX does, through a function-like macro::

    #define INSTANTIATE(name, T)                                       \\
        template [[host_name("gemm_" #name)]] [[kernel]]               \\
        decltype(gemm<T>) gemm<T>;
    INSTANTIATE(float32, float)

A reader that does not preprocess (:mod:`gemmglossary.msl.signature` reads files as
written, for the Metal backend's checks and the kernel table) would see no kernel at all.
:func:`expand_kernel_macros` expands the invocations of such macros (those whose body
declares a kernel: ``[[kernel]]``, ``kernel`` or ``host_name``), with ``#x`` and ``a ## b``
as the preprocessor does them, nested ones included, and leaves every other line as it is:
each expansion stays on its invocation's first line (lines it spanned stay, blank), so the
reader's line numbers are still the file's. Macros from other files, and ``#if`` around a
definition, are the real preprocessor's business: this is what the emulator runs
(:func:`gemmglossary.emulator.build.preprocess`).
"""

from __future__ import annotations

import re

from .tokens import SourceError

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)]*)\)((?:[^\n\\]|\\\n|\\(?!\n))*)", re.M)
_DECLARES_KERNEL = re.compile(r"\[\[\s*kernel\b|\bkernel\b|\bhost_name\b")
_MAX_DEPTH = 16


class MacroError(SourceError):
    pass


def _definitions(source: str) -> dict[str, tuple[list[str], str, int]]:
    """{name: (parameters, body, line)} of the function-like macros declaring kernels,
    themselves or through another such macro."""
    every = {}
    for m in _DEFINE.finditer(source):
        body = re.sub(r"//[^\n]*", "", m.group(3).replace("\\\n", " "))
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        every[m.group(1)] = (params, body.strip(), source.count("\n", 0, m.start()) + 1)
    out = {name: d for name, d in every.items() if _DECLARES_KERNEL.search(d[1])}
    grew = True
    while grew:
        grew = False
        for name, d in every.items():
            if name not in out and any(re.search(r"\b" + re.escape(k) + r"\s*\(", d[1]) for k in out):
                out[name] = d
                grew = True
    return out


def _arguments(source: str, open_paren: int, where: str) -> tuple[list[str], int]:
    """The top-level comma-separated arguments from ``(`` at ``open_paren``; (args, index
    after the closing parenthesis)."""
    depth, args, start = 0, [], open_paren + 1
    for i in range(open_paren, len(source)):
        c = source[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(source[start:i].strip())
                return ([] if args == [""] else args), i + 1
        elif c == "," and depth == 1:
            args.append(source[start:i].strip())
            start = i + 1
    raise MacroError(f"{where}: error: unterminated macro invocation")


def _substitute(params: list[str], body: str, args: list[str]) -> str:
    values = dict(zip(params, args))
    body = re.sub(r"(?<!#)#(?!#)\s*([A-Za-z_]\w*)(?!\w)",
                  lambda m: '"' + values[m.group(1)].replace('"', '\\"') + '"' if m.group(1) in values
                  else m.group(0), body)
    # parameters are replaced outside string literals only, as the preprocessor does
    pieces = re.split(r'("(?:[^"\\]|\\.)*")', body)
    body = "".join(p if k % 2 else re.sub(r"\b[A-Za-z_]\w*\b", lambda m: values.get(m.group(0), m.group(0)), p)
                   for k, p in enumerate(pieces))
    return re.sub(r"\s*##\s*", "", body)


def _expand(text: str, macros: dict, depth: int, where: str) -> str:
    if depth > _MAX_DEPTH:
        raise MacroError(f"{where}: error: macros nested deeper than {_MAX_DEPTH} (a recursive macro?)")
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, macros)) + r")\s*\(")
    out, pos = [], 0
    for m in pattern.finditer(text):
        if m.start() < pos:
            continue
        params, body, _ = macros[m.group(1)]
        args, end = _arguments(text, m.end() - 1, where)
        if len(args) != len(params):
            raise MacroError(f"{where}: error: macro {m.group(1)} takes {len(params)} arguments, "
                             f"given {len(args)}")
        out += [text[pos:m.start()], _expand(_substitute(params, body, args), macros, depth + 1, where)]
        pos = end
    return "".join(out) + text[pos:]


def expand_kernel_macros(source: str, filename: str = "<source>") -> str:
    """``source`` with the invocations of its kernel-declaring macros expanded in place
    (see the module's rules); the same text when it has none."""
    macros = _definitions(source)
    if not macros:
        return source
    lines = source.split("\n")
    pattern = re.compile(r"^[ \t]*(" + "|".join(map(re.escape, macros)) + r")\s*\(")
    out, i = [], 0
    while i < len(lines):
        m = pattern.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        rest = "\n".join(lines[i:])
        args, end = _arguments(rest, m.end() - 1, f"{filename}:{i + 1}")
        spanned = rest.count("\n", 0, end)
        expanded = _expand(rest[:end], macros, 0, f"{filename}:{i + 1}").replace("\n", " ")
        tail = rest[end:].split("\n", 1)[0]
        out.append(expanded + tail)
        out += [""] * spanned
        i += spanned + 1
    return "\n".join(out)
