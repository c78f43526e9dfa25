"""The preprocessor's output, remembered in a process while every file it read is unchanged.

Every kernel load preprocesses its source first (the cache key of a compiled kernel is the
preprocessed text), and a test process loads the same few files again and again: MLX's steel
GEMM file about a hundred times a suite, at about 8 ms of the compiler's time each. A second
run with the same command and source gives the same text as long as every file the first one
read has the same contents and no file has appeared or gone in a folder it searched, which
could now be found first. That is what an entry checks before it is used: the contents of
each file the output's line markers name, and the names in each folder of the include path
and each folder one of those files is in.

A run whose input names the clock (``__DATE__``, ``__TIME__``, ``__TIMESTAMP__``: in a file
it read, in the source text or in the command's defines) is never remembered: its output
changes by itself.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict

# a line marker: `# 12 "path" flags`, the path as a C string literal
_MARKER = re.compile(r'^# \d+ "((?:[^"\\]|\\.)*)"', re.MULTILINE)
_CLOCK = (b"__DATE__", b"__TIME__", b"__TIMESTAMP__")

#: entries kept, the most recently used (a long process loads sources without end)
MEMO_SIZE = 64
_entries: "OrderedDict[tuple, tuple]" = OrderedDict()
_lock = threading.Lock()  # (a build may compile kernels from several threads)


def _unescape(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal)


def _digest(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if any(word in data for word in _CLOCK):
        return None
    return hashlib.blake2b(data, digest_size=16).digest()


def _listing(folder: str) -> tuple[str, ...] | None:
    try:
        return tuple(sorted(os.listdir(folder)))
    except OSError:
        return None


def _state(files: tuple[str, ...], folders: tuple[str, ...]) -> tuple | None:
    """The contents of `files` and the names in `folders` as they are now; None if that
    cannot be told (a file gone or unreadable, or one that names the clock)."""
    digests = tuple(_digest(p) for p in files)
    if None in digests:
        return None
    return digests, tuple(_listing(f) for f in folders)


def lookup(key: tuple) -> str | None:
    """The output remembered under `key` (the command, the input, the working folder), if
    nothing it depends on changed since."""
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
    if entry is None:
        return None
    output, files, folders, state = entry
    if _state(files, folders) != state:
        with _lock:
            _entries.pop(key, None)
        return None
    return output


def remember(key: tuple, search_dirs: list[str], output: str, given: str) -> None:
    """Remember `output` under `key`, with what it depends on: the files its line markers
    name and the folders of `search_dirs` (the include path) and of those files. `given`:
    the text the run was handed besides the files (the command and the source text)."""
    if any(word.decode() in given for word in _CLOCK):
        return
    files = tuple(sorted({_unescape(m) for m in _MARKER.findall(output) if not m.startswith("<")}))
    folders = tuple(sorted({os.path.dirname(os.path.abspath(p)) for p in files}
                           | {os.path.abspath(d) for d in search_dirs}))
    state = _state(files, folders)
    if state is None:
        return
    with _lock:
        _entries[key] = (output, files, folders, state)
        _entries.move_to_end(key)
        while len(_entries) > MEMO_SIZE:
            _entries.popitem(last=False)


def forget() -> None:
    with _lock:
        _entries.clear()
