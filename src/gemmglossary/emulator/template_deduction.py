"""Template arguments deduced from parameter types, as C++ deduces them, for an explicit
kernel instantiation that names none (`template [[host_name("x")]] [[kernel]] void
f(const device float* in, ...);`, MLX's conv.metal): rewrite.Rewriter._deduce_template_args."""

from __future__ import annotations

import re


def param_type(param: str) -> str:
    """A parameter declaration without its attributes and name: `const device T* in [[buffer(0)]]`
    gives `const device T*`."""
    p = re.sub(r"\[\s*\[.*?\]\s*\]", " ", param, flags=re.S).strip()
    p = re.sub(r"=.*$", "", p).strip()  # a default argument
    m = re.match(r"(.*?)\s*\b[A-Za-z_]\w*\s*((\[[^\]]*\]\s*)*)$", p, re.S)
    return m.group(1) if m and m.group(1).strip() else p


def type_words(typ: str) -> list[str]:
    return re.findall(r"[A-Za-z_]\w*|\d\w*|::|>>|\S", typ)


def template_param_name(param: str) -> str:
    words = re.findall(r"[A-Za-z_]\w*", param.split("=")[0])
    return words[-1] if words else ""


def unify(pattern: list[str], given: list[str], names: set[str], binding: dict[str, list[str]]) -> bool:
    """Match a template's parameter type against a concrete one, word by word, binding the
    template parameter names (each to the words it stands for)."""
    i = j = 0
    while i < len(pattern):
        w = pattern[i]
        if w in names:
            stop = pattern[i + 1] if i + 1 < len(pattern) else None
            depth, k = 0, j
            while k < len(given):
                g = given[k]
                if depth == 0 and stop is not None and g == stop and k > j:
                    break
                depth += g in ("<", "(") or 0
                depth -= (g in (">", ")")) + 2 * (g == ">>")
                k += 1
            if k == j or (w in binding and binding[w] != given[j:k]):
                return False
            binding[w] = given[j:k]
            i, j = i + 1, k
            continue
        if j >= len(given) or given[j] != w:
            return False
        i, j = i + 1, j + 1
    return j == len(given)
