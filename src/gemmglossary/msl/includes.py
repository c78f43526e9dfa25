"""What a kernel file includes, and its quoted includes inlined for Metal's runtime compiler.

- :func:`included_files` asks the real preprocessor (the host compiler's ``-MM``, with the
  emulator's stub ``<metal_*>`` headers and predefined macros), so ``#if`` around an
  ``#include`` is honoured: the answer is what the emulator compiles.
- :func:`inline_includes` replaces each quoted ``#include "x"`` by the file's text, for
  ``MTLDevice.newLibraryWithSource:options:error:``, which compiles one string and has no
  include path. The Metal compiler still evaluates every ``#if`` itself, so the
  inlining must not decide anything the preprocessor decides:

  * ``#include "x"`` is searched in the including file's directory, then in
    ``include_dirs`` in order; the line is replaced by the file's text between ``#line``
    markers, so compiler messages still name the right file and line;
  * ``#include <x>`` (``<metal_stdlib>``...) is left to the compiler, and so is an
    include found nowhere (the compiler reports it);
  * a file with ``#pragma once`` is inlined at every include, its body wrapped in an
    ``#ifndef`` guard named after its path (the pragma line is blanked): the compiler
    then keeps the first copy it reaches, whichever ``#if`` branches it takes;
  * an include of a ``#pragma once`` file that is being inlined (a cycle) is dropped,
    as the preprocessor would skip it; any other cycle is an :class:`IncludeError`.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path
from typing import Iterable

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"\s*(//.*)?$')
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\b")
_DEPENDENCY = re.compile(r"(?:\\.|[^\s\\])+")


class IncludeError(ValueError):
    pass


def _find(name: str, here: Path | None, include_dirs: list[Path]) -> Path | None:
    for base in ([here] if here is not None else []) + include_dirs:
        candidate = base / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def _guard(path: Path) -> str:
    return "GEMMGLOSSARY_ONCE_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]


def inline_includes(
    source: str,
    include_dirs: Iterable[str | Path] = (),
    base_dir: str | Path | None = None,
    filename: str = "<source>",
) -> str:
    """``source`` with its quoted includes inlined (see the module's rules)."""
    dirs = [Path(d) for d in include_dirs]
    stack: list[Path] = []

    def expand(text: str, here: Path | None, label: str, depth: int) -> list[str]:
        if depth > 64:
            raise IncludeError(f"{label}: #include nested more than 64 deep")
        out: list[str] = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            if _PRAGMA_ONCE.match(line):
                out.append("")
                continue
            m = _INCLUDE.match(line)
            found = _find(m.group(1), here, dirs) if m else None
            if found is None:
                out.append(line)
                continue
            body = found.read_text(encoding="utf-8")
            once = any(_PRAGMA_ONCE.match(ln) for ln in body.split("\n"))
            if found in stack:
                if once:
                    out.append("")
                    continue
                raise IncludeError(f"{label}:{lineno}: recursive #include of {found}")
            stack.append(found)
            if once:
                out += [f"#ifndef {_guard(found)}", f"#define {_guard(found)}"]
            out.append(f'#line 1 "{found}"')
            out.extend(expand(body, found.parent, str(found), depth + 1))
            if once:
                out.append("#endif")
            stack.pop()
            out.append(f'#line {lineno + 1} "{label}"')
        return out

    here = Path(base_dir) if base_dir is not None else None
    return "\n".join(expand(source, here, filename, 0))


def included_files(path: str | Path, include_dirs: Iterable[str | Path] = (),
                   defines: dict | None = None) -> set[Path]:
    """Every file the preprocessor reads for ``path`` (resolved), the emulator's stub
    headers and ``path`` itself left out."""
    from ..emulator.build import STAGE1_DIR, preprocessor_command

    path = Path(path)
    # -MM: the system headers the compiler reads by itself (stdc-predef.h) are left out
    command = preprocessor_command([str(d) for d in include_dirs], defines) + ["-MM", str(path)]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode:
        raise IncludeError(f"{path}: the preprocessor cannot read it:\n{run.stderr.strip()}")
    rule = run.stdout.replace("\\\n", " ")
    _, _, deps = rule.partition(": ")
    stubs = STAGE1_DIR.resolve()
    found = set()
    for dep in _DEPENDENCY.findall(deps):
        file = Path(re.sub(r"\\(.)", r"\1", dep)).resolve()
        if file != path.resolve() and not file.is_relative_to(stubs):
            found.add(file)
    return found
