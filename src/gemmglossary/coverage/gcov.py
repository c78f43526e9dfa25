"""Read the counters of a coverage run with gcov, as executed counts per source line.

Each instrumented kernel build leaves its notes (``*.gcno``) in its compile-cache folder;
its workers leave the counters (``*.gcda``) under the run's counters folder, at the same
path below that folder as the notes (libgcov prefixes the compile-time path with
``$GCOV_PREFIX``). gcov reads the two together and, through the ``#line`` markers that the
preprocessor and the emulator's rewriter keep in ``kernel.cpp``, names the ``.metal`` and
``.h`` files and lines the code came from.

A line is *executable* when the compiler put code on it in at least one build; its count
is the sum over builds (and over template instantiations within a build). Lines a build
never compiled (a ``#if`` arm not taken, a template never instantiated, a discarded
``if constexpr`` branch) are not executable as far as gcov knows: see docs/emulator.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from .generated import Attribution

BATCH = 64  # gcda files per gcov process


class GcovError(RuntimeError):
    pass


def gcov_tool() -> str:
    """The gcov that matches the emulator's compiler (g++ → gcov; $GCOV overrides)."""
    name = os.environ.get("GCOV") or "gcov"
    path = shutil.which(name)
    if not path:
        raise GcovError(f"{name} not found: line coverage needs gcc's gcov (set $GCOV to its path)")
    return path


def compiled_at(gcda: Path, counters: Path) -> Path:
    """Where the build of a counters file put it (and its notes): its path below `counters`."""
    return Path("/") / gcda.relative_to(counters)


def pairs(counters: Path) -> list[Path]:
    """The counter files of a run, each with its notes file copied beside it."""
    found = []
    for gcda in sorted(counters.rglob("*.gcda")):
        gcno = compiled_at(gcda, counters).with_suffix(".gcno")
        if not gcno.is_file():
            raise GcovError(f"{gcda}: the notes file {gcno} of this build is missing (was the compile cache "
                            "cleared during the coverage run?)")
        shutil.copyfile(gcno, gcda.with_suffix(".gcno"))
        found.append(gcda)
    return found


def line_counts(counters: Path, root: Path, generated: Attribution | None = None) -> dict[str, dict[int, int]]:
    """{file relative to `root`: {line: times executed}} over every build of the run, for
    the files below `root` (the shim and the C++ library are left out), and for the lines
    of generated kernels that `generated` finds in a project file (generated.py)."""
    tool = gcov_tool()
    root, counters = root.resolve(), counters.resolve()  # gcov runs in `counters` and names the files as given
    out: dict[str, dict[int, int]] = {}
    files = pairs(counters)
    for i in range(0, len(files), BATCH):
        batch = files[i:i + BATCH]
        r = subprocess.run([tool, "--json-format", "--stdout", *map(str, batch)], capture_output=True, text=True,
                           cwd=counters)
        if r.returncode:
            raise GcovError(f"gcov failed on {batch[0]}...: {r.stderr[-2000:]}")
        for doc in r.stdout.splitlines():
            if doc.strip():
                _add(json.loads(doc), root, out, counters, generated)
    return out


def _add(doc: dict, root: Path, out: dict, counters: Path, generated: Attribution | None) -> None:
    build = str(compiled_at(Path(doc["data_file"]), counters).parent)  # the build's cache folder
    for f in doc.get("files", []):
        try:
            rel = Path(f["file"]).resolve().relative_to(root)
        except ValueError:
            # not a project file: a generated kernel, whose lines may be a project file's
            for body, offset, length in (generated.sources(build, f["file"]) if generated else ()):
                lines = out.setdefault(body, {})
                for ln in f["lines"]:
                    n = ln["line_number"] - offset
                    if 1 <= n <= length:
                        lines[n] = lines.get(n, 0) + int(ln["count"])
            continue
        if rel.parts and rel.parts[0] in ("src", ".venv"):  # the emulator's own library
            continue
        lines = out.setdefault(rel.as_posix(), {})
        for ln in f["lines"]:
            n = ln["line_number"]
            lines[n] = lines.get(n, 0) + int(ln["count"])
