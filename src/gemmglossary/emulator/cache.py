"""Entries of the compile cache, verified before use.

A compiled kernel is ``<key>/kernel.so`` with ``<key>/manifest.json``; the runtime object
is ``runtime-<key>.o`` with ``runtime-<key>.json``. Each description records the size and
SHA-256 of its file and is written last, atomically, so an entry is complete exactly when
its description is readable and matches. A shared object is loaded into the calling
process, where a truncated or damaged one ends the interpreter (SIGBUS), so nothing is
loaded that has not been checked: a damaged entry is removed, rebuilt, and a
:class:`CacheWarning` says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import warnings
from pathlib import Path

from ..file_lock import atomic_write  # noqa: F401 - build.py writes through it as _cache.atomic_write
from .errors import CacheWarning

# files already verified by this process, by (path, inode, size, mtime): hashing once per
# process is enough, a rewrite changes the inode or mtime
_verified: set[tuple] = set()


def _identity(path: Path) -> tuple:
    st = path.stat()
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns)


def file_digest(path: Path) -> dict:
    """{"size": bytes, "sha256": hex} of a file."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return {"size": size, "sha256": h.hexdigest()}


def _damaged(what: Path, why: str, files: list[Path]) -> None:
    warnings.warn(CacheWarning(f"emulator cache: {what} is damaged ({why}); rebuilding it"), stacklevel=4)
    for f in files:
        f.unlink(missing_ok=True)


def _check(path: Path, recorded, desc: Path) -> str | None:
    """Why `path` does not match its recorded digest, or None if it does."""
    if not isinstance(recorded, dict) or not {"size", "sha256"} <= recorded.keys():
        return f"{desc.name} records no size and hash"
    if not path.exists():
        return f"{path.name} is missing"
    ident = _identity(path)
    if ident in _verified:
        return None
    if ident[2] != recorded["size"]:
        return f"{path.name} has {ident[2]} bytes, {desc.name} says {recorded['size']}"
    if file_digest(path)["sha256"] != recorded["sha256"]:
        return f"{path.name} does not have the SHA-256 that {desc.name} records"
    _verified.add(ident)
    return None


def _read_json(desc: Path):
    try:
        return json.loads(desc.read_text()), None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"{desc.name} is unreadable: {type(e).__name__}: {e}"


def read_kernel_entry(d: Path) -> tuple[Path, dict] | None:
    """(kernel.so, manifest) of cache entry `d` if it is complete and intact; None if it is
    absent or was damaged (then it is removed, with a CacheWarning)."""
    so, man = d / "kernel.so", d / "manifest.json"
    if not man.exists():
        return None  # never completed (or being written): build it
    manifest, why = _read_json(man)
    if why is None:
        why = _check(so, manifest.get("kernel.so") if isinstance(manifest, dict) else None, man)
    if why is None and not isinstance(manifest.get("kernels"), dict):
        why = f"{man.name} lists no kernels"
    if why is not None:
        _damaged(d, why, [man, so])
        return None
    return so, manifest


def write_kernel_entry(d: Path, so_tmp: Path, manifest: dict) -> tuple[Path, dict]:
    """Move the freshly linked `so_tmp` into entry `d`, then write the manifest that vouches for it.

    On macOS clang's driver leaves the debug info of a shared object it links from source
    in `<output>.dSYM` (dsymutil): it moves along, for the symbolizer (dwarf_lines.py)."""
    so = d / "kernel.so"
    manifest = dict(manifest, **{"kernel.so": file_digest(so_tmp)})
    dsym_tmp, dsym = so_tmp.with_name(so_tmp.name + ".dSYM"), d / "kernel.so.dSYM"
    if dsym_tmp.is_dir():
        shutil.rmtree(dsym, ignore_errors=True)
        os.replace(dsym_tmp, dsym)
    os.replace(so_tmp, so)
    atomic_write(d / "manifest.json", json.dumps(manifest, indent=1).encode())
    return so, manifest


def specialized(so: Path, fc_lines: list[str]) -> Path:
    """The copy of the kernel object `so` that reads the function constants' values
    `fc_lines` when it is loaded (``fc-<hash>.so`` beside it, with ``fc-<hash>.so.fc``):
    made if it is not there yet. A process loads an object once (the loader knows it by
    its file), so each set of values needs its own copy; the values file is written
    first, so a copy is never there without its values."""
    text = "".join(line + "\n" for line in fc_lines).encode()
    copy = so.with_name(f"fc-{hashlib.sha256(text).hexdigest()[:16]}.so")
    values = copy.with_name(copy.name + ".fc")
    if copy.is_file() and values.is_file() and values.read_bytes() == text \
            and copy.stat().st_size == so.stat().st_size:
        return copy
    atomic_write(values, text)
    tmp = copy.with_name(f".{copy.name}.{os.getpid()}.{threading.get_ident()}")  # (a build may load from threads)
    shutil.copyfile(so, tmp)
    dsym = so.with_name(so.name + ".dSYM")  # (macOS: the debug info the symbolizer reads)
    if dsym.is_dir():
        shutil.copytree(dsym, copy.with_name(copy.name + ".dSYM"), dirs_exist_ok=True)
    os.replace(tmp, copy)
    return copy


def read_file_entry(path: Path, desc: Path | None = None) -> Path | None:
    """`path` (e.g. the runtime object) if it exists and matches its description (``desc``,
    else ``path`` with the suffix ``.json``)."""
    desc = desc or path.with_suffix(".json")
    if not desc.exists():
        return None
    recorded, why = _read_json(desc)
    if why is None:
        why = _check(path, recorded, desc)
    if why is not None:
        _damaged(path, why, [desc, path])
        return None
    return path


def write_file_entry(path: Path, tmp: Path, desc: Path | None = None) -> Path:
    digest = file_digest(tmp)
    os.replace(tmp, path)
    atomic_write(desc or path.with_suffix(".json"), json.dumps(digest).encode())
    return path
