"""``kernels/vendor.toml``: which upstream distribution files the vendored sources come from.

Each top-level table is one source (``[mlx]``, ``[llama_cpp]``): the distribution file on
the package index (``archive``: its exact name; ``archive_sha256``), where the pinned files sit inside that
archive, where they go under ``kernels/vendor/``, the upstream repository and revision the
site links, and one ``[[<source>.file]]`` per pinned file with its sha256. ``{version}`` in
``archive``, ``rev``, ``archive_root`` and ``rev_member`` stands for the source's
``version``, so a version is written once.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..paths import pins_file, vendor_dir

VENDOR_PREFIX = "kernels/vendor/"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class VendorError(RuntimeError):
    """The pinned files cannot be had, or a vendored copy is not the pinned one."""


def manifest_path() -> Path:
    return pins_file()  # kernels/vendor.toml, or the installed wheel's copy of it


@dataclass(frozen=True)
class PinnedFile:
    source: "Source"
    path: str  # relative to the source's vendor_root (and archive_root)
    sha256: str

    @property
    def vendored(self) -> Path:
        """Where the pinned copy lives in this checkout."""
        return vendor_dir() / self.source.vendor_root / self.path

    @property
    def repo_path(self) -> str:
        """``kernels/vendor/...``: how pages name the file."""
        return f"{VENDOR_PREFIX}{self.source.vendor_root}/{self.path}"

    @property
    def member(self) -> str:
        """The file's name inside the distribution archive."""
        return f"{self.source.archive_root}/{self.path}"


@dataclass(frozen=True, eq=False)
class Source:
    """One pinned upstream distribution and the files taken from it."""

    key: str            # the table's name in vendor.toml
    name: str           # how pages name the project ("MLX", "llama.cpp")
    distribution: str   # on the package index
    version: str
    archive: str        # the distribution file's exact name
    archive_sha256: str
    archive_root: str   # folder inside the archive that holds the pinned paths
    vendor_root: str    # folder under kernels/vendor/ that receives them
    repository: str     # https://github.com/owner/name
    rev: str            # the tag or commit the links name
    repository_root: str  # folder of the repository that corresponds to vendor_root
    rev_member: str | None  # archive member holding the commit the archive vendors
    files: tuple[PinnedFile, ...] = ()

    @property
    def label(self) -> str:
        """How a source link names the revision: ``MLX v0.32.1``, ``llama.cpp 0c1e570``."""
        return f"{self.name} {self.rev[:7] if _COMMIT.match(self.rev) else self.rev}"

    @property
    def prefix(self) -> str:
        """Repository paths of this source's vendored files start with this."""
        return f"{VENDOR_PREFIX}{self.vendor_root}/"

    def permalink(self, path: str, start: int | None = None, end: int | None = None) -> str:
        """GitHub permalink of a pinned file (``path`` relative to vendor_root) at ``rev``."""
        upstream = "/".join(p for p in (self.repository_root, path) if p)
        url = f"{self.repository}/blob/{self.rev}/{upstream}"
        if start is not None:
            url += f"#L{start}" + (f"-L{end}" if end is not None and end != start else "")
        return url

    def tree_url(self) -> str:
        return f"{self.repository}/tree/{self.rev}"


@dataclass(frozen=True)
class Pins:
    path: Path
    sources: tuple[Source, ...]

    @property
    def files(self) -> tuple[PinnedFile, ...]:
        return tuple(f for s in self.sources for f in s.files)

    def source(self, key: str) -> Source:
        for s in self.sources:
            if s.key == key:
                return s
        raise VendorError(f"{self.path}: no [{key}] source (have {', '.join(s.key for s in self.sources)})")

    def source_of(self, repo_path: str) -> Source | None:
        """The source whose vendored files ``repo_path`` (``kernels/vendor/...``) is among."""
        return next((s for s in self.sources if repo_path.startswith(s.prefix)), None)

    def pinned(self, repo_path: str) -> PinnedFile | None:
        return next((f for f in self.files if f.repo_path == repo_path), None)

    # What pages and modules read most: the MLX source.
    @property
    def mlx(self) -> Source:
        return self.source("mlx")


_SOURCE_KEYS = ("name", "distribution", "version", "archive", "archive_sha256", "archive_root", "vendor_root",
                "repository", "rev")


def _relative(where: str, value: str, *, empty_ok: bool = False) -> str:
    pure = PurePosixPath(value)
    if (not value and not empty_ok) or pure.is_absolute() or ".." in pure.parts or "\\" in value:
        raise VendorError(f"{where}: {value!r} must be a relative path without `..`")
    return value.strip("/")


def _source(path: Path, key: str, table: dict) -> Source:
    where = f"{path} [{key}]"
    missing = [k for k in _SOURCE_KEYS if k not in table]
    if missing:
        raise VendorError(f"{where}: missing {', '.join(missing)} (every source needs {', '.join(_SOURCE_KEYS)})")
    text = {k: table[k] for k in (*_SOURCE_KEYS, "repository_root", "rev_member") if k in table}
    bad = [k for k, v in text.items() if not isinstance(v, str)]
    if bad:
        raise VendorError(f"{where}: {', '.join(bad)} must be strings")
    version = text["version"]
    fill = {k: text[k].replace("{version}", version) for k in ("archive", "rev", "archive_root")}
    sha = text["archive_sha256"].lower()
    if not _HEX64.match(sha):
        raise VendorError(f"{where}: archive_sha256 {text['archive_sha256']!r} is not 64 hex digits")
    if "/" in fill["archive"] or not fill["archive"]:
        raise VendorError(f"{where}: archive {fill['archive']!r} must be a file name")
    src = Source(
        key=key, name=text["name"], distribution=text["distribution"], version=version, archive=fill["archive"],
        archive_sha256=sha, archive_root=_relative(f"{where} archive_root", fill["archive_root"]),
        vendor_root=_relative(f"{where} vendor_root", text["vendor_root"]),
        repository=text["repository"].rstrip("/"), rev=fill["rev"],
        repository_root=_relative(f"{where} repository_root", text.get("repository_root", ""), empty_ok=True),
        rev_member=text.get("rev_member", "").replace("{version}", version) or None,
    )
    if src.rev_member and not _COMMIT.match(src.rev):
        raise VendorError(f"{where}: rev_member names the commit the archive vendors, so rev must be "
                          f"that commit (40 hex digits), not {src.rev!r}")
    entries = table.get("file", [])
    if not isinstance(entries, list) or not entries:
        raise VendorError(f"{where}: no [[{key}.file]] entries (path and sha256 of each pinned file)")
    files, seen = [], set()
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) \
                or not isinstance(entry.get("sha256"), str):
            raise VendorError(f"{where}: [[{key}.file]] number {n} needs path and sha256 (strings)")
        rel = _relative(f"{where} file {n}", entry["path"])
        fsha = entry["sha256"].lower()
        if not _HEX64.match(fsha):
            raise VendorError(f"{where}: {rel}: sha256 {entry['sha256']!r} is not 64 hex digits")
        if rel in seen:
            raise VendorError(f"{where}: {rel} is pinned twice")
        seen.add(rel)
        files.append(PinnedFile(src, rel, fsha))
    object.__setattr__(src, "files", tuple(files))
    return src


#: the pins last read from each manifest, by its bytes: callers ask for them per excerpt
#: block, per fact and per line they check (a few milliseconds each time to parse), and
#: Pins is immutable, so one object serves every caller until the file changes
_read: dict[Path, tuple[bytes, Pins]] = {}


def load_pins(path: Path | None = None) -> Pins:
    path = path or manifest_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise VendorError(f"{path}: missing; it pins the upstream files the site quotes") from None
    except OSError as exc:
        raise VendorError(f"{path}: cannot be read: {exc}") from None
    known = _read.get(path)
    if known is not None and known[0] == raw:
        return known[1]
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise VendorError(f"{path}: cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise VendorError(f"{path}: not valid TOML: {exc}") from None
    sources = [_source(path, key, table) for key, table in data.items() if isinstance(table, dict)]
    if not any(s.key == "mlx" for s in sources):
        raise VendorError(f"{path}: expected an [mlx] source (name, distribution, version, archive, archive_sha256, ...)")
    roots = [s.vendor_root for s in sources]
    for a in roots:
        for b in roots:
            if a != b and (b + "/").startswith(a + "/"):
                raise VendorError(f"{path}: vendor_root {b!r} lies inside {a!r}")
    if len(set(roots)) != len(roots):
        raise VendorError(f"{path}: two sources share a vendor_root")
    pins = Pins(path, tuple(sources))
    _read[path] = (raw, pins)
    return pins
