"""Read pinned members out of a distribution archive: a wheel (zip) or a source tarball.

Only the members asked for are read, each checked against its pinned sha256; a source
that names the commit its archive vendors (``rev_member``) has that member checked too.
Nothing is written here: the caller decides where the bytes go.
"""

from __future__ import annotations

import hashlib
import tarfile
import zipfile
from pathlib import Path

from .manifest import PinnedFile, Source, VendorError


# What _read_all last found in each archive: the identity of its file (a download put in
# its place is another file), the names asked for, their bytes. A compressed tarball can only
# be read from its start, and the test processes materialize fresh projects from the same
# archives again and again (llama.cpp's 77 MB source tarball is most of a second each
# time). The bytes are still checked against the pins by every read_pinned.
_memo: dict[str, tuple[tuple, frozenset, dict[str, bytes]]] = {}


def _read_all(archive: Path, names: set[str]) -> dict[str, bytes]:
    """The bytes of each member of ``names`` that the archive holds (one pass over it)."""
    try:
        st = archive.stat()
        path, ident = str(archive.resolve()), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        return _read_members(archive, names)
    last = _memo.get(path)
    if last is not None and last[0] == ident and last[1] == frozenset(names):
        return dict(last[2])
    found = _read_members(archive, names)
    _memo[path] = (ident, frozenset(names), dict(found))
    return found


def _read_members(archive: Path, names: set[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for name in names:
                    try:
                        found[name] = z.read(name)
                    except KeyError:
                        pass
            return found
        with tarfile.open(archive, "r:*") as t:
            for member in t:  # a compressed tarball is read front to back once
                if member.name in names and member.isfile():
                    found[member.name] = t.extractfile(member).read()
                    if len(found) == len(names):
                        break
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise VendorError(f"{archive}: cannot be read as a distribution archive: {exc}") from None
    return found


def read_pinned(source: Source, archive: Path, files: list[PinnedFile]) -> dict[PinnedFile, bytes]:
    """The checked bytes of ``files`` (all of ``source``) from its distribution ``archive``."""
    wanted = {f.member for f in files}
    if source.rev_member:
        wanted.add(source.rev_member)
    data = _read_all(archive, wanted)
    if source.rev_member:
        head = data.get(source.rev_member)
        if head is None:
            raise VendorError(f"{archive.name}: no {source.rev_member}, which names the {source.name} "
                              "commit the archive vendors; the pinned file is not the one described")
        commit = head.decode("ascii", "replace").strip()
        if commit != source.rev:
            raise VendorError(f"{archive.name} vendors {source.name} commit {commit} "
                              f"({source.rev_member}), but kernels/vendor.toml names {source.rev}")
    out = {}
    for f in files:
        blob = data.get(f.member)
        if blob is None:
            raise VendorError(f"{f.member}: not in {archive.name}, but kernels/vendor.toml pins "
                              f"{f.path} of {source.name} from it; the pin is wrong")
        found = hashlib.sha256(blob).hexdigest()
        if found != f.sha256:
            raise VendorError(f"{f.member} in {archive.name}: sha256 {found}, but kernels/vendor.toml "
                              f"pins {f.sha256} for {f.path}; the pin is wrong")
        out[f] = blob
    return out
