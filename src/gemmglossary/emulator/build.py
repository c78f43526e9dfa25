"""Preprocess, rewrite and compile Metal sources into cached shared objects."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from ..coverage import mode as _coverage
from .. import settings
from ..file_lock import exclusive
from . import cache as _cache
from . import preprocess_memo, shimgen
from .abi import abi
from .errors import CompileError
from .rewrite import fc_lines, rewrite

EMULATOR_VERSION = "1"
HERE = Path(__file__).resolve().parent
SHIM_DIR = HERE / "shim"
STAGE1_DIR = SHIM_DIR / "stage1"
RUNTIME_SRC = HERE / "cpp" / "runtime.cpp"
CXXFLAGS = ["-std=c++17", "-O2", "-g", "-fPIC", "-w", "-fno-strict-aliasing", "-fwrapv",
            "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti", "-fno-stack-protector", "-fno-math-errno",
            "-fno-plt", "-fstack-clash-protection",
            # C++ lets a compiler delete a loop without side effects as if it ended; a GPU
            # thread spinning in one never ends, so the emulator must time out, not run on
            "-fno-finite-loops"]

# kernels only: an index outside an array of fixed size (a thread's own `float acc[8]`, an
# array member) traps where it happens, and the runtime reports the trap as an
# out-of-bounds access at that line (runtime.cpp: report_crash), where it would otherwise
# corrupt the thread's stack and crash somewhere later, or not at all
KERNEL_CHECK_FLAGS = ["-fsanitize=bounds", "-fsanitize-undefined-trap-on-error"]


def kernel_check_flags(ver: str) -> list[str]:
    # g++ merges identical traps (cross-jumping), and the report would name another check's
    # line; and it turns a path it proves undefined (a division by a compile-time zero) into
    # the same trap as a failed bounds check, which was then reported as one, at no line:
    # without that, the division runs and faults where it is written (SIGFPE)
    gcc = [] if "clang" in ver else ["-fno-crossjumping", "-fno-isolate-erroneous-paths-dereference"]
    return KERNEL_CHECK_FLAGS + gcc

# Device race checking (opt-in, kernel.py's device_races): the compiler's ThreadSanitizer
# instrumentation puts a call before every load, store and atomic operation of the kernel,
# to the interface runtime.cpp implements (its device race check). The sanitizer's own
# runtime is never linked: the object is compiled with these flags and linked without them.
DEVICE_RACE_FLAG = "-fsanitize=thread"


def device_race_flags(ver: str) -> list[str]:
    # function entry and exit are not instrumented: the check needs the accesses only
    if "clang" in ver:
        return [DEVICE_RACE_FLAG, "-mllvm", "-tsan-instrument-func-entry-exit=false"]
    return [DEVICE_RACE_FLAG, "--param=tsan-instrument-func-entry-exit=0"]

# extra flags for the kernel and runtime compiles (part of every cache key), e.g. -march=native
CXXFLAGS += settings.value("GEMMGLOSSARY_EMULATOR_CXXFLAGS").split()



def cxxflags(ver: str) -> list[str]:
    """CXXFLAGS for the compiler whose ``--version`` is ``ver``. g++ gets -g1 for -g: line
    tables with their inline chains, which is all the reports read (addr2line -i), at about
    a third less compile time than full debug info; clang++ keeps -g (its -g1 drops the
    kernel's lines of inlined library code, which the macOS symbolizer needs), with the
    statement frontiers -g gives at -O2 and -g1 does not: without them an empty loop's jump
    (``while (true) {}``) had the line before it, and a timeout named that line."""
    if "clang" in ver:
        return list(CXXFLAGS)
    return [g for f in CXXFLAGS for g in (("-g1", "-gstatement-frontiers") if f == "-g" else (f,))]


#: compiles: objects compiled; shared: entries that took the object another entry compiled
#: from the same translation unit (translation_unit); cache_hits: entries read from the cache
stats = {"compiles": 0, "shared": 0, "cache_hits": 0}


def cache_root() -> Path:
    from ..paths import cache_dir

    d = Path(cache_dir()) / "emulator"
    d.mkdir(parents=True, exist_ok=True)
    return d


@lru_cache(maxsize=1)
def compiler() -> tuple[str, str]:
    """(path, version line) of the C++ compiler: $CXX, else g++, else clang++."""
    env = os.environ.get("CXX")
    candidates = [env] if env else ["g++", "clang++"]
    for c in candidates:
        p = shutil.which(c) if c else None
        if p:
            try:
                v = subprocess.run([p, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
            except (OSError, subprocess.SubprocessError, IndexError):  # not runnable, hangs, or prints nothing
                continue
            return p, v
    if env:
        raise CompileError(f"the C++ compiler named by $CXX ({env!r}) was not found; the Metal emulator needs "
                           "g++ or clang++ (unset CXX to search PATH for them)")
    raise CompileError("no C++ compiler found: the Metal emulator needs g++ or clang++ on PATH "
                       "(or set CXX); neither g++ nor clang++ was found")


def rewriter_sources() -> tuple[Path, ...]:
    """The Python that turns a kernel's source into kernel.cpp: the rewriter, its passes and
    the parts of gemmglossary.msl it reads source with (tests/emulator/test_cache.py checks
    that every module rewrite.py imports from either is here, or reads no kernel source)."""
    msl = HERE.parent / "msl"
    return (HERE / "rewrite.py", HERE / "threadgroup_members.py", HERE / "vector_brace_lists.py",
            HERE / "template_deduction.py", HERE / "range_designators.py", HERE / "conditionals.py",
            HERE / "union_copies.py", HERE / "build.py", HERE / "shimgen.py",
            *(msl / f for f in ("lexer.py", "tokens.py", "signature.py", "macros.py", "expressions.py")))


@lru_cache(maxsize=1)
def shim_hash() -> str:
    h = hashlib.sha256(EMULATOR_VERSION.encode())
    # Where the shim lives: two checkouts (or an install and a checkout) share the per-user
    # cache, and a precompiled shim or runtime carries its own files' paths into every
    # report, so one checkout must never use another's.
    h.update(str(HERE).encode())
    files = list(rewriter_sources())
    for d in (SHIM_DIR, HERE / "cpp"):
        files += sorted(d.rglob("*"))
    for p in files:
        if p.is_file():
            h.update(p.name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def generated_dir() -> Path:
    """Include directory of the shim headers that shimgen writes (once per shim version)."""
    d = cache_root() / f"shim-{shim_hash()}"
    d.mkdir(parents=True, exist_ok=True)
    for name, make in shimgen.GENERATED.items():
        if not (d / name).exists():
            _cache.atomic_write(d / name, make().encode())
    return d


def shim_include_dirs() -> list[Path]:
    """The include directories a kernel translation unit is compiled with (after the folder
    of the precompiled shim: precompiled_shim_flags)."""
    return [generated_dir(), SHIM_DIR]


def precompiled_shim_flags(cxx: str, ver: str, flags: list[str] | None = None) -> list[str]:
    """Flags that let a kernel compile use the shim precompiled (mslemu.h is most of what
    every kernel.cpp parses), building it once per compiler and flags; [] if it cannot be
    built (the compile then parses the header, with the same result).

    Each compiler and set of flags has a folder of its own, put first on the include path:
    g++ takes ``<dir>/mslemu.h.gch`` from the first folder of the path that has one, and of
    several precompiled headers in one ``mslemu.h.gch/`` folder it takes the first it deems
    valid, which can be one built with other flags (with -Og and --coverage, say: g++ then
    dies with an internal compiler error)."""
    clang = "clang" in ver
    flags = cxxflags(ver) if flags is None else flags
    # clang refuses a precompiled header whose headers' modification times changed, even to the
    # same contents (a checkout or rebase rewrites them): its key holds them
    mtimes = "".join(f"{q.name}:{q.stat().st_mtime_ns}" for q in sorted(SHIM_DIR.rglob("*.h"))) if clang else ""
    key = hashlib.sha256((shim_hash() + cxx + ver + " ".join(flags) + mtimes).encode()).hexdigest()[:16]
    folder = generated_dir() / "pch" / key
    out = folder / ("mslemu.pch" if clang else "mslemu.h.gch")
    # verified like a kernel.so (a truncated header failed every later compile); the
    # description is a dot file, so that the folder holds only the header g++ looks for
    desc = folder / f".{out.name}.json"
    if not _cache.read_file_entry(out, desc):
        with exclusive(folder / ".build.lock"):
            if not _cache.read_file_entry(out, desc):
                tmp = out.with_name(f".{out.name}.{os.getpid()}")
                includes = [arg for d in shim_include_dirs() for arg in ("-I", str(d))]
                r = subprocess.run([cxx, *flags, *includes, "-x", "c++-header", str(SHIM_DIR / "mslemu.h"),
                                    "-o", str(tmp)], capture_output=True, text=True)
                if r.returncode:
                    tmp.unlink(missing_ok=True)
                    return []
                _cache.write_file_entry(out, tmp, desc)
    return ["-include-pch", str(out)] if clang else ["-I", str(folder)]


@lru_cache(maxsize=None)
def link_flags(cxx: str, ver: str) -> list[str]:
    """``-fuse-ld=gold`` where the compiler links a shared object with gold, else []. A
    kernel object links with gold in about a third of the default linker's time (steel
    GEMM's: 24 ms instead of 60 ms, on every one of the suite's few hundred compiles); the
    object is the same to everything that reads it (dlopen, the DWARF line tables, gcov's
    notes, which the compiler writes), so the choice is not part of a cache key. Asked once
    per process that compiles (about 50 ms), not remembered across processes: whether gold
    is there is a fact of the installed binutils, which the compiler's version does not
    tell. [] on macOS, or where binutils comes without gold."""
    if not sys.platform.startswith("linux"):
        return []
    with tempfile.TemporaryDirectory(prefix="gemmglossary-gold-") as tmp:
        probe = Path(tmp) / "probe.so"
        try:
            r = subprocess.run([cxx, "-fuse-ld=gold", "-shared", "-fPIC", "-x", "c++", "-", "-o", str(probe)],
                               input="int mslemu_probe() { return 0; }\n", capture_output=True, text=True, timeout=60)
            works = r.returncode == 0 and probe.is_file()
        except (OSError, subprocess.SubprocessError):
            works = False
    return ["-fuse-ld=gold"] if works else []


def runtime_object() -> Path:
    cxx, ver = compiler()
    flags = cxxflags(ver) + _coverage.runtime_flags()
    key = hashlib.sha256((shim_hash() + cxx + ver + " ".join(flags)).encode()).hexdigest()[:16]
    out = cache_root() / f"runtime-{key}.o"
    if _cache.read_file_entry(out):
        return out
    with exclusive(out.with_name(f".{out.name}.lock")):
        if _cache.read_file_entry(out):  # built by another process while this one waited
            return out
        tmp = out.with_name(f".{out.name}.{os.getpid()}")
        r = subprocess.run([cxx, *flags, "-fexceptions", "-I", str(SHIM_DIR), "-c", str(RUNTIME_SRC), "-o", str(tmp)],
                           capture_output=True, text=True)
        if r.returncode:
            raise CompileError("the emulator runtime failed to compile:\n" + r.stderr[-4000:])
        return _cache.write_file_entry(out, tmp)


def preprocessor_command(include_dirs: list[str], defines: dict | None) -> list[str]:
    """The host preprocessor as the emulator runs it (stub <metal_*> headers, Metal's
    predefined macros, -I and -D), without the input; msl.includes asks it too."""
    cxx, _ = compiler()
    args = [cxx, "-E", "-x", "c++", "-std=c++17", "-nostdinc++", "-I", str(STAGE1_DIR),
            "-D__METAL_VERSION__=300", "-D__METAL__=1", "-D__HAVE_SIMDGROUP_MATRIX__=1",
            # Metal's scalar and vector types, address spaces and attributes are the language's,
            # not <metal_stdlib>'s: a kernel that includes no header gets the shim too
            "-include", str(STAGE1_DIR / "_mslemu_macros.h")]
    for d in include_dirs:
        args += ["-I", str(d)]
    for k, v in (defines or {}).items():
        if v is True or v is None:
            args.append(f"-D{k}")
        elif v is False:
            args.append(f"-D{k}=0")
        else:
            args.append(f"-D{k}={v}")
    return args


def preprocess(source: str, filename: str, include_dirs: list[str], defines: dict | None) -> str:
    args = preprocessor_command(include_dirs, defines)
    # a file is read by the preprocessor, so its text is in the memo's state, not its key;
    # relative paths and the compiler's include variables change what an include finds
    key = (tuple(args), filename, source if filename.startswith("<") else None, os.getcwd(),
           *(os.environ.get(v) for v in ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH")))
    out = preprocess_memo.lookup(key)
    if out is None:
        out = _run_preprocessor(args, source, filename)
        preprocess_memo.remember(key, [str(STAGE1_DIR), *map(str, include_dirs)], out, "\0".join([*args, source]))
    return out


def _run_preprocessor(args: list[str], source: str, filename: str) -> str:
    if filename.startswith("<"):
        r = subprocess.run([*args, "-"], input=source, capture_output=True, text=True)
    else:
        r = subprocess.run([*args, filename], capture_output=True, text=True)
    if r.returncode:
        raise CompileError(_clean_errors(r.stderr.replace("<stdin>", filename)))
    out = r.stdout
    if filename.startswith("<"):
        out = out.replace('"<stdin>"', json.dumps(filename))
    return out


def _is_shim(path: str) -> bool:
    return str(SHIM_DIR) in path or path.endswith("kernel.cpp") or "<built-in>" in path


_AS_NAMES = {str(abi()[f"AS_{n.upper()}"]): n for n in ("device", "constant", "threadgroup")}  # mslemu_abi.h


def _pretty(ln: str) -> str:
    """Show the shim's types the way the kernel wrote them."""
    ln = re.sub(r"(?:mslemu::)?ptr<([123]), ((?:[^<>]|<[^<>]*>)+)>",
                lambda m: f"{_AS_NAMES[m.group(1)]} {m.group(2).strip()}*", ln)
    ln = re.sub(r"(?:metal::)?vec<(float|int|unsigned int|short|unsigned short|char|unsigned char|long|unsigned long|"
                r"_Float16|bool), ([234])>",
                lambda m: {"unsigned int": "uint", "unsigned short": "ushort", "unsigned char": "uchar",
                           "unsigned long": "ulong", "_Float16": "half"}.get(m.group(1), m.group(1)) + m.group(2), ln)
    # the call the rewriter gives an __asm("air.*") declaration (rewrite.py: pass_asm_intrinsics)
    ln = re.sub(r"call to \S*__mslemu_air_\w+(?:\(\))?\S* declared with (?:attribute error|'error' attribute): ", "", ln)
    return ln.replace("_Float16", "half")


def _clean_errors(text: str) -> str:
    """Keep the compiler's diagnostics that point at user files; drop shim internals."""
    lines = text.splitlines()
    keep: list[str] = []
    first = None
    loc = re.compile(r"^(.*?):(\d+):(\d+:)?\s*(error|warning|note|fatal error)?:?\s*(.*)$")
    for ln in lines:
        if ln.lstrip().startswith("from ") or ln.startswith("In file included"):
            continue
        ln = _pretty(ln)
        m = loc.match(ln)
        if m and not _is_shim(m.group(1)):
            if first is None and m.group(4) in ("error", "fatal error"):
                first = ln
            keep.append(ln)
        elif m and _is_shim(m.group(1)) and m.group(4) in ("error", "fatal error"):
            # an error inside the shim: show its message, the user location follows in the context
            keep.append("  (emulator library) " + (m.group(5) or ""))
        elif ln.startswith("In file included") or ln.lstrip().startswith("from "):
            continue
    if first is None:
        # the error is inside the emulator's Metal library: report it at the user's line
        # that led there ("required from here"), with the library's message
        user_loc = shim_msg = func = None
        for ln in lines:
            ln2 = _pretty(ln)
            m = loc.match(ln2)
            if m and not _is_shim(m.group(1)) and user_loc is None and ("required from" in ln2 or "requested here" in ln2):
                user_loc = f"{m.group(1)}:{m.group(2)}:{m.group(3) or ''}".rstrip(":")
            elif m and _is_shim(m.group(1)) and m.group(4) in ("error", "fatal error") and shim_msg is None:
                shim_msg = m.group(5)
            fm = (re.search(r"In (?:instantiation of|function) .(?:[\w:<>, ]*?\s)?(?:metal::|mslemu::)?(\w+)\(", ln2)
                  or re.search(r"in instantiation of [\w ]*specialization '(?:metal::|mslemu::)?(\w+)[<(']", ln2))
            if fm and func is None:
                func = fm.group(1)
        if user_loc and shim_msg:
            where = f" (inside the emulator's Metal library, in {func})" if func else " (inside the emulator's Metal library)"
            return f"{user_loc}: error: {shim_msg}{where}"
        return "\n".join(lines[:60])
    rest = [k for k in dict.fromkeys(keep) if k != first]
    return "\n".join([first, *rest[:40]])


# A source that declares a function constant (`constant T name [[function_constant(i)]];`):
# it is compiled once for all their values, which are read when the object is loaded.
_DECLARES_FUNCTION_CONSTANT = re.compile(r"\[\[[^\]]*\bfunction_constant\s*\(")
# In the folder of a source compiled with its function constants read at load: it could
# not be (it uses one where C++ wants a constant expression), so each set of values is
# compiled in, in an entry of its own.
VALUES_COMPILED_IN = "values-compiled-in.txt"


# A source with at most this many explicit kernel instantiations is compiled whole for any of
# its kernels (shared by all of them); a larger one, one kernel at a time, unless it is
# compiled as a library.
SMALL_FILE = 4
# The optimization level of a library of a larger file (every kernel of it in one object).
# Nearly all of such a compile is the compiler's back end on the code of every kernel, its
# library calls inlined: llama.cpp's mul_mm.metal (111 kernels) took 48 s of CPU at -O2,
# 37 s at -O1 and 27 s at -Og (g++ 12, its mul_mv.metal 25 s at -O2); -Og keeps the line
# tables the reports read. `gemmglossary bench emulator` prints each llama.cpp file's time.
LIBRARY_OPT = "-Og"
# The optimization level of every other kernel object. A kernel is compiled far more often
# than a compiled one runs long: each edit, each set of compile-time values, every fresh CI
# cache compiles again, and most launches are small. One steel GEMM instantiation took
# 2.7 s at -O2 and 1.5 s at -O1 (g++ 12); matmul_simd's 512-cubed launch, 138 ms against
# 160 ms (`gemmglossary bench emulator` prints the launches). -O1 keeps the line tables the
# reports read, as -O2 does. A level in GEMMGLOSSARY_EMULATOR_CXXFLAGS comes later and wins.
KERNEL_OPT = "-O1"


@lru_cache(maxsize=None)
def soft_half(cxx: str, flags: tuple[str, ...]) -> bool:
    """Whether the compiler gives the shim its own half class (mslemu.h's choice, made by the
    same predefined macros): no _Float16 (clang++ 14 on x86-64, g++ 12 on aarch64), or
    MSLEMU_SOFT_HALF defined."""
    if "-DMSLEMU_SOFT_HALF" in flags:
        return True
    try:
        macros = subprocess.run([cxx, "-x", "c++", "-std=c++17", "-dM", "-E", "-"], input="", capture_output=True,
                                text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    gnu = re.search(r"#define __GNUC__ (\d+)", macros)
    native = "__FLT16_MAX__" in macros and ("__clang__" in macros or "__x86_64__" in macros
                                             or (gnu is not None and int(gnu.group(1)) >= 13))
    return not native


def _instantiations(pre: str) -> int:
    return len(re.findall(r"\btemplate\s*\[\[", pre))


def build(source: str, filename: str, *, include_dirs: list[str], defines: dict | None,
          function_constants: dict | None, kernel: str | None = None, device_races: bool = False,
          probe: bool = False):
    """Return (so_path, manifest dict, cache_hit); with `probe`, None unless it is in the cache
    (nothing is compiled).

    kernel None compiles every kernel of the source (a library); a name compiles that one,
    when the source has many instantiations (MLX's files), else the whole source too.

    Metal compiles a library once and specializes its pipelines by the values of the
    function constants; so does the emulator where C++ allows it. A source with function
    constants is compiled once, the constants read when the object is loaded
    (rewrite(..., at_load=True), mslemu_rt.h), and each set of values is a copy of the
    object with its values beside it (cache.specialized). A source that uses a function
    constant where C++ wants a constant expression (a template argument, `if constexpr`,
    a static_assert...) cannot be: its values are compiled in, one object per set, as
    Metal's compiler folds them.

    device_races: the object instrumented for the device race check (an entry of its own).
    A kernel of a file with many instantiations is taken from the whole file's object when
    that is in the cache (a library compiled before with these defines), else compiled alone."""
    pre = preprocess(source, filename, include_dirs, defines)
    # files with many explicit kernel instantiations (MLX style) are compiled one kernel
    # at a time; small files are compiled whole and shared by all their kernels
    if _instantiations(pre) <= SMALL_FILE:
        kernel = None
    if kernel is not None and not probe:
        library = _build_preprocessed(pre, filename, defines, function_constants, None, device_races, True)
        if library is not None and kernel in library[1]["kernels"]:
            return library
    return _build_preprocessed(pre, filename, defines, function_constants, kernel, device_races, probe)


def _build_preprocessed(pre: str, filename: str, defines: dict | None, function_constants: dict | None,
                        kernel: str | None, device_races: bool, probe: bool):
    cxx, ver = compiler()
    flags = cxxflags(ver) + kernel_check_flags(ver) + _coverage.kernel_flags(shim_include_dirs())  # its own cache key when instrumented
    # the level in CXXFLAGS' own place (the runtime keeps -O2: it is compiled once); flags
    # from GEMMGLOSSARY_EMULATOR_CXXFLAGS come after it, and a level among them still wins
    flags[flags.index("-O2")] = LIBRARY_OPT if kernel is None and _instantiations(pre) > SMALL_FILE else KERNEL_OPT
    if device_races:
        flags += device_race_flags(ver)
    def_key = json.dumps({str(k): repr(v) for k, v in sorted((defines or {}).items(), key=lambda kv: str(kv[0]))})

    def entry(fc_key: str, at_load: bool):
        key = hashlib.sha256("\0".join([pre, fc_key, def_key, str(kernel), cxx, ver, shim_hash(), " ".join(flags)]).encode()).hexdigest()[:24]
        d = cache_root() / key
        found = _cache.read_kernel_entry(d)  # verified, or None (a damaged entry is rebuilt, with a warning)
        if found:
            stats["cache_hits"] += 1
            return (*found, True)
        if probe:
            return None
        # one process builds an entry; one that wants it meanwhile (the test suite runs on
        # every core) waits and reads the result instead of compiling it a second time
        with exclusive(d / ".build.lock"):
            found = _cache.read_kernel_entry(d)  # built by another process while this one waited
            if found:
                stats["cache_hits"] += 1
                return (*found, True)
            if at_load and (d / VALUES_COMPILED_IN).is_file():
                return None
            try:
                return _compile(d, pre, filename, None if at_load else function_constants, kernel, cxx, ver, flags,
                                at_load=at_load)
            except CompileError as exc:
                if not at_load:
                    raise
                # (an error of the source itself is the compile's below, with its values)
                _cache.atomic_write(d / VALUES_COMPILED_IN, str(exc).encode())
                return None

    if _DECLARES_FUNCTION_CONSTANT.search(pre):
        built = entry("read at load", True)
        if built is not None:
            so, manifest, hit = built
            return _specialize(so, manifest, dict(function_constants or {}), filename), _with_defined(
                manifest, dict(function_constants or {})), hit
    fc_key = json.dumps({str(k): repr(v) for k, v in sorted((function_constants or {}).items(), key=lambda kv: str(kv[0]))})
    return entry(fc_key, False)


def _specialize(so: Path, manifest: dict, values: dict, filename: str) -> Path:
    """The object `so` (compiled with its function constants read at load) as specialized
    by `values`: itself when they define none, else a copy with them beside it."""
    lines = fc_lines([tuple(s) for s in manifest["fc_slots"]], values, filename)
    return _cache.specialized(so, lines) if lines else so


def _with_defined(manifest: dict, values: dict) -> dict:
    """`manifest` with each function constant's definedness under `values`."""
    declared = {name: [idx, name in values or idx in values] for name, (idx, _) in manifest["function_constants"].items()}
    return dict(manifest, function_constants=declared)


def _compile(d: Path, pre: str, filename: str, function_constants: dict | None, kernel: str | None,
             cxx: str, ver: str, flags: list[str], *, at_load: bool = False):
    rw = rewrite(pre, filename, function_constants, only=None if kernel is None else {kernel}, at_load=at_load,
                 soft_half=soft_half(cxx, tuple(flags)))
    manifest = {
        "kernels": {
            name: {
                "id": k.id, "fn": k.fn, "file": k.file, "line": k.line,
                "params": [dict(name=p.name, type=p.type, kind=p.kind, index=p.index, attr=p.attr, gate=p.gate,
                                line=p.line) for p in k.params],
            }
            for name, k in rw.kernels.items()
        },
        "function_constants": {k: list(v) for k, v in rw.function_constants.items()},
        "all_kernels": rw.all_names,
    }
    if at_load:
        manifest["fc_slots"] = [list(s) for s in rw.at_load]
    text = _coverage.instrumented_text(rw.text) if "--coverage" in flags else rw.text
    d.mkdir(parents=True, exist_ok=True)
    src = d / "kernel.cpp"
    _cache.atomic_write(src, text.encode())
    # Entries whose translation units are the same (the kernel a key names is not always
    # cut out: a file's plain kernels are all kept, and a define the source never reads
    # changes the key, not the text) share one compile: the first compiles, the others copy
    # its object (one build at a time, the others wait: workers that want it together).
    unit = translation_unit(text, cxx, ver, flags)
    with exclusive(unit.with_name(f".{unit.name}.lock")):
        shared = _compiled_unit(unit, d, manifest)
        if shared is not None:
            return shared
        so, manifest, hit = _compile_unit(d, src, manifest, cxx, ver, flags)
        _cache.atomic_write(unit, d.name.encode())
        return so, manifest, hit


def translation_unit(text: str, cxx: str, ver: str, flags: list[str]) -> Path:
    """The record of which cache entry compiled the kernel.cpp `text` with this compiler
    and these flags (everything else that makes the object: the runtime object's key is
    made of the same, link_flags are no part of any key): ``units/<hash>``, naming it."""
    key = hashlib.sha256("\0".join([text, cxx, ver, shim_hash(), " ".join(flags)]).encode()).hexdigest()[:24]
    d = cache_root() / "units"
    d.mkdir(exist_ok=True)
    return d / key


def _compiled_unit(unit: Path, d: Path, manifest: dict):
    """Entry `d` as a copy of the object that `unit` records, with its own `manifest`; None
    if there is none (never compiled, or the entry is gone or damaged: compile)."""
    try:
        name = unit.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    other = cache_root() / name
    if not name or "/" in name or other == d:
        return None
    found = _cache.read_kernel_entry(other)  # verified (a damaged one is removed, with a warning)
    if found is None:
        return None
    tmp = d / f".kernel.so.{os.getpid()}"
    shutil.copyfile(found[0], tmp)
    dsym = found[0].with_name(found[0].name + ".dSYM")  # (macOS: the debug info the symbolizer reads)
    if dsym.is_dir():
        shutil.copytree(dsym, tmp.with_name(tmp.name + ".dSYM"), dirs_exist_ok=True)
    stats["shared"] += 1
    so, manifest = _cache.write_kernel_entry(d, tmp, manifest)
    return so, manifest, False


def _compile_unit(d: Path, src: Path, manifest: dict, cxx: str, ver: str, flags: list[str]):
    rt = runtime_object()
    tmp = d / f".kernel.so.{os.getpid()}"
    includes = [arg for d in shim_include_dirs() for arg in ("-I", str(d))]
    if DEVICE_RACE_FLAG in flags:  # compiled instrumented, linked without the sanitizer's runtime
        obj = d / f".kernel.o.{os.getpid()}"
        r = subprocess.run([cxx, *flags, *precompiled_shim_flags(cxx, ver, flags), "-c", *includes, str(src),
                            "-o", str(obj)], capture_output=True, text=True)
        if not r.returncode:
            plain = [f for f in flags if f not in device_race_flags(ver)]
            r = subprocess.run([cxx, *plain, *link_flags(cxx, ver), "-shared", str(obj), str(rt), "-o", str(tmp)],
                               capture_output=True, text=True)
        obj.unlink(missing_ok=True)
    else:
        cmd = [cxx, *flags, *precompiled_shim_flags(cxx, ver, flags), *link_flags(cxx, ver), "-shared", *includes,
               str(src), str(rt), "-o", str(tmp)]
        r = subprocess.run(cmd, capture_output=True, text=True)
    stats["compiles"] += 1
    if r.returncode:
        raise CompileError(_clean_errors(r.stderr))
    so, manifest = _cache.write_kernel_entry(d, tmp, manifest)
    return so, manifest, False
