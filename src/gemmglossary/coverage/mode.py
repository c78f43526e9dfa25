"""Whether kernels are compiled for line coverage, and where their counters go.

Coverage is on when ``GEMMGLOSSARY_COVERAGE`` names a folder (the coverage run's data
folder). The emulator then compiles each kernel with gcc's ``--coverage`` (clang++
understands the same flags and writes the same format), and its runtime with
``-DMSLEMU_COVERAGE``, which makes each worker process write its counters before it
``_exit``\\s. The flags are part of every compile-cache key, so an instrumented shared
object is never loaded by a run without coverage, nor the reverse.

libgcov writes the counters of a shared object to the path of its ``.gcda`` file as it
was when compiled (next to the ``.gcno`` notes, in the compile cache), under
``$GCOV_PREFIX``: that is set to the data folder, so each coverage run collects its own
counters and the cache stays shared between runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import settings

ENV = "GEMMGLOSSARY_COVERAGE"


def data_dir() -> Path | None:
    """The coverage run's data folder, or None when coverage is off."""
    value = settings.value(ENV)
    return value.resolve() if value is not None else None


def counters_dir(data: Path) -> Path:
    """Where libgcov writes the counters (``.gcda``) of a coverage run."""
    return data / "gcda"


def enabled() -> bool:
    return data_dir() is not None


def _not_instrumented(paths) -> str:
    """An extended regex matching the files whose functions get no counters."""
    alternatives = [re.escape(str(p)) for p in paths]
    return "|".join(["^/usr/", "<built-in>", "kernel\\.cpp$", *alternatives])


def kernel_flags(library_dirs) -> list[str]:
    """Extra flags of a kernel compile: counters for the functions of kernel files, none
    for the emulator's Metal library (``library_dirs``) or the C++ standard library, whose
    code is inlined into kernels but is not what a page quotes."""
    data = data_dir()
    if data is None:
        return []
    _point_counters_at(data)
    # -O0, after the emulator's own level, so that it wins. Optimized, gcc merges a line's code
    # into its neighbours' (a statement whose value nothing uses, the store in a branch, a
    # function's exit) and gcov then counts it 0 though it ran; with -O2 -g1 it also gives a
    # statement that only calls an inlined library function (threadgroup_barrier(...)) no
    # line at all. Unoptimized, nothing is inlined but what is forced (instrumented_text
    # blanks that), and -g1 (the line tables, which the diagnostics read) gives gcov the
    # same executable and executed lines as -g: measured on the first-party kernels, gemv,
    # the reductions and the exercises (1301 lines in 40 files), while each compile takes
    # about a quarter less time.
    # The runtime (the scheduler, runtime_flags) stays optimized.
    return ["--coverage", "-O0", "-g1", f"-fprofile-exclude-files={_not_instrumented(library_dirs)}"]


# The forms of forced inlining in kernel source (MLX's METAL_FUNC is `inline` with the first).
_FORCED_INLINE = re.compile(r"__attribute__\s*\(\(\s*(?:__)?always_inline(?:__)?\s*\)\)|\[\[\s*(?:gnu|clang)::always_inline\s*\]\]")


def instrumented_text(text: str) -> str:
    """A kernel's translation unit as compiled for coverage: the kernel source's forced
    inlining blanked (columns kept). Unoptimized, gcc still inlines what is marked
    always_inline, and MLX marks nearly every helper so: a steel GEMM instantiation became
    one function of 220 KB of code, and its compile spent most of its time on it. Not
    inlined, each helper is compiled once; every line that ran still counts (a line's count
    is summed over the places its code is), and a helper's signature line now has code,
    its entry, and counts too. The shim's own helpers keep theirs (they are in the
    precompiled header, not in this text): a report names the kernel's line from their
    inline chain."""
    return _FORCED_INLINE.sub(lambda m: " " * len(m.group(0)), text)


def runtime_flags() -> list[str]:
    return ["-DMSLEMU_COVERAGE"] if enabled() else []


def _point_counters_at(data: Path) -> None:
    # read by libgcov when a process writes its counters: the workers inherit it
    os.environ["GCOV_PREFIX"] = str(counters_dir(data))
    os.environ["GCOV_PREFIX_STRIP"] = "0"
