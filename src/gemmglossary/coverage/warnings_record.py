"""Which kernels the tests saw warn: the PortabilityWarnings of a coverage run, recorded.

The coverage run executes every quoted kernel and MLX's kernel families in the tests that
check them (:data:`.collect.MODULES`). Each PortabilityWarning those tests meet (something
a kernel relies on that the Metal specification does not promise) is written, with the
kernel's host name, its kind and its site, to the run's data folder; the report keeps the
distinct ones (``report["warnings"]``), and the emulator page lists them from there when the
site is built, so the list is the tests' own, never typed by hand.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from . import mode

FOLDER = "portability-warnings"
#: What the emulator's Metal library reports (kind "library"), told apart by its message.
LIBRARY_KINDS = {"inactive-lane-read": "which is not active", "tensor-layout": "cooperative tensor"}
_KERNEL = re.compile(r"^kernel '([^']+)': ")


def _site(value) -> tuple[str, int] | None:
    if isinstance(value, tuple) and len(value) == 2 and value[1] is not None:
        return str(value[0]), int(value[1])
    return None


def record(warning, test: str) -> None:
    """Keep one warning a test of a coverage run met (nothing outside a coverage run)."""
    from ..emulator.errors import PortabilityWarning

    data = mode.data_dir()
    if data is None or not isinstance(warning, PortabilityWarning):
        return
    m = _KERNEL.match(str(warning))
    site = _site(warning.site)
    text = str(warning)
    kind = warning.kind or ("oob-read" if "read outside a buffer" in text else "other")
    if kind == "library":  # the emulator's Metal library: say which of its findings
        kind = next((k for k, said in LIBRARY_KINDS.items() if said in text), kind)
    entry = {"kernel": m.group(1) if m else "", "kind": kind, "test": test,
             "file": site[0] if site else "", "line": site[1] if site else 0}
    folder = data / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    # one file per process, appended line by line: the processes of a run never share one
    with open(folder / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def collected(data: Path, root: Path) -> list[dict]:
    """The distinct (kernel, kind, file, line) a run recorded, files relative to ``root``,
    each with the first test (in name order) that met it."""
    seen: dict[tuple, dict] = {}
    for path in sorted((data / FOLDER).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line a killed process left half written
            file = e.get("file", "")
            try:
                file = Path(file).resolve().relative_to(root.resolve()).as_posix() if file else ""
            except ValueError:
                pass
            key = (e.get("kernel", ""), e.get("kind", ""), file, int(e.get("line", 0)))
            entry = {"kernel": key[0], "kind": key[1], "file": file, "line": key[3], "test": e.get("test", "")}
            if key not in seen or entry["test"] < seen[key]["test"]:
                seen[key] = entry
    return [seen[k] for k in sorted(seen)]
