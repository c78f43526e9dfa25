"""Counts of kernel source that exists only in memory, given back to the project file it
was made from.

``metal_kernel`` (after ``mx.fast.metal_kernel``) builds a kernel around a body, such as
an exercise's ``*_body.metal``, and the emulator compiles that generated text under the
name ``/metal_kernel/<kernel>.metal``, whose lines count the generated source (as its
diagnostics do). In a coverage run the runtime records each generated text with the build
it went into (:func:`record`); the report then looks for the project files whose whole
text is a run of lines of it and moves the counts of those lines to the file
(:class:`Attribution`). Two builds can share a name with different texts (a skeleton and
its solution), hence the build in the record.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..mlx.custom_kernel import body_line_offset
from . import mode

RECORDS = "generated"  # below the coverage run's data folder
#: Where the files a generated kernel may be made from are looked for (below the root).
BODY_FOLDERS = ("exercises", "kernels", "snippets")


def record(build_dir: Path, file: str, text: str) -> None:
    """In a coverage run, remember that `build_dir` compiled `text` under the name `file`."""
    data = mode.data_dir()
    if data is None:
        return
    folder = data / RECORDS
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(f"{build_dir}\0{file}".encode()).hexdigest()[:24]
    target = folder / f"{key}.json"
    if not target.exists():
        tmp = folder / f".{key}.{os.getpid()}"
        tmp.write_text(json.dumps({"build": str(build_dir), "file": file, "text": text}))
        os.replace(tmp, target)


def recorded(data: Path) -> dict[tuple[str, str], str]:
    """{(build folder, generated file name): text} of a coverage run."""
    out = {}
    for f in sorted((data / RECORDS).glob("*.json")):
        r = json.loads(f.read_text())
        out[(r["build"], r["file"])] = r["text"]
    return out


class Attribution:
    """Where the lines of each recorded generated text come from in the project."""

    def __init__(self, data: Path, root: Path):
        self.texts = recorded(data)
        self.root = root
        self._bodies: dict[str, str] | None = None
        self._found: dict[tuple[str, str], list[tuple[str, int, int]]] = {}

    def bodies(self) -> dict[str, str]:
        if self._bodies is None:
            self._bodies = {}
            for top in BODY_FOLDERS:
                for p in sorted((self.root / top).rglob("*.metal")):
                    rel = p.relative_to(self.root)
                    if "vendor" not in rel.parts:
                        self._bodies[rel.as_posix()] = p.read_text(encoding="utf-8")
        return self._bodies

    def sources(self, build: str, file: str) -> list[tuple[str, int, int]]:
        """(project file, line offset, its number of lines) for each project file whose whole
        text is in the text `build` compiled as `file`; [] if none or nothing was recorded."""
        key = (build, file)
        if key not in self._found:
            text = self.texts.get(key)
            found = []
            if text is not None:
                for rel, body in self.bodies().items():
                    offset = body_line_offset(text, body)
                    if offset is not None:
                        found.append((rel, offset, len(body.rstrip("\n").splitlines())))
            self._found[key] = found
        return self._found[key]
