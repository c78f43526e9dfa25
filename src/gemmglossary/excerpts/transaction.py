"""Write the pages and the lock of one ``excerpts update`` together, or not at all.

A re-anchored page and the lock entry that locks its new range only make sense
together: a page written without its lock would look like a new, unlocked excerpt, and
the next update would lock whatever text it shows. So the new contents are first
written to temporary files beside their targets, then a journal listing every
(temporary, target) pair is written atomically, then each temporary file is renamed over
its target and the journal is removed. An update killed after the journal was written is
finished (rolled forward) by the next run, and ``excerpts check`` reports it until then;
one killed before leaves everything as it was. SIGINT and SIGTERM are held back while
the renames run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import threading
from pathlib import Path

JOURNAL = Path(".cache") / "excerpts-update.journal"


def journal_path(root: Path) -> Path:
    return root / JOURNAL


def pending(root: Path) -> bool:
    """Whether an interrupted update left a journal to finish."""
    return journal_path(root).exists()


def _temp_beside(target: Path, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, target.stat().st_mode & 0o777 if target.exists() else 0o644)
    return Path(tmp)


@contextlib.contextmanager
def _signals_held():
    """Defer SIGINT/SIGTERM until the block is done, then deliver them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in received[:1]:
            signal.raise_signal(signum)


def _apply(pairs: list[tuple[str, str]]) -> None:
    for tmp, target in pairs:
        if os.path.exists(tmp):
            os.replace(tmp, target)


def commit(root: Path, writes: dict[Path, str]) -> None:
    """Replace each target of ``writes`` by its new text, all of them or none."""
    if not writes:
        return
    journal = journal_path(root)
    journal.parent.mkdir(parents=True, exist_ok=True)
    pairs: list[tuple[str, str]] = []
    try:
        for target, text in writes.items():
            pairs.append((str(_temp_beside(target, text)), str(target)))
        staged = _temp_beside(journal, json.dumps({"writes": pairs}))
    except BaseException:
        for tmp, _ in pairs:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    with _signals_held():
        os.replace(staged, journal)  # from here on, the update happens
        _apply(pairs)
        journal.unlink()


def recover(root: Path) -> list[Path]:
    """Finish an update interrupted after its journal was written; the targets."""
    journal = journal_path(root)
    try:
        pairs = json.loads(journal.read_text(encoding="utf-8"))["writes"]
    except FileNotFoundError:
        return []
    except (ValueError, KeyError, TypeError):
        journal.unlink()  # written atomically, so a damaged one was never a commit
        return []
    with _signals_held():
        _apply([(str(t), str(p)) for t, p in pairs])
        journal.unlink()
    return [Path(p) for _, p in pairs]
