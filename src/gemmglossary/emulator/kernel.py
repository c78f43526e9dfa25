"""Loading kernels and launching them on the emulator."""

from __future__ import annotations

import ctypes
import mmap
import os
import warnings
from pathlib import Path

import numpy as np

from . import build as _build
from .abi import abi
from .binding import Blob, bind_buffers
from .errors import (BarrierError, CompileError, DataRaceError, EmulatorError, KernelCrash, KernelTimeoutError,
                     LaunchError, OutOfBoundsError, PortabilityWarning, SimdgroupDivergenceError)
from .symbolize import Symbolizer

MAX_THREADS = 1024  # Apple GPUs' maxTotalThreadsPerThreadgroup

# the exception of each ErrKind of mslemu_abi.h
_ERROR_CLASSES = {"E_GENERIC": EmulatorError, "E_OOB": OutOfBoundsError, "E_RACE": DataRaceError,
                  "E_BARRIER": BarrierError, "E_DIVERGE": SimdgroupDivergenceError, "E_TIMEOUT": KernelTimeoutError,
                  "E_CRASH": KernelCrash, "E_LAUNCH": LaunchError}
_SCHEDULES = {"lockstep": "SCHED_LOCKSTEP", "simdgroup-major": "SCHED_SIMDGROUP_MAJOR"}

_libs: dict[str, ctypes.CDLL] = {}


def _lib(so: Path) -> ctypes.CDLL:
    """The loaded shared object, its interface checked against mslemu_abi.h on first load."""
    key = str(so)
    if key not in _libs:
        lib = ctypes.CDLL(key, mode=ctypes.RTLD_LOCAL)
        abi().check_layout(lib, key)
        lib.mslemu_run.argtypes = [ctypes.POINTER(abi().structs["MslemuLaunch"])]
        lib.mslemu_run.restype = ctypes.c_int
        _libs[key] = lib
    return _libs[key]


def _is_path(s) -> bool:
    """A Path, or a str without a newline, names a file; source text has at least one newline."""
    return isinstance(s, os.PathLike) or "\n" not in s


def load_kernel(path_or_source, name: str, *, defines=None, function_constants=None, include_dirs=None):
    """Compile (or fetch from the cache) kernel ``name`` of a .metal file or source string.

    ``path_or_source`` is a file when it is a ``Path`` or a ``str`` without a newline (any
    extension: ``.metal``, ``.h``...), and Metal source when it is a ``str`` with one."""
    if not isinstance(path_or_source, (str, os.PathLike)):
        raise TypeError(f"load_kernel takes a path or Metal source text, not {type(path_or_source).__name__}")
    if _is_path(path_or_source):
        path = Path(path_or_source).resolve()
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "no such file"
            hint = "" if isinstance(path_or_source, os.PathLike) else (
                " (a str without a newline is read as a file name; Metal source text has at least one newline)")
            raise CompileError(f"{path}: {what}{hint}")
        source = path.read_text()
        filename = str(path)
        dirs = [str(path.parent)]
    else:
        source = str(path_or_source)
        filename = "<source>"
        dirs = []
    dirs += [str(Path(d).resolve()) for d in (include_dirs or [])]
    so, manifest, hit = _build.build(source, filename, include_dirs=dirs, defines=defines,
                                     function_constants=function_constants, kernel=name)
    declared = manifest.get("function_constants", {})
    indices = {v[0] for v in declared.values()}
    for key in function_constants or {}:
        if (isinstance(key, str) and key not in declared) or (not isinstance(key, str) and int(key) not in indices):
            warnings.warn(f"{filename}: function constant {key!r} is not declared in this source; its value is ignored",
                          stacklevel=2)
    if name not in manifest["kernels"]:
        known = ", ".join(sorted(manifest.get("all_kernels") or manifest["kernels"])) or "none"
        raise CompileError(f"{filename}: no kernel named '{name}' (kernels found: {known})")
    return Kernel(so, manifest["kernels"][name], name, filename, hit)


class Kernel:
    """A compiled kernel; call it to launch."""

    def __init__(self, so: Path, meta: dict, name: str, filename: str, cache_hit: bool):
        self.so = so
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
        self._run = lib.mslemu_run
        self._params = meta["params"]
        self._symbolizer = Symbolizer(so)

    @property
    def parameters(self):
        kinds = {abi()["P_BUFFER"]: "buffer", abi()["P_TGMEM"]: "threadgroup"}
        return [(p["name"], kinds.get(p["kind"], p["attr"]), p["index"] if p["kind"] in kinds else None, p["type"])
                for p in self._params]

    def _buffer_params(self):
        return [(p, inf) for p, inf in zip(self._params, self._info) if p["kind"] == abi()["P_BUFFER"] and inf.gate]

    def __repr__(self) -> str:
        return f"<emulated Metal kernel {self.name!r} from {self.filename}>"

    # ------------------------------------------------------------------ launch
    def __call__(self, *buffers, threads=None, threadgroups=None, threads_per_threadgroup=None,
                 threadgroup_memory=None, schedule="lockstep", timeout=60.0, race_check=True,
                 oob_reads="error", workers=None):
        """Launch the kernel.

        oob_reads: "error" (default) stops at the first access outside a buffer; "warn"
        lets out-of-bounds *reads* return zeros with a PortabilityWarning (some vendored
        kernels read past the edge and discard the values) while any out-of-bounds write
        is still an OutOfBoundsError.

        workers: how many processes share the threadgroups (default: $GEMMGLOSSARY_EMULATOR_WORKERS,
        else up to 2 CPUs). Results and diagnostics do not depend on it: each threadgroup
        runs whole in one process, and the error of the lowest-numbered threadgroup is reported.
        """
        ntg, grid, tptg, dispatch_threads = self._geometry(threads, threadgroups, threads_per_threadgroup)
        if 0 in grid:
            return
        blobs = bind_buffers(self.name, self._buffer_params(), buffers)
        tgm = self._threadgroup_memory(threadgroup_memory)
        options = _options(schedule, timeout, race_check, oob_reads, workers)
        with _SharedBuffers(blobs) as shared:
            launch, res = shared.launch_struct(self._entry, ntg, grid, tptg, dispatch_threads, tgm, options)
            status = self._run(ctypes.byref(launch))
            self._report(status, res, oob_reads)
            shared.write_back(self.name)

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
        if threads is not None:
            grid = _dims(threads, "threads")
            return [(grid[i] + tptg[i] - 1) // tptg[i] for i in range(3)], grid, tptg, 1
        ntg = _dims(threadgroups, "threadgroups")
        return ntg, [ntg[i] * tptg[i] for i in range(3)], tptg, 0

    def _threadgroup_memory(self, threadgroup_memory) -> list[int]:
        """Bytes of each [[threadgroup(n)]] buffer (setThreadgroupMemoryLength)."""
        tgm = [0] * abi()["MSLEMU_MAX_BUFFERS"]
        for p, inf in zip(self._params, self._info):
            if p["kind"] == abi()["P_TGMEM"] and inf.gate:
                n = (threadgroup_memory or {}).get(p["index"], 0)
                if not n:
                    raise LaunchError(f"threadgroup parameter '{p['name']}' [[threadgroup({p['index']})]] has no memory: "
                                      f"pass threadgroup_memory={{{p['index']}: nbytes}} (setThreadgroupMemoryLength)")
                tgm[p["index"]] = _count(n, f"threadgroup_memory[{p['index']}]")
        return tgm

    def _report(self, status: int, res, oob_reads: str) -> None:
        """Warnings for what the specification does not promise; the error, if the run failed."""
        ok = status == 0 and res.status == 0
        if res.warn:
            warnings.warn(PortabilityWarning(f"kernel '{self.name}': {res.warn_msg.decode(errors='replace')}"),
                          stacklevel=3)
        if res.uninit_msg and ok:
            warnings.warn(PortabilityWarning(
                f"kernel '{self.name}': " + self._symbolizer(res.uninit_msg.decode(errors="replace"))), stacklevel=3)
        if res.oob_msg and ok:
            warnings.warn(PortabilityWarning(
                f"kernel '{self.name}' read outside a buffer (the reads returned 0): "
                + self._symbolizer(res.oob_msg.decode(errors="replace"))), stacklevel=3)
        if not ok:
            msg = self._symbolizer(res.msg.decode(errors="replace")) or "kernel failed"
            kinds = {abi()[k]: cls for k, cls in _ERROR_CLASSES.items()}
            cls = kinds.get(res.status, EmulatorError)
            if cls is OutOfBoundsError and oob_reads == "error":
                msg += ("\n(if the kernel only reads out of bounds and discards the values, "
                        "oob_reads='warn' lets such reads return 0)")
            raise cls(f"kernel '{self.name}': {msg}")


class _SharedBuffers:
    """The bound buffers copied into memory the worker processes share, with the result
    struct; the launch struct points into it. Outputs are copied back only after a
    successful launch (no half-written outputs)."""

    def __init__(self, blobs: list[Blob]):
        self.blobs = blobs
        self.offsets = []
        size = 0
        for b in blobs:
            self.offsets.append(size)
            size += (len(b.data) + 63) // 64 * 64 + 64
        self.shm = mmap.mmap(-1, max(size, 64))
        self.res_mem = mmap.mmap(-1, ctypes.sizeof(abi().structs["MslemuResult"]))
        self.anchor = ctypes.c_char.from_buffer(self.shm)
        self.base = ctypes.addressof(self.anchor)
        self.names: list[bytes] = []  # the launch struct points at them: they live as long as it
        self.launch = self.res = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # the mmaps go away with their last exported pointer
        self.launch = self.res = self.anchor = None

    def launch_struct(self, entry, ntg, grid, tptg, dispatch_threads, tgm, options: dict):
        launch = abi().structs["MslemuLaunch"]()
        for b, off in zip(self.blobs, self.offsets):
            self.shm[off:off + len(b.data)] = b.data
            launch.buf[b.index] = self.base + off
            launch.buf_size[b.index] = len(b.data)
            nm = b.name.encode()
            self.names.append(nm)
            launch.buf_name[b.index] = nm
        for i in range(3):
            launch.ntg[i], launch.grid[i], launch.tptg[i] = ntg[i], grid[i], tptg[i]
        launch.dispatch_threads = dispatch_threads
        for i, n in enumerate(tgm):
            launch.tgm_size[i] = n
        for k, v in options.items():
            setattr(launch, k, v)
        launch.entry = entry
        res = abi().structs["MslemuResult"].from_buffer(self.res_mem)
        res.status = -1
        launch.result = ctypes.pointer(res)
        self.launch, self.res = launch, res
        return launch, res

    def write_back(self, kernel: str) -> None:
        for b, off in zip(self.blobs, self.offsets):
            if b.array is None:
                continue
            new = self.shm[off:off + len(b.data)]
            if new != b.data:
                if not b.array.flags.writeable:
                    raise LaunchError(f"kernel '{kernel}' wrote to buffer '{b.name}', but the array is read-only")
                b.array[...] = np.frombuffer(new, dtype=b.array.dtype).reshape(b.array.shape)


def _options(schedule, timeout, race_check, oob_reads, workers) -> dict:
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
    return {
        "schedule": sched, "seed": seed, "timeout": float(timeout or 0), "race_check": 1 if race_check else 0,
        # GEMMGLOSSARY_EMULATOR_INPROCESS=1 runs the kernel inside this process, for debugging
        # the emulator itself under gdb: any diagnostic or crash then ends the process.
        "isolate": 0 if os.environ.get("GEMMGLOSSARY_EMULATOR_INPROCESS") == "1" else 1,
        "oob_reads": 1 if oob_reads == "warn" else 0, "workers": _workers(workers),
    }


def _workers(w) -> int:
    if w is None:
        env = os.environ.get("GEMMGLOSSARY_EMULATOR_WORKERS")
        if env:
            return max(1, int(env))
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
