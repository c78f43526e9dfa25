"""Inline ``#include "..."`` for Metal's runtime compiler.

``MTLDevice.newLibraryWithSource:options:error:`` compiles one string and has no
include-path option, so the Metal backend resolves quoted includes itself before
handing the text over (the alternative, changing the working directory, depends on
undocumented compiler behaviour and is process-global).  Rules:

* ``#include "x"`` is searched in the including file's directory, then in
  ``include_dirs`` in order; the line is replaced by the file's text between
  ``#line`` markers so compiler messages still name the right file and line.
* ``#include <x>`` (``<metal_stdlib>``...) is left to the compiler.
* A file containing ``#pragma once`` is inlined at most once; the pragma is blanked.
  Include guards (``#ifndef``) keep working because the preprocessor still sees them.
* An include that is found nowhere is left as it is, so the compiler reports it.

Limitation: inlining is textual and ignores ``#if`` around an ``#include``; a file
with ``#pragma once`` that is included only in a branch the preprocessor skips is
still counted as included.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"\s*(//.*)?$')
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\b")


class IncludeError(ValueError):
    pass


def _find(name: str, here: Path | None, include_dirs: list[Path]) -> Path | None:
    for base in ([here] if here is not None else []) + include_dirs:
        candidate = base / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def inline_includes(
    source: str,
    include_dirs: Iterable[str | Path] = (),
    base_dir: str | Path | None = None,
    filename: str = "<source>",
) -> str:
    dirs = [Path(d) for d in include_dirs]
    seen_once: set[Path] = set()
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
            if not m:
                out.append(line)
                continue
            found = _find(m.group(1), here, dirs)
            if found is None:
                out.append(line)
                continue
            if found in seen_once:
                out.append("")
                continue
            if found in stack:
                raise IncludeError(f"{label}:{lineno}: recursive #include of {found}")
            body = found.read_text()
            if any(_PRAGMA_ONCE.match(ln) for ln in body.split("\n")):
                seen_once.add(found)
            stack.append(found)
            out.append(f'#line 1 "{found}"')
            out.extend(expand(body, found.parent, str(found), depth + 1))
            stack.pop()
            out.append(f'#line {lineno + 1} "{label}"')
        return out

    here = Path(base_dir) if base_dir is not None else None
    return "\n".join(expand(source, here, filename, 0))


def included_files(
    source: str, include_dirs: Iterable[str | Path] = (), base_dir: str | Path | None = None
) -> set[Path]:
    """Every file ``inline_includes`` would pull in, transitively (resolved paths)."""
    dirs = [Path(d) for d in include_dirs]
    found: set[Path] = set()
    pending = [(source, Path(base_dir) if base_dir is not None else None)]
    while pending:
        text, here = pending.pop()
        for line in text.split("\n"):
            m = _INCLUDE.match(line)
            if not m:
                continue
            path = _find(m.group(1), here, dirs)
            if path is not None and path not in found:
                found.add(path)
                pending.append((path.read_text(), path.parent))
    return found
