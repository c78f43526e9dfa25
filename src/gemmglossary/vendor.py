"""Materialize the pinned MLX steel headers into ``kernels/vendor/``.

The site quotes MLX's own GEMM headers and the tests execute them, but this
repository never commits upstream code. Instead ``kernels/vendor.toml`` pins the
mlx version and the sha256 of every file we need; this module copies those files
out of the installed mlx wheel (which ships them) and refuses anything else.

It runs by itself when the site builds (the mkdocs hook), when the tests start
(``tests/conftest.py``) and before ``gemmglossary excerpts``, so neither README command
needs a separate step. Those automatic runs only add missing files: a vendored file that
differs from its pin stops them with its name, and only ``gemmglossary vendor`` restores
it (keeping the edited copy).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .cli import run_command, subparser
from .file_lock import atomic_write
from .paths import kernels_dir, project_root, vendor_dir

#: Where MLX keeps its Metal kernels, both in the wheel (under ``mlx/include``)
#: and in the upstream repository.
MLX_KERNELS_SUBPATH = "mlx/backend/metal/kernels"
#: The distributions that may ship the headers: ``mlx-cpu`` on Linux, ``mlx`` on macOS.
DISTRIBUTIONS = ("mlx-cpu", "mlx-metal", "mlx")
FIX = "run `pip install -e .` in the repository (it installs the pinned mlx)"


class VendorError(RuntimeError):
    """The installed mlx cannot provide the pinned files."""


@dataclass(frozen=True)
class PinnedFile:
    path: str  # relative to mlx/backend/metal/kernels
    sha256: str

    @property
    def vendored(self) -> Path:
        return vendor_dir() / MLX_KERNELS_SUBPATH / self.path


@dataclass(frozen=True)
class Pins:
    version: str
    upstream: str
    files: tuple[PinnedFile, ...]

    def permalink(self, path: str, start: int | None = None, end: int | None = None) -> str:
        """GitHub permalink of an MLX kernel file (``path`` relative to the kernels dir)."""
        url = f"{self.upstream}/{path}"
        if start is not None:
            url += f"#L{start}" + (f"-L{end}" if end is not None and end != start else "")
        return url


def manifest_path() -> Path:
    return kernels_dir() / "vendor.toml"


def load_pins(path: Path | None = None) -> Pins:
    path = path or manifest_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VendorError(f"{path}: missing; it pins the MLX files the site quotes") from None
    except tomllib.TOMLDecodeError as exc:
        raise VendorError(f"{path}: not valid TOML: {exc}") from None
    try:
        mlx = data["mlx"]
        files = tuple(PinnedFile(f["path"], f["sha256"].lower()) for f in data["file"])
        return Pins(str(mlx["version"]), str(mlx["upstream"]).rstrip("/"), files)
    except (KeyError, TypeError) as exc:
        raise VendorError(
            f"{path}: expected [mlx] version/upstream and [[file]] path/sha256 entries; missing {exc}"
        ) from None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def installed_mlx_version() -> str | None:
    try:
        return importlib.metadata.version("mlx")
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_kernels_dir() -> Path:
    """The ``mlx/backend/metal/kernels`` folder of the installed wheel."""
    for dist_name in DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            continue
        root = Path(dist.locate_file("mlx")) / "include" / MLX_KERNELS_SUBPATH
        if root.is_dir():
            return root
    raise VendorError(
        "the installed mlx ships no Metal kernel headers "
        f"(looked for mlx/include/{MLX_KERNELS_SUBPATH} in {', '.join(DISTRIBUTIONS)}); "
        f"on Linux they come with the `cpu` extra (mlx[cpu]); {FIX}"
    )


@dataclass(frozen=True)
class VendorState:
    """How the vendored copies stand against the pins."""

    missing: tuple[PinnedFile, ...]
    edited: tuple[tuple[PinnedFile, str], ...]  # (file, the sha256 found)

    def problems(self) -> list[str]:
        out = [f"{f.vendored}: missing" for f in self.missing]
        out += [f"{f.vendored}: {_differs(f, found)}" for f, found in self.edited]
        return out


def _differs(f: PinnedFile, found: str) -> str:
    return (f"differs from its pin in {manifest_path().name} (sha256 {found}, pinned {f.sha256}); "
            "MLX's files are read, never edited here: `gemmglossary vendor` restores the pinned copy "
            "(and keeps yours)")


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
    return f"not pinned in {manifest_path()}: only pinned MLX files may be quoted"


def _copy_pinned(pins: Pins, files) -> None:
    version = installed_mlx_version()
    if version != pins.version:
        found = f"mlx {version}" if version else "no mlx"
        raise VendorError(
            f"{manifest_path()}: pins mlx {pins.version}, found {found} installed; {FIX}"
        )
    source_root = installed_kernels_dir()
    for f in files:
        source = source_root / f.path
        if not source.is_file():
            raise VendorError(
                f"{source}: missing from mlx {version}, but {manifest_path()} pins it; "
                f"the wheel is incomplete or the pin is wrong; {FIX}"
            )
        data = source.read_bytes()
        found = hashlib.sha256(data).hexdigest()
        if found != f.sha256:
            raise VendorError(
                f"{source}: sha256 {found}, but {manifest_path()} pins {f.sha256} for "
                f"{f.path} of mlx {pins.version}; the installed wheel differs from the pinned one; {FIX}"
            )
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
        _copy_pinned(pins, found.missing)
    return vendor_dir()


def restore(pins: Pins | None = None) -> list[str]:
    """Make ``kernels/vendor/`` hold exactly the pinned files, restoring edited ones; an
    edited copy is moved to ``.cache/vendor-edits/<time>/`` first. Returns what was done."""
    pins = pins or load_pins()
    found = state(pins)
    done = []
    if found.edited:
        keep = project_root() / ".cache" / "vendor-edits" / time.strftime("%Y%m%d-%H%M%S")
        for f, _ in found.edited:
            kept = keep / f.path
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f.vendored, kept)
            done.append(f"restored {f.vendored} from mlx {pins.version}; your edited copy is {kept}")
    _copy_pinned(pins, found.missing + tuple(f for f, _ in found.edited))
    done += [f"materialized {f.vendored}" for f in found.missing]
    return done


def register(subparsers) -> None:
    p = subparser(subparsers, "vendor", help="copy the pinned MLX headers into kernels/vendor/",
                  description="Copy the MLX files pinned in kernels/vendor.toml from the installed mlx\n"
                  "wheel into kernels/vendor/ (git-ignored), checking their hashes. A copy that\n"
                  "differs from its pin is restored, and the edited copy kept under\n"
                  ".cache/vendor-edits/. Builds and tests materialize missing files by themselves\n"
                  "but never overwrite an edited one.")
    p.add_argument("--check", action="store_true", help="only report (exit 1 on any problem); copy nothing")
    p.set_defaults(func=_run)


def _run(args) -> int:
    try:
        pins = load_pins()
        if args.check:
            problems = status(pins)
            for problem in problems:
                print(problem)
            print("vendored files match the pins" if not problems else f"{len(problems)} problem(s)")
            return 1 if problems else 0
        for line in restore(pins):
            print(line)
    except VendorError as exc:
        print(f"gemmglossary vendor: {exc}")
        return 1
    print(f"{len(pins.files)} MLX {pins.version} files in {vendor_dir()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``gemmglossary vendor ARGV...``."""
    return run_command("vendor", argv)
