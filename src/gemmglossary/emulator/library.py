"""A Metal library on the emulator: a source compiled once, its kernels taken from it by name.

Metal's host compiles a file into a library (``newLibraryWithSource``) and takes each
kernel from it (``newFunctionWithName``); llama.cpp's host does so for each of its kernel
files. ``load_library`` does the same: every kernel of the file is compiled into one
cached object per file, defines and compiler (its function constants are read when the
object is loaded, so one object serves every set of values, as one Metal library does),
and ``Library.kernel(name)`` returns a launchable :class:`~gemmglossary.emulator.Kernel`
without compiling again. ``load_kernel`` on the same file, defines and function constants
then takes its kernel from the cached library too (build.py)."""

from __future__ import annotations

import time

from . import build as _build
from .kernel import Kernel, kernel_from, read_source


class Library:
    """The compiled kernels of one source (an MTLLibrary)."""

    def __init__(self, source: str, filename: str, dirs: list[str], defines, function_constants):
        self._args = dict(include_dirs=dirs, defines=defines, function_constants=function_constants)
        self._source = source
        self.filename = filename
        self.function_constants = function_constants
        t = time.perf_counter()
        self._so, self._manifest, self.cache_hit = _build.build(source, filename, kernel=None, **self._args)
        # seconds this call took to compile (and rewrite) the library; ~0 when it came from the cache
        self.compile_seconds = time.perf_counter() - t
        self._kernels: dict[str, Kernel] = {}

    @property
    def names(self) -> list[str]:
        """The host names of the library's kernels (functionNames)."""
        return sorted(self._manifest["kernels"])

    def kernel(self, name: str) -> Kernel:
        """Kernel `name` (newFunctionWithName); a CompileError listing the library's kernels if
        it has none of that name."""
        if name not in self._kernels:
            def instrumented():
                return _build.build(self._source, self.filename, kernel=None, device_races=True, **self._args)
            self._kernels[name] = kernel_from(self._so, self._manifest, name, self.filename, self.cache_hit,
                                              self.function_constants, instrumented)
        return self._kernels[name]

    def __repr__(self) -> str:
        return f"<emulated Metal library {self.filename} ({len(self._manifest['kernels'])} kernels)>"


def load_library(path_or_source, *, defines=None, function_constants=None, include_dirs=None) -> Library:
    """Compile (or fetch from the cache) every kernel of a .metal file or source string, once.

    ``path_or_source`` is read as ``load_kernel`` reads it (a file, or source text with a newline)."""
    source, filename, dirs = read_source(path_or_source, include_dirs)
    return Library(source, filename, dirs, defines, function_constants)
