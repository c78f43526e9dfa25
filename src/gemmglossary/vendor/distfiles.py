"""The pinned distribution files, downloaded once into the user's cache and checked by sha256.

A file is fetched with pip (the package index's own client, so pip's configuration,
proxy and certificates apply): a wheel with ``--only-binary`` and the platform tags of its
name, so every machine gets the same file; a source distribution with ``--no-binary`` for
that distribution alone (pip prepares its metadata, which installs the build backend in an
isolated environment but builds nothing; with ``:all:`` the backend and its own build
dependencies would be built from source too, several CPU-minutes for the same file). It is downloaded into a folder of its own next to the cache entry and
moved into place only once its sha256 is the pinned one, so a cached file is whole or
absent; a cached file whose hash is wrong anyway (damaged since) is deleted and fetched
again. One process downloads at a time (the processes of a test run start together).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..file_lock import exclusive
from ..paths import cache_dir
from .manifest import Source, VendorError

#: How long pip may take for one file (the llama-cpp-python sdist is 77 MB and pip prepares
#: its metadata: about 7 CPU-seconds here).
PIP_TIMEOUT_S = 900


def downloads_dir() -> Path:
    return cache_dir() / "vendor"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pip_args(source: Source, dest: Path) -> list[str]:
    """The ``pip download`` command that fetches exactly ``source.archive``."""
    args = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
            "--progress-bar", "off", "--dest", str(dest)]
    name = source.archive
    if name.endswith(".whl"):
        # name-version(-build)?-python-abi-platform.whl: ask for exactly those tags
        python, abi, platform = name[:-len(".whl")].split("-")[-3:]
        # (the wheel's own tags, whatever this machine is; its Requires-Python is not ours to meet)
        args += ["--only-binary=:all:", "--abi", abi, "--implementation", python[:2], "--ignore-requires-python"]
        args += [f"--platform={p}" for p in platform.split(".")]
        args += ["--python-version", python[2:] or "3"]
    else:
        args += [f"--no-binary={source.distribution}"]
    return [*args, f"{source.distribution}=={source.version}"]


def _fetch(source: Source, dest: Path) -> Path:
    """Download ``source.archive`` into the cache folder ``dest``; return its path there."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
        args = pip_args(source, Path(tmp))
        try:
            run = subprocess.run(args, capture_output=True, text=True, timeout=PIP_TIMEOUT_S,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise VendorError(_cannot(source, f"pip took more than {PIP_TIMEOUT_S} s")) from None
        except OSError as exc:
            raise VendorError(_cannot(source, f"pip could not be started: {exc}")) from None
        got = Path(tmp) / source.archive
        if run.returncode != 0 or not got.is_file():
            said = [t[:300] for t in (run.stderr.strip() or run.stdout.strip()).splitlines()]
            tail = " | ".join(said[-2:]) if said else f"exit status {run.returncode}"
            others = sorted(p.name for p in Path(tmp).iterdir() if not p.name.startswith("."))
            if run.returncode == 0 and others:
                tail = f"pip saved {', '.join(others)} instead"
            raise VendorError(_cannot(source, f"`{' '.join(args[1:])}` failed: {tail}"))
        found = sha256_of(got)
        if found != source.archive_sha256:
            raise VendorError(
                f"{source.archive} from the package index has sha256 {found}, but kernels/vendor.toml "
                f"pins {source.archive_sha256}: the index serves another file under the pinned name, or the "
                "pin is wrong; nothing was vendored from it")
        final = dest / source.archive
        os.replace(got, final)
    return final


def _cannot(source: Source, why: str) -> str:
    return (f"cannot download {source.archive} ({source.distribution} {source.version}, pinned in "
            f"kernels/vendor.toml): {why}. Run `gemmglossary vendor` where the package index is "
            f"reachable, or copy that file (sha256 {source.archive_sha256}) into {downloads_dir()}/")


def distribution_file(source: Source) -> Path:
    """The cached, checked distribution file of ``source``, downloaded first if need be."""
    dest = downloads_dir()
    cached = dest / source.archive
    with exclusive(dest / ".lock"):
        if cached.is_file():
            if sha256_of(cached) == source.archive_sha256:
                return cached
            cached.unlink()  # damaged or partial: fetched again below
        return _fetch(source, dest)

