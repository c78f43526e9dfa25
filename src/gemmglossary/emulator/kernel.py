"""Loading kernels and launching them on the emulator."""

from __future__ import annotations

import ctypes
import os
import re
import warnings
from pathlib import Path

import numpy as np

from . import build as _build
from . import launch_checks
from .. import settings
from .abi import abi
from . import trace as _trace
from . import workers as _workers
from .binding import Blob, bind_buffers
from .errors import (BarrierError, CompileError, DataRaceError, EmulatorError, KernelCrash, KernelTimeoutError,
                     LaunchError, OutOfBoundsError, PortabilityError, PortabilityWarning, SimdgroupDivergenceError, parse_facts,
                     with_facts)
from .symbolize import Symbolizer
from ..coverage import warnings_record as _warnings_record

FACTS_SEPARATOR = "\x1f"  # MSLEMU_FACTS_SEPARATOR of mslemu_abi.h
RECORD_SEPARATOR = b"\x1e"  # MSLEMU_RECORD_SEPARATOR: between the warnings of warn_msg

MAX_THREADS = 1024  # maxTotalThreadsPerThreadgroup's ceiling in Apple's Metal feature set tables

# the exception of each ErrKind of mslemu_abi.h
_ERROR_CLASSES = {"E_GENERIC": EmulatorError, "E_OOB": OutOfBoundsError, "E_RACE": DataRaceError,
                  "E_BARRIER": BarrierError, "E_DIVERGE": SimdgroupDivergenceError, "E_TIMEOUT": KernelTimeoutError,
                  "E_CRASH": KernelCrash, "E_LAUNCH": LaunchError}
_SCHEDULES = {"lockstep": "SCHED_LOCKSTEP", "simdgroup-major": "SCHED_SIMDGROUP_MAJOR"}

_libs: dict[str, ctypes.CDLL] = {}
# the loaded objects this process has called into since flush_coverage() last wrote their counters
_touched: set[str] = set()


def flush_coverage() -> int:
    """Write this process's own line counters of the instrumented kernels it has called into
    (its calls that read a kernel's parameters and start its workers; the workers write
    theirs when they end), and start them again from zero. libgcov writes them only when the
    process exits otherwise, which is too late for a test session that measures coverage
    itself (gemmglossary.coverage.session). How many objects were written."""
    written = 0
    for key in sorted(_touched):
        flush = getattr(_libs[key], "mslemu_coverage_flush", None)  # only instrumented runtimes have it
        if flush is not None:
            flush()
            written += 1
    _touched.clear()
    return written


def _lib(so: Path) -> ctypes.CDLL:
    """The loaded shared object, its interface checked against mslemu_abi.h on first load."""
    key = str(so)
    if key not in _libs:
        lib = ctypes.CDLL(key, mode=ctypes.RTLD_LOCAL)
        abi().check_layout(lib, key)
        launch_p = ctypes.POINTER(abi().structs["MslemuLaunch"])
        lib.mslemu_run.argtypes = [launch_p]
        lib.mslemu_run.restype = ctypes.c_int
        lib.mslemu_fork_workers.argtypes = [launch_p, ctypes.POINTER(ctypes.c_int32)]
        lib.mslemu_fork_workers.restype = ctypes.c_int
        _libs[key] = lib
    _touched.add(key)
    return _libs[key]


def _is_path(s) -> bool:
    """A Path, or a str without a newline, names a file; source text has at least one newline."""
    return isinstance(s, os.PathLike) or "\n" not in s


def load_kernel(path_or_source, name: str, *, defines=None, function_constants=None, include_dirs=None):
    """Compile (or fetch from the cache) kernel ``name`` of a .metal file or source string.

    ``path_or_source`` is a file when it is a ``Path`` or a ``str`` without a newline (any
    extension: ``.metal``, ``.h``...), and Metal source when it is a ``str`` with one.

    A file with many kernel instantiations is compiled for this kernel alone, unless the
    whole file is in the cache already as a library (library.py: load_library), with the
    same defines and function constants: the kernel is then taken from it."""
    source, filename, dirs = read_source(path_or_source, include_dirs)

    def build(device_races: bool = False):
        return _build.build(source, filename, include_dirs=dirs, defines=defines,
                            function_constants=function_constants, kernel=name, device_races=device_races)

    so, manifest, hit = build()
    return kernel_from(so, manifest, name, filename, hit, function_constants,
                       instrumented=lambda: build(device_races=True))


def read_source(path_or_source, include_dirs) -> tuple[str, str, list[str]]:
    """(source text, file name, include directories) of a file or source string."""
    if not isinstance(path_or_source, (str, os.PathLike)):
        raise TypeError(f"load_kernel takes a path or Metal source text, not {type(path_or_source).__name__}")
    if _is_path(path_or_source):
        path = Path(path_or_source).resolve()
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "no such file"
            hint = "" if isinstance(path_or_source, os.PathLike) else (
                " (a str without a newline is read as a file name; Metal source text has at least one newline)")
            raise CompileError(f"{path}: {what}{hint}")
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:  # the file's mistake, named, as the compiler would
            raise CompileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        filename = str(path)
        dirs = [str(path.parent)]
    else:
        source = str(path_or_source)
        filename = "<source>"
        dirs = []
    dirs += [str(Path(d).resolve()) for d in (include_dirs or [])]
    return source, filename, dirs


def kernel_from(so: Path, manifest: dict, name: str, filename: str, hit: bool, function_constants,
                instrumented) -> "Kernel":
    """Kernel `name` of a compiled object (newFunctionWithName), its function constants checked."""
    declared = manifest.get("function_constants", {})
    indices = {v[0] for v in declared.values()}
    for key in function_constants or {}:
        if (isinstance(key, str) and key not in declared) or (not isinstance(key, str) and int(key) not in indices):
            warnings.warn(f"{filename}: function constant {key!r} is not declared in this source; its value is ignored",
                          stacklevel=3)
    if name not in manifest["kernels"]:
        known = ", ".join(sorted(manifest.get("all_kernels") or manifest["kernels"])) or "none"
        raise CompileError(f"{filename}: no kernel named '{name}' (kernels found: {known})")
    if "fc_slots" in manifest:
        _check_function_constants(so, manifest["fc_slots"], filename)
    return Kernel(so, manifest["kernels"][name], name, filename, hit, instrumented=instrumented)


def _check_function_constants(so: Path, slots: list, filename: str) -> None:
    """Raise the CompileError of an object whose function constants could not take the
    values it was loaded with (runtime.cpp's mslemu_fc_error), naming the constant."""
    read = _lib(so).mslemu_fc_error
    read.restype = ctypes.c_char_p
    why = read()
    if why:
        why = why.decode(errors="replace")
        m = re.match(r"function constant #(\d+): (.*)", why)
        if m and int(m.group(1)) < len(slots):
            name, idx, typ = slots[int(m.group(1))]
            why = f"function constant '{name}' ({typ}, index {idx}): {m.group(2)}"
        raise CompileError(f"{filename}: {why}")


class Kernel:
    """A compiled kernel; call it to launch."""

    def __init__(self, so: Path, meta: dict, name: str, filename: str, cache_hit: bool, instrumented=None):
        self.so = so
        # how to build this kernel instrumented for the device race check, and that build
        self._instrumented = instrumented
        self._device_race_kernel = None
        self._checks_device_races = False  # this is that build
        self.name = name
        self.filename = filename
        self.meta = meta
        self.cache_hit = cache_hit
        lib = _lib(so)
        kid = meta["id"]
        self._entry = ctypes.cast(getattr(lib, f"__mslemu_entry_{kid}"), ctypes.c_void_p).value
        param_info = abi().structs["ParamInfo"]
        arr = (param_info * abi()["MSLEMU_MAX_PARAMS"])()
        n = getattr(lib, f"__mslemu_info_{kid}")(arr)
        self._info = [arr[i] for i in range(n)]
        mtt = getattr(lib, f"__mslemu_mtt_{kid}")()
        self.max_total_threads_per_threadgroup = int(mtt) if mtt > 0 else MAX_THREADS
        self._lib = lib
        self._params = meta["params"]
        self._bparams = None
        self.last_trace = None  # the Trace of the last launch that asked for one
        self._symbolizer = Symbolizer(so, f"kernel '{name}' ({meta.get('file', filename)}:{meta.get('line', '?')})")

    @property
    def parameters(self):
        kinds = {abi()["P_BUFFER"]: "buffer", abi()["P_TGMEM"]: "threadgroup"}
        return [(p["name"], kinds.get(p["kind"], p["attr"]), p["index"] if p["kind"] in kinds else None, p["type"])
                for p in self._params]

    def _buffer_params(self):
        """The bound [[buffer(n)]] parameters (not switched off by a function constant), with their ParamInfo."""
        if self._bparams is None:
            self._bparams = [(p, inf) for p, inf in zip(self._params, self._info)
                             if p["kind"] == abi()["P_BUFFER"] and inf.gate]
        return self._bparams

    def __repr__(self) -> str:
        return f"<emulated Metal kernel {self.name!r} from {self.filename}>"

    # ------------------------------------------------------------------ launch
    def __call__(self, *buffers, threads=None, threadgroups=None, threads_per_threadgroup=None,
                 threadgroup_memory=None, schedule="lockstep", timeout=60.0, race_check=True,
                 oob_reads="error", workers=None, strict=None, trace=None, device_races=None):
        """Launch the kernel.

        device_races: True checks device memory for races too (two threads of the dispatch
        touching one address, at least one writing, not both atomically, with nothing that
        orders them); None (default) reads $GEMMGLOSSARY_EMULATOR_DEVICE_RACES (1, true or
        yes). It runs a build of the kernel instrumented at every memory access (compiled
        the first time it is asked for) with every threadgroup in one worker process, some
        times slower than a launch without it (docs/emulator.md has the measured cost).

        trace: True or a ``Tracing(...)`` records what every thread did at its barriers and
        simd-group functions (see emulator/trace.py); the launch then returns the Trace and
        keeps it as ``last_trace``, which a failed launch sets too.

        A buffer parameter may be left unbound (an index missing from the dict, or None), as
        MLX's host code leaves buffers a kernel does not read; accessing one is an
        OutOfBoundsError that names the parameter.

        oob_reads: "error" (default) stops at the first access outside a buffer; "warn"
        lets out-of-bounds *reads* return zeros with a PortabilityWarning (some vendored
        kernels read past the edge and discard the values) while any out-of-bounds write
        is still an OutOfBoundsError.

        strict: True turns every PortabilityWarning (what the kernel relies on that the
        specification does not promise) into a PortabilityError, raised before any output is written back;
        None (default) reads $GEMMGLOSSARY_EMULATOR_STRICT (1, true or yes: strict).

        workers: how many processes share the threadgroups (default: $GEMMGLOSSARY_EMULATOR_WORKERS,
        else up to 2 CPUs). Results and diagnostics do not depend on it: each threadgroup
        runs whole in one process, and the error of the lowest-numbered threadgroup is reported.
        """
        device_races = _flag(device_races, "GEMMGLOSSARY_EMULATOR_DEVICE_RACES")
        if device_races and not self._checks_device_races:  # the launch goes to the instrumented build
            k = self._device_race_build()
            try:
                return k(*buffers, threads=threads, threadgroups=threadgroups,
                         threads_per_threadgroup=threads_per_threadgroup, threadgroup_memory=threadgroup_memory,
                         schedule=schedule, timeout=timeout, race_check=race_check, oob_reads=oob_reads,
                         workers=workers, strict=strict, trace=trace, device_races=True)
            finally:
                self.last_trace = k.last_trace
        ntg, grid, tptg, dispatch_threads = self._geometry(threads, threadgroups, threads_per_threadgroup)
        tracing = _trace.request(trace)
        if 0 in grid:
            return
        launch_checks.writable(self.name, self._buffer_params(), buffers)
        blobs = bind_buffers(self.name, self._buffer_params(), buffers)
        tgm = self._threadgroup_memory(threadgroup_memory)
        options = _options(schedule, timeout, race_check, oob_reads, 1 if device_races else workers, ntg)
        options["device_races"] = 1 if device_races else 0
        plan = _trace.TracePlan(tracing, ntg, tptg, race_check) if tracing else None
        region = _LaunchRegion(blobs, options["workers"], plan.nbytes if plan else 0)
        try:
            launch = region.fill(self._entry, self.meta["id"], ntg, grid, tptg, dispatch_threads, tgm, options)
            if plan:
                launch.trace_offset = plan.install(region.shm.mm, region.extra_at)
            report = self._execute(launch, region, options)
            if plan:
                self.last_trace = plan.read(region.shm.mm, self._lib)
            self._report(report, oob_reads, _strict(strict))
            region.write_back(self.name)
        finally:
            region.close()
        return self.last_trace if plan else None

    def _device_race_build(self) -> "Kernel":
        """This kernel as built for the device race check (compiled on first use)."""
        if self._device_race_kernel is None:
            so, manifest, hit = self._instrumented()
            self._device_race_kernel = Kernel(so, manifest["kernels"][self.name], self.name, self.filename, hit)
            self._device_race_kernel._checks_device_races = True
        return self._device_race_kernel

    def _execute(self, launch, region: "_LaunchRegion", options: dict) -> dict:
        """Run the launch in worker processes (or, for debugging, here); the merged report."""
        results = region.results()
        if settings.value("GEMMGLOSSARY_EMULATOR_INPROCESS"):
            # the kernel runs inside this process, for debugging the emulator itself under
            # gdb: any diagnostic or crash then ends the process
            self._lib.mslemu_run(ctypes.byref(launch))
            return _workers.merge(results[:1])
        _touched.add(str(self.so))
        pids = _workers.start(self._lib, launch, region.shm, self.so)
        limit = options["timeout"] + 10 if options["timeout"] > 0 else None  # the workers time out first
        statuses = _workers.wait(pids, limit)
        if statuses is None:
            return {"status": abi()["E_TIMEOUT"], "msg": (f"timeout: the kernel did not finish within "
                                                         f"{options['timeout']:g} s and was killed").encode(),
                    "warn_msg": b"", "oob_msg": b"", "uninit_msg": b""}
        for res, st in zip(results, statuses):
            _workers.describe_exit(res, st)
        return _workers.merge(results)

    def _geometry(self, threads, threadgroups, threads_per_threadgroup):
        """(threadgroups, threads, threads per threadgroup, dispatch_threads) as 3 ints each."""
        if (threads is None) == (threadgroups is None):
            raise LaunchError("give exactly one of threads= (dispatchThreads) or threadgroups= (dispatchThreadgroups)")
        if threads_per_threadgroup is None:
            raise LaunchError("threads_per_threadgroup= is required")
        tptg = _dims(threads_per_threadgroup, "threads_per_threadgroup")
        total = tptg[0] * tptg[1] * tptg[2]
        limit = min(self.max_total_threads_per_threadgroup, MAX_THREADS)
        if total > limit or total <= 0:
            raise LaunchError(
                f"threads_per_threadgroup {tuple(tptg)} has {total} threads, but kernel '{self.name}' allows at most "
                f"{limit} (maxTotalThreadsPerThreadgroup"
                + (" from its max_total_threads_per_threadgroup attribute" if self.max_total_threads_per_threadgroup < MAX_THREADS else "")
                + "); Metal rejects this launch")
        for what, sizes in (("threads", threads), ("threadgroups", threadgroups)):
            if sizes is not None and 0 in _dims(sizes, what):
                raise LaunchError(f"{what} {tuple(_dims(sizes, what))}: a dispatch with a size of 0 runs no "
                                  "thread at all; every size must be at least 1 (as MLX's metal_kernel "
                                  "requires of its grid)")
        if threads is not None:
            grid = _dims(threads, "threads")
            ntg = [(grid[i] + tptg[i] - 1) // tptg[i] for i in range(3)]
            launch_checks.sizes("threads", ntg, grid, tptg)
            return ntg, grid, tptg, 1
        ntg = _dims(threadgroups, "threadgroups")
        grid = [ntg[i] * tptg[i] for i in range(3)]
        launch_checks.sizes("threadgroups", ntg, grid, tptg)
        return ntg, grid, tptg, 0

    def _threadgroup_memory(self, threadgroup_memory) -> list[int]:
        """Bytes of each [[threadgroup(n)]] buffer (setThreadgroupMemoryLength)."""
        tgm = [0] * abi()["MSLEMU_MAX_BUFFERS"]
        for p, inf in zip(self._params, self._info):
            if p["kind"] == abi()["P_TGMEM"] and inf.gate:
                n = (threadgroup_memory or {}).get(p["index"])
                # None: never set. An explicit 0 is a host's setThreadgroupMemoryLength(0) for a
                # parameter the kernel declares and does not use (llama.cpp's q4_0 mul_mv): allowed,
                # and any access to it is outside its 0 bytes.
                if n is None:
                    raise LaunchError(f"threadgroup parameter '{p['name']}' [[threadgroup({p['index']})]] has no memory: "
                                      f"pass threadgroup_memory={{{p['index']}: nbytes}} (setThreadgroupMemoryLength)")
                tgm[p["index"]] = _count(n, f"threadgroup_memory[{p['index']}]")
        return tgm

    def _report(self, report: dict, oob_reads: str, strict: bool = False) -> None:
        """Warnings for what the specification does not promise (in strict mode the first one
        is a PortabilityError); the error, if the run failed."""
        ok = report["status"] == 0
        prefix = f"kernel '{self.name}': "
        notes = [(prefix, w) for w in filter(None, report["warn_msg"].split(RECORD_SEPARATOR))]
        if report["uninit_msg"] and ok:
            notes.append((prefix, report["uninit_msg"]))
        if report["oob_msg"] and ok:
            notes.append((prefix + "read outside a buffer (the reads returned 0): out-of-bounds read of ",
                          report["oob_msg"]))
        if notes and ok and strict:
            text, facts = self._decode(notes[0][1])
            raise with_facts(PortabilityError(f"{notes[0][0]}(strict mode) {text}"), facts, self._symbolizer)
        for note_prefix, raw in notes:
            self._warn(note_prefix, raw)
        if not ok:
            text, facts = self._decode(report["msg"])
            cls = {abi()[k]: c for k, c in _ERROR_CLASSES.items()}.get(report["status"], EmulatorError)
            text = text or "kernel failed"
            unbound = "unbound" in facts or "left that buffer unbound" in text
            fixed_size = facts.get("kind") == "fixed-size-array"  # a bounds trap: oob_reads does not apply
            if cls is OutOfBoundsError and oob_reads == "error" and facts.get("access") != "write" and not unbound \
                    and not fixed_size:
                text += ("\n(if the kernel only reads out of bounds and discards the values, "
                         "oob_reads='warn' lets such reads return 0)")
            raise with_facts(cls(prefix + text), facts, self._symbolizer)

    def _decode(self, raw: bytes) -> tuple[str, dict]:
        text, _, facts = raw.decode(errors="replace").partition(FACTS_SEPARATOR)
        return self._symbolizer(text), parse_facts(facts)

    def _warn(self, prefix: str, raw: bytes) -> None:
        text, facts = self._decode(raw)
        warning = with_facts(PortabilityWarning(prefix + text), facts, self._symbolizer)
        _warnings_record.record(warning, os.environ.get("PYTEST_CURRENT_TEST", ""))  # a coverage run's list
        warnings.warn(warning, stacklevel=4)


def _strict(strict) -> bool:
    """strict=, else $GEMMGLOSSARY_EMULATOR_STRICT."""
    return _flag(strict, "GEMMGLOSSARY_EMULATOR_STRICT")


def _flag(value, variable: str) -> bool:
    """A launch's True/False option, else (None) the settings variable `variable`."""
    if value is None:
        return settings.value(variable)
    return bool(value)


class _LaunchRegion:
    """The launch struct, one result per worker, the buffer names and the device memories
    (one per memory the arguments share: device_memory.py), in one region shared with the
    worker processes. Outputs are copied back only after a successful launch (no
    half-written outputs)."""

    def __init__(self, blobs: list[Blob], workers: int, extra: int = 0):
        a = abi()
        self.blobs = blobs
        self.workers = workers
        launch_t, result_t = a.structs["MslemuLaunch"], a.structs["MslemuResult"]
        off = _align(ctypes.sizeof(launch_t))
        self.results_at = off
        off = _align(off + workers * ctypes.sizeof(result_t))
        self.names_at = []
        for b in blobs:
            self.names_at.append(off)
            off += len(b.name.encode()) + 1
        self.memories = list({id(b.memory): b.memory for b in blobs if b.memory is not None}.values())
        self.memories_at = []
        for m in self.memories:
            off = _align(off)
            self.memories_at.append(off)
            off += len(m.data) + 64
        self.extra_at = _align(off)  # `extra` bytes for the trace, if one was asked for
        self.shm = _workers.Region(_align(self.extra_at + extra))

    def results(self) -> list:
        result_t = abi().structs["MslemuResult"]
        return [result_t.from_buffer(self.shm.mm, self.results_at + i * ctypes.sizeof(result_t))
                for i in range(self.workers)]

    def fill(self, entry, kernel_id: str, ntg, grid, tptg, dispatch_threads, tgm, options: dict):
        a = abi()
        mm, base = self.shm.mm, self.shm.base
        launch = a.structs["MslemuLaunch"].from_buffer(mm, 0)
        for m, at in zip(self.memories, self.memories_at):
            mm[at:at + len(m.data)] = m.data
        memory_at = {id(m): at for m, at in zip(self.memories, self.memories_at)}
        for b, name_at in zip(self.blobs, self.names_at):
            nm = b.name.encode() + b"\0"
            mm[name_at:name_at + len(nm)] = nm
            launch.buf_name[b.index] = ctypes.cast(base + name_at, ctypes.c_char_p)
            if b.memory is None:  # unbound: a name for the report, no memory
                continue
            launch.buf[b.index] = base + memory_at[id(b.memory)] + b.offset
            launch.buf_size[b.index] = b.size
        for i in range(3):
            launch.ntg[i], launch.grid[i], launch.tptg[i] = ntg[i], grid[i], tptg[i]
        launch.dispatch_threads = dispatch_threads
        for i, n in enumerate(tgm):
            launch.tgm_size[i] = n
        for k, v in options.items():
            setattr(launch, k, v)
        launch.parent_pid = os.getpid()
        launch.entry = entry
        launch.entry_symbol = f"__mslemu_entry_{kernel_id}".encode()
        result_t = a.structs["MslemuResult"]
        for i, res in enumerate(self.results()):
            res.status, res.err_tg = -1, -1
            launch.results[i] = ctypes.cast(base + self.results_at + i * ctypes.sizeof(result_t), ctypes.POINTER(result_t))
        launch.region_base = base
        launch.region_size = self.shm.size
        return launch

    def write_back(self, kernel: str) -> None:
        """Every memory checked (a read-only array the kernel wrote is refused) before any is written."""
        results = [(m, self.shm.mm[at:at + len(m.data)]) for m, at in zip(self.memories, self.memories_at)]
        for m, new in results:
            m.check(new, kernel)
        for m, new in results:
            m.write_back(new)

    def close(self) -> None:
        self.shm.close()


def _align(n: int, to: int = 64) -> int:
    return (n + to - 1) // to * to


def _options(schedule, timeout, race_check, oob_reads, workers, ntg) -> dict:
    """The MslemuLaunch fields of the launch's keyword options."""
    if isinstance(schedule, str) and schedule in _SCHEDULES:
        sched, seed = abi()[_SCHEDULES[schedule]], 0
    elif isinstance(schedule, (tuple, list)) and len(schedule) == 2 and schedule[0] == "random":
        sched, seed = abi()["SCHED_RANDOM"], _count(schedule[1], "the random schedule's seed")
    else:
        raise LaunchError(f"unknown schedule {schedule!r}: use 'lockstep', 'simdgroup-major' or ('random', seed)")
    if oob_reads not in ("error", "warn"):
        raise LaunchError(f"oob_reads must be 'error' or 'warn', not {oob_reads!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
        raise LaunchError(f"timeout must be a number of seconds >= 0 or None, not {timeout!r}")
    total = ntg[0] * ntg[1] * ntg[2]
    return {
        "schedule": sched, "seed": seed, "timeout": float(timeout or 0), "race_check": 1 if race_check else 0,
        "oob_reads": 1 if oob_reads == "warn" else 0,
        # no more workers than threadgroups, at most MSLEMU_MAX_WORKERS
        "workers": max(1, min(_worker_count(workers), abi()["MSLEMU_MAX_WORKERS"], total)),
    }


def _worker_count(w) -> int:
    if w is None:
        env = settings.value("GEMMGLOSSARY_EMULATOR_WORKERS")
        if env is not None:
            return env
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # no sched_getaffinity on macOS
            n = os.cpu_count() or 1
        return max(1, min(2, n))
    return max(1, _count(w, "workers"))


def _count(v, what: str) -> int:
    """A non-negative integer; floats (16.5, and 16.0 too) are refused rather than truncated."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise LaunchError(f"{what} must be an integer, got {v!r} ({type(v).__name__})")
    if v < 0:
        raise LaunchError(f"{what} must not be negative, got {v}")
    return int(v)


def _dims(v, what: str) -> list[int]:
    """1 to 3 non-negative integers, padded with 1s to 3."""
    if isinstance(v, (int, np.integer, float, np.floating)):
        v = (v,)
    try:
        v = list(v)
    except TypeError:
        raise LaunchError(f"{what} must be 1 to 3 non-negative integers, got {v!r}") from None
    if not 1 <= len(v) <= 3:
        raise LaunchError(f"{what} must be 1 to 3 non-negative integers, got {v}")
    out = []
    for x in v:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 0:
            raise LaunchError(f"{what} must be 1 to 3 non-negative integers, got {tuple(v)}"
                              + (f" ({x!r} is a {type(x).__name__}: use // for sizes)" if isinstance(x, float) else ""))
        out.append(int(x))
    return out + [1] * (3 - len(out))
