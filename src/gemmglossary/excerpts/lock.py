"""``excerpts.lock.json``: every excerpt's page, file, line range and text hash.

Format (read by other tools too; keep it stable)::

    {"version": 1,
     "excerpts": [{"page": "glossary/barriers.md", "file": "kernels/matmul_tiled.metal",
                   "start": 31, "end": 52, "sha256": "...", "lines": "1f0c9a2e 07d3b1aa ..."}]}

``page`` is relative to docs/, ``file`` to the repository root; ``sha256`` is taken over
lines start..end (1-based, inclusive) joined with ``\\n`` plus a final ``\\n``. ``lines``
(optional: locks written before it lack it, and the next update adds it) holds, space
separated, the first 8 hex digits of the sha256 of each of those lines: what lets
``excerpts update`` find a block that both moved and changed by the lines that
survived. Hashes, not text: no quoted line, MLX's least of all, is copied into the lock.
Entries are sorted by (page, file, start, end) and written with indent=2 and a trailing
newline, atomically.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import file_lock
from ..file_lock import atomic_write
from ..paths import project_root

VERSION = 1
LOCK_NAME = "excerpts.lock.json"


class LockError(RuntimeError):
    """The lock file cannot be read."""


@dataclass(frozen=True, order=True)
class Entry:
    page: str
    file: str
    start: int
    end: int
    sha256: str
    lines: tuple[str, ...] = ()  # line_hash() of each locked line

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.page, self.file, self.start, self.end)


def lock_path(root: Path | None = None) -> Path:
    return (root or project_root()) / LOCK_NAME


def file_lines(text: str) -> list[str]:
    """A file's lines: split on ``\\n``, newline removed, no phantom line after a final newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def hash_lines(lines: list[str]) -> str:
    return hashlib.sha256(("\n".join(lines) + "\n").encode("utf-8")).hexdigest()


def line_hash(line: str) -> str:
    """What the lock keeps of each quoted line: enough to find it again, not its text."""
    return hashlib.sha256(line.encode("utf-8")).hexdigest()[:8]


#: How to get a lock back, for messages about a broken or missing one.
RESTORE = (f"restore it from git (`git checkout -- {LOCK_NAME}`), or, after reviewing every "
           "page, relock the excerpts as they are with `gemmglossary excerpts update --accept-changes`")


def read_lock(path: Path) -> list[Entry]:
    """The lock's entries; a missing lock is an empty one (see :func:`lock_path` and
    ``Path.exists`` for telling the two apart)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except IsADirectoryError:
        raise LockError(f"{path}: is a directory, not the lock file; {RESTORE}") from None
    except UnicodeDecodeError as exc:
        raise LockError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); {RESTORE}") from None
    except OSError as exc:
        raise LockError(f"{path}: cannot be read ({exc.strerror}); {RESTORE}") from None
    except json.JSONDecodeError as exc:
        raise LockError(f"{path}: not valid JSON ({exc}); {RESTORE}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("excerpts"), list):
        raise LockError(f"{path}: expected {{\"version\": {VERSION}, \"excerpts\": [...]}}; {RESTORE}")
    try:
        return [
            Entry(str(e["page"]), str(e["file"]), int(e["start"]), int(e["end"]), str(e["sha256"]),
                  tuple(str(e.get("lines", "")).split()))
            for e in data["excerpts"]
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise LockError(f"{path}: malformed entry ({exc!r}); each needs page, file, start, "
                        f"end, sha256; {RESTORE}") from None


def dumps(entries: list[Entry]) -> str:
    unique = sorted(set(entries))
    rows = []
    for e in unique:
        row = asdict(e)
        row["lines"] = " ".join(e.lines)
        if not e.lines:
            del row["lines"]
        rows.append(row)
    data = {"version": VERSION, "excerpts": rows}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_text_atomic(path: Path, text: str) -> None:
    """:func:`gemmglossary.file_lock.atomic_write` of `text` as UTF-8, its newlines as given."""
    atomic_write(path, text.encode("utf-8"))


def write_lock(path: Path, entries: list[Entry]) -> bool:
    """Write the lock if its content changes; return whether it did."""
    text = dumps(entries)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except FileNotFoundError:
        pass
    write_text_atomic(path, text)
    return True


class CheckoutNotWritable(LockError):
    """``excerpts update`` cannot write in this checkout (read-only, or not the user's)."""


@contextlib.contextmanager
def exclusive(root: Path):
    """Serialize concurrent ``excerpts update`` runs on one checkout."""
    lock = root / ".cache" / "excerpts-update.lock"
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(file_lock.exclusive(lock))
        except OSError as exc:
            raise CheckoutNotWritable(
                f"{lock.parent}: cannot write there ({exc.strerror}); `excerpts update` writes the pages and "
                f"{LOCK_NAME}: run it in a checkout you can write (`excerpts check` only reads)") from None
        yield
