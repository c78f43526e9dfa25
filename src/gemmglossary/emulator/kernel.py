"""Loading kernels and launching them on the emulator."""

from __future__ import annotations

import ctypes
import mmap
import os
import re
import subprocess
import warnings
from pathlib import Path

import numpy as np

from . import build as _build
from .errors import (BarrierError, CompileError, DataRaceError, EmulatorError, KernelCrash, KernelTimeoutError,
                     LaunchError, OutOfBoundsError, PortabilityWarning, SimdgroupDivergenceError)

MAX_THREADS = 1024


class MslemuResult(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int32), ("warn", ctypes.c_int32), ("sig", ctypes.c_int32),
                ("pad", ctypes.c_int32), ("msg", ctypes.c_char * 16384), ("warn_msg", ctypes.c_char * 2048),
                ("oob_msg", ctypes.c_char * 4096), ("err_tg", ctypes.c_int64),
                ("uninit_msg", ctypes.c_char * 2048)]


class MslemuLaunch(ctypes.Structure):
    _fields_ = [
        ("ntg", ctypes.c_uint32 * 3), ("grid", ctypes.c_uint32 * 3), ("tptg", ctypes.c_uint32 * 3),
        ("dispatch_threads", ctypes.c_int32), ("schedule", ctypes.c_int32), ("seed", ctypes.c_uint64),
        ("timeout", ctypes.c_double), ("race_check", ctypes.c_int32), ("isolate", ctypes.c_int32),
        ("buf", ctypes.c_void_p * 32), ("buf_size", ctypes.c_uint64 * 32), ("buf_name", ctypes.c_char_p * 32),
        ("tgm_size", ctypes.c_uint64 * 32), ("entry", ctypes.c_void_p), ("result", ctypes.POINTER(MslemuResult)),
        ("oob_reads", ctypes.c_int32), ("workers", ctypes.c_int32),
    ]


class ParamInfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("kind", "index", "gate", "elem_size", "elem_kind", "is_ref", "is_ptr", "as_")]


ERRORS = {10: EmulatorError, 11: OutOfBoundsError, 12: DataRaceError, 13: BarrierError, 14: SimdgroupDivergenceError,
          15: KernelTimeoutError, 16: KernelCrash, 17: LaunchError}
_libs: dict[str, ctypes.CDLL] = {}


def _lib(so: Path) -> ctypes.CDLL:
    key = str(so)
    if key not in _libs:
        _libs[key] = ctypes.CDLL(key, mode=ctypes.RTLD_LOCAL)
    return _libs[key]


def _is_path(s) -> bool:
    if isinstance(s, Path):
        return True
    return "\n" not in s and (s.endswith(".metal") or s.endswith(".h"))


def load_kernel(path_or_source, name: str, *, defines=None, function_constants=None, include_dirs=None):
    """Compile (or fetch from the cache) kernel ``name`` of a .metal file or source string."""
    if _is_path(path_or_source):
        path = Path(path_or_source).resolve()
        if not path.exists():
            raise CompileError(f"{path}: no such file")
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
        info = getattr(lib, f"__mslemu_info_{kid}")
        arr = (ParamInfo * 64)()
        n = info(arr)
        self._info = [arr[i] for i in range(n)]
        mtt = getattr(lib, f"__mslemu_mtt_{kid}")()
        self.max_total_threads_per_threadgroup = int(mtt) if mtt > 0 else MAX_THREADS
        self._run = lib.mslemu_run
        self._run.argtypes = [ctypes.POINTER(MslemuLaunch)]
        self._run.restype = ctypes.c_int
        self._params = meta["params"]

    @property
    def parameters(self):
        kinds = {1: "buffer", 2: "threadgroup"}
        return [(p["name"], kinds.get(p["kind"], p["attr"]), p["index"] if p["kind"] in (1, 2) else None, p["type"])
                for p in self._params]

    def _buffer_params(self):
        return [(p, inf) for p, inf in zip(self._params, self._info) if p["kind"] == 1 and inf.gate]

    def __repr__(self) -> str:
        return f"<emulated Metal kernel {self.name!r} from {self.filename}>"

    # ------------------------------------------------------------------ launch
    def __call__(self, *buffers, threads=None, threadgroups=None, threads_per_threadgroup=None,
                 threadgroup_memory=None, schedule="lockstep", timeout=60.0, race_check=True,
                 oob_reads="error", workers=None):
        """Launch the kernel.

        A buffer parameter may be left unbound (an index missing from the dict, or None), as
        MLX's host code leaves buffers a kernel does not read; accessing one is an
        OutOfBoundsError that names the parameter.

        oob_reads: "error" (default) stops at the first access outside a buffer; "warn"
        lets out-of-bounds *reads* return zeros with a PortabilityWarning (some vendored
        kernels read past the edge and discard the values) while any out-of-bounds write
        is still an OutOfBoundsError.

        workers: how many processes share the threadgroups (default: $GEMMGLOSSARY_EMULATOR_WORKERS,
        else up to 2 CPUs). Results and diagnostics do not depend on it: each threadgroup
        runs whole in one process, and the error of the lowest-numbered threadgroup is reported.
        """
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
            ntg = [(grid[i] + tptg[i] - 1) // tptg[i] for i in range(3)]
            dispatch_threads = 1
        else:
            ntg = _dims(threadgroups, "threadgroups")
            grid = [ntg[i] * tptg[i] for i in range(3)]
            dispatch_threads = 0
        if 0 in grid:
            return
        # ---- buffers
        bparams = self._buffer_params()
        if len(buffers) == 1 and isinstance(buffers[0], dict):
            by_index = dict(buffers[0])
        else:
            if len(buffers) != len(bparams):
                names = ", ".join(f"{p['name']} [[buffer({p['index']})]]" for p, _ in bparams)
                raise LaunchError(f"kernel '{self.name}' takes {len(bparams)} buffers ({names}), got {len(buffers)}")
            by_index = {p["index"]: b for (p, _), b in zip(bparams, buffers)}
        blobs = []  # (index, name, bytes, user array or None)
        unbound = []  # (index, name): buffers left unbound, as MLX's host code leaves some
        for p, inf in bparams:
            if by_index.get(p["index"]) is None:
                unbound.append((p["index"], p["name"]))
                continue
            blobs.append((p["index"], p["name"], *_to_bytes(by_index[p["index"]], p, inf)))
        tgm = [0] * 32
        for p, inf in zip(self._params, self._info):
            if p["kind"] == 2 and inf.gate:
                n = (threadgroup_memory or {}).get(p["index"], 0)
                if not n:
                    raise LaunchError(f"threadgroup parameter '{p['name']}' [[threadgroup({p['index']})]] has no memory: "
                                      f"pass threadgroup_memory={{{p['index']}: nbytes}} (setThreadgroupMemoryLength)")
                tgm[p["index"]] = int(n)
        # ---- shared memory for buffers + result
        offs = []
        size = 0
        for b in blobs:
            offs.append(size)
            size += (len(b[2]) + 63) // 64 * 64 + 64
        shm = mmap.mmap(-1, max(size, 64))
        res_mem = mmap.mmap(-1, ctypes.sizeof(MslemuResult))
        anchor = ctypes.c_char.from_buffer(shm)
        base = ctypes.addressof(anchor)
        L = MslemuLaunch()
        names = []
        for (idx, name, data, _arr), off in zip(blobs, offs):
            shm[off:off + len(data)] = data
            L.buf[idx] = base + off
            L.buf_size[idx] = len(data)
            nm = name.encode()
            names.append(nm)
            L.buf_name[idx] = nm
        for idx, name in unbound:  # no memory: an access is an error that names the parameter
            nm = name.encode()
            names.append(nm)
            L.buf_name[idx] = nm
        for i in range(3):
            L.ntg[i], L.grid[i], L.tptg[i] = ntg[i], grid[i], tptg[i]
        L.dispatch_threads = dispatch_threads
        if schedule == "lockstep":
            L.schedule = 0
        elif schedule == "simdgroup-major":
            L.schedule = 1
        elif isinstance(schedule, (tuple, list)) and len(schedule) == 2 and schedule[0] == "random":
            L.schedule, L.seed = 2, int(schedule[1])
        else:
            raise LaunchError(f"unknown schedule {schedule!r}: use 'lockstep', 'simdgroup-major' or ('random', seed)")
        L.timeout = float(timeout or 0)
        L.race_check = 1 if race_check else 0
        # GEMMGLOSSARY_EMULATOR_INPROCESS=1 runs the kernel inside this process, for debugging
        # the emulator itself under gdb: any diagnostic or crash then ends the process.
        L.isolate = 0 if os.environ.get("GEMMGLOSSARY_EMULATOR_INPROCESS") == "1" else 1
        for i in range(32):
            L.tgm_size[i] = tgm[i]
        if oob_reads not in ("error", "warn"):
            raise LaunchError(f"oob_reads must be 'error' or 'warn', not {oob_reads!r}")
        L.oob_reads = 1 if oob_reads == "warn" else 0
        L.workers = _workers(workers)
        L.entry = self._entry
        res = MslemuResult.from_buffer(res_mem)
        res.status = -1
        L.result = ctypes.pointer(res)
        try:
            status = self._run(ctypes.byref(L))
            if res.warn:
                warnings.warn(PortabilityWarning(f"kernel '{self.name}': {res.warn_msg.decode(errors='replace')}"),
                              stacklevel=2)
            if res.uninit_msg and status == 0 and res.status == 0:
                warnings.warn(PortabilityWarning(
                    f"kernel '{self.name}': " + self._symbolize(res.uninit_msg.decode(errors="replace"))), stacklevel=2)
            if res.oob_msg and status == 0 and res.status == 0:
                warnings.warn(PortabilityWarning(
                    f"kernel '{self.name}' read outside a buffer (the reads returned 0): "
                    + self._symbolize(res.oob_msg.decode(errors="replace"))), stacklevel=2)
            if status != 0 or res.status != 0:
                msg = self._symbolize(res.msg.decode(errors="replace")) or "kernel failed"
                cls = ERRORS.get(res.status, EmulatorError)
                if cls is OutOfBoundsError and oob_reads == "error" and "left that buffer unbound" not in msg:
                    msg += ("\n(if the kernel only reads out of bounds and discards the values, "
                            "oob_reads='warn' lets such reads return 0)")
                raise cls(f"kernel '{self.name}': {msg}")
            # success: hand the outputs back
            for (idx, name, data, arr), off in zip(blobs, offs):
                if arr is None:
                    continue
                new = shm[off:off + len(data)]
                if new != data:
                    if not arr.flags.writeable:
                        raise LaunchError(f"kernel '{self.name}' wrote to buffer '{name}', but the array is read-only")
                    arr[...] = np.frombuffer(new, dtype=arr.dtype).reshape(arr.shape)
        finally:
            del L, res, anchor  # the mmaps go away with their last exported pointer

    def _symbolize(self, msg: str) -> str:
        pcs = re.findall(r"\{\{pc:([0-9a-f]+)\}\}", msg)
        if not pcs:
            return msg
        locs = {}
        try:
            out = subprocess.run(["addr2line", "-e", str(self.so), "-i", "-a", *[f"0x{p}" for p in pcs]],
                                 capture_output=True, text=True, timeout=60).stdout
            cur = None
            for ln in out.splitlines():
                if ln.startswith("0x"):
                    cur = f"{int(ln, 16):x}"
                    locs.setdefault(cur, [])
                elif cur is not None:
                    locs[cur].append(ln.split(" (discriminator")[0].strip())
        except (OSError, subprocess.SubprocessError):
            pass

        def best(pc: str) -> str:
            frames = locs.get(pc, [])
            for f in frames:
                if "??" in f or str(_build.SHIM_DIR) in f or "kernel.cpp:" in f or "runtime.cpp:" in f:
                    continue
                return f
            return "an unknown location (no line information)"

        return re.sub(r"\{\{pc:([0-9a-f]+)\}\}", lambda m: best(m.group(1)), msg)


def _workers(w) -> int:
    if w is None:
        env = os.environ.get("GEMMGLOSSARY_EMULATOR_WORKERS")
        if env:
            return max(1, int(env))
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # pragma: no cover
            n = os.cpu_count() or 1
        return max(1, min(2, n))
    return max(1, int(w))


def _dims(v, what: str) -> list[int]:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    v = [int(x) for x in v]
    if not 1 <= len(v) <= 3 or any(x < 0 for x in v):
        raise LaunchError(f"{what} must be 1 to 3 non-negative integers, got {v}")
    return v + [1] * (3 - len(v))


_KIND_DTYPES = {(1, 1): np.int8, (1, 2): np.int16, (1, 4): np.int32, (1, 8): np.int64,
                (2, 1): np.uint8, (2, 2): np.uint16, (2, 4): np.uint32, (2, 8): np.uint64,
                (3, 2): np.float16, (3, 4): np.float32, (3, 8): np.float64, (4, 1): np.bool_}


def _to_bytes(obj, p: dict, inf: ParamInfo):
    """(bytes, array to write back or None)."""
    if isinstance(obj, np.ndarray):
        arr = obj
        return np.ascontiguousarray(arr).tobytes(), arr
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj), None
    if isinstance(obj, np.void):
        return obj.tobytes(), None
    if isinstance(obj, (bool, int, float, np.generic)):
        dt = _KIND_DTYPES.get((inf.elem_kind, inf.elem_size))
        if dt is None:
            raise LaunchError(f"cannot pass the scalar {obj!r} to parameter '{p['name']}' ({p['type']}); "
                              f"pass a numpy array or bytes")
        return np.array(obj).astype(dt).tobytes(), None
    if isinstance(obj, (list, tuple)):
        dt = _KIND_DTYPES.get((inf.elem_kind, inf.elem_size))
        if dt is None:
            raise LaunchError(f"cannot convert {type(obj).__name__} for parameter '{p['name']}'")
        return np.asarray(obj, dtype=dt).tobytes(), None
    raise LaunchError(f"cannot bind {type(obj).__name__} to parameter '{p['name']}' ({p['type']})")
