"""llama.cpp's pinned Metal sources: where they are, what their headers declare, links to them.

Everything here is read from the files vendored out of the pinned ``llama-cpp-python`` sdist
(``[llama_cpp]`` of ``kernels/vendor.toml``), never retyped: the argument structs the host
fills (``ggml_metal_kargs_*`` of ``ggml-metal-impl.h``, laid out as Metal lays them out), the
integer constants of that header (rows and simdgroups per kernel, function-constant bases)
and of ``ggml-common.h`` (block sizes).

A host rule of :mod:`gemmglossary.llama` names the lines of llama.cpp it follows as
``(file, first, last)`` with ``file`` relative to ``ggml/src/ggml-metal/``; :func:`url` is
that range's permalink at the pinned commit, and tests/llama/test_host_lines.py checks every
range's text against the hash recorded when it was read.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from .. import vendor
from ..msl.declarations import constants, struct_dtypes

#: The Metal backend's folder, relative to the vendored llama.cpp root.
METAL_DIR = "ggml/src/ggml-metal"
#: Host files the restatement reads (relative to METAL_DIR).
OPS = "ggml-metal-ops.cpp"
DEVICE = "ggml-metal-device.cpp"
COMMON = "ggml-metal-common.cpp"
HOST_FILES = (OPS, DEVICE, COMMON)


@cache
def pinned() -> vendor.Source:
    """The ``[llama_cpp]`` source of kernels/vendor.toml (its commit, repository, files)."""
    return vendor.load_pins().source("llama_cpp")


def root() -> Path:
    """The vendored llama.cpp tree (materialized first if a file is missing)."""
    return _root()


@cache
def _root() -> Path:
    return Path(vendor.ensure()) / pinned().vendor_root


def metal_path(name: str) -> Path:
    """A file of the Metal backend (``kernels/mul_mm.metal``, ``ggml-metal-impl.h``...)."""
    return root() / METAL_DIR / name


def include_dirs() -> list[Path]:
    """What llama.cpp compiles its kernels with: the backend's folder and ggml/src/."""
    return [root() / METAL_DIR, root() / "ggml/src"]


def url(path: str, start: int, end: int | None = None) -> str:
    """Permalink to lines of a Metal backend file (``path`` relative to METAL_DIR) at the commit."""
    return pinned().permalink(f"{METAL_DIR}/{path}", start, end)


def lines(path: str, start: int, end: int) -> list[str]:
    """Lines ``start..end`` (1-based, inclusive) of a vendored Metal backend file."""
    return metal_path(path).read_text(encoding="utf-8").split("\n")[start - 1:end]


@cache
def _impl() -> tuple[dict[str, np.dtype], object]:
    path = metal_path("ggml-metal-impl.h")
    text = path.read_text(encoding="utf-8")
    return struct_dtypes(text, str(path)), constants(text)


def kargs(name: str) -> np.dtype:
    """The numpy dtype of ``ggml_metal_kargs_<name>`` as ggml-metal-impl.h declares it."""
    structs = _impl()[0]
    key = f"ggml_metal_kargs_{name}"
    if key not in structs:
        raise KeyError(f"ggml-metal-impl.h declares no {key}")
    return structs[key]


def pack(name: str, **fields) -> bytes:
    """The bytes ``set_bytes`` sends for a ``ggml_metal_kargs_<name>``: every field must be given
    (a missing one would be a silent zero), arrays may be given in part (the host's ``{ x }``
    initializes the first element and zeroes the rest, as C does)."""
    dt = kargs(name)
    missing = [f for f in dt.names if f not in fields]
    extra = [f for f in fields if f not in dt.names]
    if missing or extra:
        raise TypeError(f"ggml_metal_kargs_{name}: missing {missing}, unknown {extra}")
    rec = np.zeros((), dt)
    for key, value in fields.items():
        if dt[key].shape:
            value = np.asarray(value).ravel()
            rec[key][:len(value)] = value
        else:
            rec[key] = value
    return rec.tobytes()


def impl_constants() -> dict[str, int]:
    """Every integer ``#define`` of ggml-metal-impl.h with a value."""
    return dict(_impl()[1].values)


def impl_constant(name: str) -> int:
    """An integer ``#define`` of ggml-metal-impl.h (``N_R0_Q4_0``, ``FC_MUL_MM``...)."""
    return _impl()[1][name]


def common_constant(name: str) -> int:
    """An integer ``#define`` of ggml-common.h (``QK4_0``, ``QK_K``, ``K_SCALE_SIZE``...)."""
    return _common()[name]


@cache
def _common():
    # read once (the file is read like ggml-metal-impl.h above: the pinned copy does not change)
    path = root() / "ggml/src/ggml-common.h"
    return constants(path.read_text(encoding="utf-8"))
