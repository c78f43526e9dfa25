"""The vendored copies in ``kernels/vendor/`` against their pins: state, ensure, restore.

:func:`ensure` runs by itself when the site builds, when the tests start and before
``gemmglossary excerpts``; it only adds missing files. A vendored file that differs from
its pin (edited, or left from an earlier pin) stops it, naming the file; only
:func:`restore` (``gemmglossary vendor``) replaces such a copy, after moving it to
``.cache/vendor-edits/<time>/`` of the project, a folder of its own per restore.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..file_lock import atomic_write
from ..paths import project_root, vendor_dir
from .archive import read_pinned
from .distfiles import distribution_file
from .manifest import Pins, PinnedFile, VendorError, load_pins, manifest_path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _differs(f: PinnedFile, found: str) -> str:
    return (f"differs from its pin in {manifest_path().name} (sha256 {found}, pinned {f.sha256}: "
            f"edited, or materialized under an earlier pin); {f.source.name}'s files are read, never "
            "edited here: `gemmglossary vendor` restores the pinned copy (and keeps yours)")


@dataclass(frozen=True)
class VendorState:
    """How the vendored copies stand against the pins."""

    missing: tuple[PinnedFile, ...]
    edited: tuple[tuple[PinnedFile, str], ...]  # (file, the sha256 found)

    def problems(self) -> list[str]:
        out = [f"{f.vendored}: missing" for f in self.missing]
        out += [f"{f.vendored}: {_differs(f, found)}" for f, found in self.edited]
        return out


def state(pins: Pins | None = None) -> VendorState:
    pins = pins or load_pins()
    missing, edited = [], []
    for f in pins.files:
        if not f.vendored.is_file():
            missing.append(f)
        elif (found := _sha256(f.vendored)) != f.sha256:
            edited.append((f, found))
    return VendorState(tuple(missing), tuple(edited))


def status(pins: Pins | None = None) -> list[str]:
    """Problems with the vendored copies (empty when all are present and match)."""
    return state(pins).problems()


def check_file(path: Path) -> str | None:
    """Why the vendored file ``path`` is not the pinned one (None when it is)."""
    pins = load_pins()
    path = Path(path).resolve()
    for f in pins.files:
        if f.vendored.resolve() == path:
            if not path.is_file():
                return "missing (`gemmglossary vendor` materializes it)"
            found = _sha256(path)
            return None if found == f.sha256 else _differs(f, found)
    return f"not pinned in {manifest_path()}: only pinned upstream files may be quoted"


def _materialize(files) -> None:
    """Write the pinned bytes of ``files``, each source's distribution read once."""
    by_source: dict = {}
    for f in files:
        by_source.setdefault(f.source, []).append(f)
    for source, group in by_source.items():
        archive = distribution_file(source)
        for f, data in read_pinned(source, archive, group).items():
            f.vendored.parent.mkdir(parents=True, exist_ok=True)
            # (the processes of a test run, and a site build beside them, may materialize the
            # same file at once: every copy is the pinned bytes)
            atomic_write(f.vendored, data)


def ensure(pins: Pins | None = None) -> Path:
    """Materialize missing pinned files into ``kernels/vendor/``; return its include root.

    Cheap when everything is already in place (one hash per file). A vendored file that
    differs from its pin is never overwritten here (builds and test start-up call this):
    it raises :class:`VendorError` naming the file, and ``gemmglossary vendor`` restores it.
    """
    pins = pins or load_pins()
    found = state(pins)
    if found.edited:
        raise VendorError("; ".join(f"{f.vendored}: {_differs(f, sha)}" for f, sha in found.edited))
    if found.missing:
        _materialize(found.missing)
    return vendor_dir()


def _edits_folder() -> Path:
    """A new folder for the copies one restore keeps: ``<date>-<time>``, or with ``-2``,
    ``-3``, ... when an earlier restore (this second, or another process) took that name."""
    base = project_root() / ".cache" / "vendor-edits"
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 10_000):
        folder = base / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir()  # atomic: two restores never share a folder
            return folder
        except FileExistsError:
            continue
    raise VendorError(f"{base}: no free folder name for {stamp}; clear out old edits")


def restore(pins: Pins | None = None) -> list[str]:
    """Make ``kernels/vendor/`` hold the pinned files, restoring edited ones; an edited
    copy is kept under ``.cache/vendor-edits/<time>/`` first. Returns what was done."""
    pins = pins or load_pins()
    found = state(pins)
    done = []
    if found.edited:
        keep = _edits_folder()
        for f, _ in found.edited:
            kept = keep / f.source.vendor_root / f.path
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f.vendored, kept)
            done.append(f"restored {f.vendored} from {f.source.name} {f.source.version}; "
                        f"your edited copy is {kept}")
    _materialize(found.missing + tuple(f for f, _ in found.edited))
    done += [f"materialized {f.vendored}" for f in found.missing]
    return done
