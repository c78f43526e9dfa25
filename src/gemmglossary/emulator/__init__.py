"""CPU emulator for Metal Shading Language compute kernels.

``load_kernel(path_or_source, name, *, defines=None, function_constants=None,
include_dirs=None)`` compiles a kernel with the host C++ compiler (``$CXX``, else g++,
else clang++; tested with g++ 12 and clang++ 14, x86-64 and aarch64 Linux; written for
macOS with Xcode's clang++ but not run there) and a shim of the Metal standard library,
and returns a :class:`Kernel`. ``path_or_source`` is a file when it is a ``Path`` or a
``str`` without a newline, Metal source when it is a ``str`` with one.
Every GPU thread runs as a fiber; threadgroup barriers and simd-group functions are
rendezvous points; misuse is raised as an exception naming the .metal (or vendored .h)
file and line, the threadgroup and the thread.

How a source becomes a shared object (see build.py, rewrite.py):

1. The file is preprocessed with ``g++ -E`` against stub ``<metal_*>`` headers, so
   macros, ``#include "..."`` (resolved through the file's directory and
   ``include_dirs``) and ``-D`` defines are applied exactly once, vendored files are never
   touched, and linemarkers keep every line's original file and number.
2. A tokenizer-based rewriter (rewrite.py, on gemmglossary.msl.lexer) turns address spaces into checked pointer
   types (``device T*`` -> ``mslemu::ptr<1, T>``, one type per address space, so
   overloads on address space stay distinct), threadgroup arrays into views of memory
   shared by the threadgroup's fibers, function constants into compile-time constants,
   and generates an entry point per kernel (parameter binding from ``[[buffer(n)]]``,
   ``[[threadgroup(n)]]`` and every thread-position attribute). Passes of their own:
   members of threadgroup objects (threadgroup_members.py), brace lists after a vector
   type (vector_brace_lists.py), template arguments deduced for an instantiation that
   names none (template_deduction.py).
3. The result is compiled with ``-O1 -g`` (a library of many kernels ``-Og``) and linked
   with the runtime (fibers with a hand-written context switch, scheduler, diagnostics,
   compiled ``-O2``) into a cached ``.so``
   (``gemmglossary.paths.cache_dir() / "emulator"``), keyed by the preprocessed
   source, defines, function constants, compiler and emulator version.

``load_library(path_or_source, *, defines=None, function_constants=None, include_dirs=None)``
compiles every kernel of a file once, as Metal's ``newLibraryWithSource`` does, and
``Library.kernel(name)`` takes one from it (``newFunctionWithName``); see library.py.

Launching (``Kernel.__call__``)::

    k(*buffers, threads=(x, y, z) | threadgroups=(x, y, z), threads_per_threadgroup=(x, y, z),
      threadgroup_memory={n: nbytes}, schedule="lockstep" | "simdgroup-major" | ("random", seed),
      timeout=60.0, race_check=True, oob_reads="error" | "warn", workers=None, device_races=None)

Buffer binding: the i-th positional argument binds the i-th buffer parameter in
declaration order (parameters switched off by a function constant are skipped); a single
dict ``{n: array}`` binds by ``[[buffer(n)]]`` index instead. numpy arrays are device
memory and are written back in place, but only when the launch succeeded (no
half-written outputs), so an array's dtype must be the parameter's element type
(binding.py has the rules; a mismatch is an ArgumentTypeError naming both); arrays whose
bytes overlap are one memory, each bound at its offset (device_memory.py). Python and
numpy scalars bind to ``constant T&`` as values (an ArgumentValueError if the type cannot
hold them); structs bind as numpy structured arrays (or scalars of one) or bytes. ``threads=`` is dispatchThreads
(edge threadgroups are smaller and ``[[threads_per_threadgroup]]`` reports their real
size); ``threadgroups=`` is dispatchThreadgroups.

Every launch runs in child processes (a crash in kernel code raises KernelCrash and
never kills the caller); threadgroups are split over ``workers`` processes (default up
to 2 CPUs, ``$GEMMGLOSSARY_EMULATOR_WORKERS``), each threadgroup whole in one process,
and the error of the lowest-numbered failing threadgroup is the one reported, so results
and diagnostics do not depend on the number of workers. Workers are spawned (a small
executable that loads the kernel: workers.py says why); they die with their caller, and
an interrupted wait (Ctrl-C, a test timeout) kills them.

Diagnostics: DataRaceError (threadgroup memory, found from shadow memory whatever the
schedule, naming both lines; device memory too with ``device_races=True``, which runs a
build instrumented at every access, in one worker), BarrierError (threads at different barriers, or a barrier
some live threads never reach), OutOfBoundsError (read or write, buffer name, element
index and valid range), SimdgroupDivergenceError (a simd-group function or simdgroup_matrix operation
reached by part of a simdgroup or at different places), KernelTimeoutError (where every
thread was), KernelCrash, CompileError (at the .metal line), LaunchError (e.g. more
threads per threadgroup than ``max_total_threads_per_threadgroup`` or 1024), and
PortabilityWarning for what a kernel relies on that the specification does not promise
(run the way the kernel's results assume; no Apple document says what a GPU does)
(threads returning before a barrier others wait at; threadgroup memory ordered only by a
barrier without mem_threadgroup; a barrier some lanes of a simdgroup branch around;
reading threadgroup memory nobody wrote or an inactive lane's value; out-of-bounds reads
allowed by ``oob_reads="warn"``), a PortabilityError in strict mode (``strict=True`` or
``GEMMGLOSSARY_EMULATOR_STRICT=1``). Each carries what its
message says as attributes (``site``, ``thread``, ``access``...; see errors.py). The
C++/Python interface (launch and result structs, error and parameter kinds, op codes) is
described once, in shim/mslemu_abi.h, and checked at load (abi.py); compiled kernels are
cached and verified before loading (cache.py).
"""

from __future__ import annotations

from .build import stats as build_stats
from .errors import (ArgumentTypeError, ArgumentValueError, BarrierError, CacheWarning, CompileError, DataRaceError, EmulatorError,
                     KernelCrash, KernelTimeoutError, LaunchError, OutOfBoundsError, PortabilityError,
                     PortabilityWarning, SimdgroupDivergenceError)
from .kernel import Kernel, load_kernel
from .library import Library, load_library
from .trace import Trace, TraceTruncated, Tracing

__all__ = [
    "load_kernel", "Kernel", "load_library", "Library", "EmulatorError", "CompileError", "DataRaceError", "BarrierError", "OutOfBoundsError",
    "SimdgroupDivergenceError", "KernelTimeoutError", "LaunchError", "ArgumentTypeError", "ArgumentValueError",
    "KernelCrash", "CacheWarning",
    "PortabilityWarning", "PortabilityError", "build_stats", "Trace", "Tracing", "TraceTruncated",
]
