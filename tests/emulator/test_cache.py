"""Compiled kernels are cached: loading the same thing twice compiles once, and a damaged
cache entry is rebuilt with a warning instead of being loaded (issue #13, item 2)."""

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import CacheWarning, build, build_stats, cache, load_kernel


def _unique_source(value: float = 2.0) -> str:
    tag = uuid.uuid4().hex  # a source no earlier run compiled
    # (in code, not a comment: comments never reach the compiler, so they are not part of the key)
    return ("#include <metal_stdlib>\nusing namespace metal;\n"
            f"kernel void k(device float* o [[buffer(0)]]) {{ o[0] = {value}f + 0.0f * {int(tag[:7], 16)}; }}\n")


def test_second_load_is_a_cache_hit():
    src = _unique_source()
    before = build_stats["compiles"]
    k1 = load_kernel(src, "k")
    assert not k1.cache_hit and build_stats["compiles"] == before + 1
    k2 = load_kernel(src, "k")
    assert k2.cache_hit and build_stats["compiles"] == before + 1
    o = np.zeros(1, np.float32)
    k2(o, threads=1, threads_per_threadgroup=1)
    assert o[0] == 2
    # a different define or function constant is a different build
    k3 = load_kernel(src, "k", defines={"UNUSED": 1})
    assert not k3.cache_hit


def test_an_entry_of_the_same_translation_unit_copies_its_object():
    # a define the source never reads is another key, the same kernel.cpp: one compile
    src = _unique_source(3.0)
    before = dict(build_stats)
    k1 = load_kernel(src, "k")
    k2 = load_kernel(src, "k", defines={"NEVER_READ": 1})
    assert build_stats["compiles"] == before["compiles"] + 1
    assert build_stats["shared"] == before["shared"] + 1 and not k2.cache_hit
    assert k1.so.parent != k2.so.parent and k1.so.read_bytes() == k2.so.read_bytes()
    o = np.zeros(1, np.float32)
    k2(o, threads=1, threads_per_threadgroup=1)
    assert o[0] == 3


def test_another_flag_or_compiler_is_another_translation_unit():
    unit = build.translation_unit("int x;", "g++", "g++ 12", ["-O2"])
    assert unit == build.translation_unit("int x;", "g++", "g++ 12", ["-O2"])
    assert len({unit, build.translation_unit("int x;", "g++", "g++ 12", ["-O0", "--coverage"]),
                build.translation_unit("int x;", "clang++", "clang 16", ["-O2"]),
                build.translation_unit("int y;", "g++", "g++ 12", ["-O2"])}) == 4


def test_a_shared_object_whose_entry_is_damaged_is_compiled_again():
    src = _unique_source(4.0)
    k1 = load_kernel(src, "k")
    k1.so.unlink()  # the entry that compiled the unit is damaged: its object is missing
    before = dict(build_stats)
    with pytest.warns(CacheWarning, match="damaged"):
        k2 = load_kernel(src, "k", defines={"NEVER_READ": 2})
    assert build_stats["compiles"] == before["compiles"] + 1 and build_stats["shared"] == before["shared"]
    o = np.zeros(1, np.float32)
    k2(o, threads=1, threads_per_threadgroup=1)
    assert o[0] == 4


# A fresh interpreter loads the kernel (as the next session would); it must survive,
# warn, and compute the right value.
LOAD = """
import sys, warnings, numpy as np
from gemmglossary.emulator import load_kernel
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as w:
    k = load_kernel(sys.argv[1], "k")
o = np.zeros(1, np.float32)
k(o, threads=1, threads_per_threadgroup=1)
print(o[0], k.cache_hit)
for x in w:
    print(x.category.__name__, x.message)
"""


def _load_in_a_new_process(src: str) -> list[str]:
    r = subprocess.run([sys.executable, "-c", LOAD, src], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stdout}{r.stderr}"
    return r.stdout.splitlines()


def _entry(src: str):
    """Build (without loading) and return the cache entry's folder."""
    so, _, _ = build.build(src, "<source>", include_dirs=[], defines=None, function_constants=None, kernel="k")
    return so.parent


def test_a_truncated_kernel_is_rebuilt_not_loaded():
    """The case that used to end the interpreter with SIGBUS (exit 135)."""
    src = _unique_source(3.0)
    so = _entry(src) / "kernel.so"
    so.write_bytes(so.read_bytes()[:4096])
    out = _load_in_a_new_process(src)
    assert out[0] == "3.0 False", out  # rebuilt, right value
    assert any(ln.startswith("CacheWarning") and "is damaged (kernel.so has 4096 bytes, manifest.json says" in ln
               and "rebuilding it" in ln for ln in out[1:]), out
    assert load_kernel(src, "k").cache_hit, "the rebuilt entry is used"


def _fake_kernel_entry(tmp_path):
    d = tmp_path / "entry"
    d.mkdir()
    (d / ".tmp.so").write_bytes(b"\x7fELF" + bytes(range(256)) * 64)
    cache.write_kernel_entry(d, d / ".tmp.so", {"kernels": {"k": {}}})
    return d


@pytest.mark.parametrize("damage, why", [
    ("truncated kernel.so", "kernel.so has 100 bytes, manifest.json says 16388"),
    ("flipped byte in kernel.so", "kernel.so does not have the SHA-256 that manifest.json records"),
    ("missing kernel.so", "kernel.so is missing"),
    ("truncated manifest", "manifest.json is unreadable: JSONDecodeError"),
    ("manifest without a hash", "manifest.json records no size and hash"),
    ("manifest of another shape", "manifest.json records no size and hash"),
])
def test_cache_entries_are_verified(tmp_path, damage, why):
    d = _fake_kernel_entry(tmp_path)
    so, man = d / "kernel.so", d / "manifest.json"
    assert cache.read_kernel_entry(d)[0] == so  # intact
    if damage == "truncated kernel.so":
        so.write_bytes(so.read_bytes()[:100])
    elif damage == "flipped byte in kernel.so":
        b = bytearray(so.read_bytes())
        b[1000] ^= 0xFF
        os.unlink(so)  # a new inode, as a rewrite would give: not the file this process verified
        so.write_bytes(bytes(b))
    elif damage == "missing kernel.so":
        so.unlink()
    elif damage == "truncated manifest":
        man.write_text(man.read_text()[:40])
    elif damage == "manifest without a hash":
        m = json.loads(man.read_text())
        del m["kernel.so"]
        man.write_text(json.dumps(m))
    else:
        man.write_text("[1, 2]")
    with pytest.warns(CacheWarning, match=re.escape(f"{d} is damaged ({why}") + r".*\); rebuilding it"):
        assert cache.read_kernel_entry(d) is None
    assert not so.exists() and not man.exists(), "the damaged entry is removed"
    assert cache.read_kernel_entry(d) is None  # absent now: no second warning


def test_a_damaged_file_entry_is_refused(tmp_path):
    """The runtime object is checked the same way."""
    obj = tmp_path / "runtime-x.o"
    (tmp_path / ".tmp").write_bytes(b"object" * 100)
    cache.write_file_entry(obj, tmp_path / ".tmp")
    assert cache.read_file_entry(obj) == obj
    obj.write_bytes(b"object")
    with pytest.warns(CacheWarning, match=r"runtime-x.o is damaged \(runtime-x.o has 6 bytes, runtime-x.json says 600\)"):
        assert cache.read_file_entry(obj) is None


def test_missing_compiler_is_a_clear_error(monkeypatch):
    from gemmglossary.emulator import CompileError

    build.compiler.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CXX", raising=False)
    try:
        with pytest.raises(CompileError, match="neither g\\+\\+ nor clang\\+\\+"):
            build.compiler()
        monkeypatch.setenv("CXX", "my-cxx")
        build.compiler.cache_clear()
        with pytest.raises(CompileError, match="my-cxx"):
            build.compiler()
    finally:
        build.compiler.cache_clear()


def test_two_checkouts_never_share_a_precompiled_shim(monkeypatch, tmp_path):
    """The per-user cache is shared by every checkout; the precompiled shim and the runtime
    object carry their files' paths into reports, so their keys name where the shim lives
    (a report from one worktree named another's mslemu.h before)."""
    from gemmglossary.emulator import build

    import shutil

    here = build.shim_hash.__wrapped__()  # lru_cache'd in the module
    other = tmp_path / "other-checkout"  # the same files, elsewhere
    shutil.copytree(build.HERE, other / "emulator")
    shutil.copytree(build.HERE.parent / "msl", other / "msl")
    monkeypatch.setattr(build, "HERE", other / "emulator")
    assert build.shim_hash.__wrapped__() != here
    monkeypatch.setattr(build, "HERE", build.SHIM_DIR.parent)
    assert build.shim_hash.__wrapped__() == here


#: Modules the rewriter imports that read no kernel source: abi.py reads mslemu_abi.h (in the
#: shim folder, hashed whole) and errors.py formats messages.
READS_NO_SOURCE = {"abi.py", "errors.py"}


def _local_imports(path: Path, package: Path) -> set[Path]:
    """The modules of gemmglossary's emulator/ and msl/ folders that `path` imports."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            parts = (node.module or "").split(".") if node.module else []
            target = base.joinpath(*parts)
            names = [target.with_suffix(".py")] if parts else [base / f"{a.name}.py" for a in node.names]
            found |= {n for n in names if n.is_file() and n.parent.name in ("emulator", "msl")
                      and n.parent.parent == package}
    return found


def test_every_module_the_rewriter_reads_source_with_is_part_of_the_shim_hash():
    # an edit to a rewrite pass must rebuild the cached kernels: the hash lists those files
    package = build.HERE.parent
    hashed = set(build.rewriter_sources())
    seen, todo = set(), [build.HERE / "rewrite.py"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(_local_imports(module, package))
    missing = sorted(p.name for p in seen - hashed if p.name not in READS_NO_SOURCE)
    assert not missing, f"rewrite.py reads source with {missing}, which build.rewriter_sources() leaves out"
    assert all(p.is_file() for p in hashed), "build.rewriter_sources() names a file that is gone"


def test_processes_wanting_the_same_new_kernel_compile_it_once():
    # the suite runs on every core; two processes asking for one kernel at the same moment
    # must share one compile (the second waits for the first's entry), not make two
    src = _unique_source(5.0)
    procs = [subprocess.Popen([sys.executable, "-c", LOAD, src], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    firsts = sorted(out.splitlines()[0] for out, _ in outs)
    assert firsts == ["5.0 False", "5.0 True"], outs  # one compiled it, the other read its entry


def test_each_set_of_flags_has_its_own_precompiled_shim(monkeypatch, tmp_path):
    # g++ takes the first precompiled header it deems valid in a mslemu.h.gch/ folder, which
    # can be one built with other flags (it then died with an internal compiler error): a
    # compile's include path must hold only the one built with its own flags
    from gemmglossary.emulator import build

    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(tmp_path))
    cxx, ver = build.compiler()
    plain = build.cxxflags(ver)
    other = plain + ["-Og", "--coverage"]
    a, b = build.precompiled_shim_flags(cxx, ver, plain), build.precompiled_shim_flags(cxx, ver, other)
    assert a and b and a != b
    if "clang" not in ver:
        folders = [Path(f[-1]) for f in (a, b)]
        assert [sorted(p.name for p in f.iterdir() if not p.name.startswith(".")) for f in folders] == \
            [["mslemu.h.gch"], ["mslemu.h.gch"]]
    assert build.precompiled_shim_flags(cxx, ver, plain) == a  # built once, then found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="gold is asked for on Linux only")
def test_kernels_link_with_gold_only_where_the_compiler_can(tmp_path):
    # a compiler that cannot link with gold (binutils without it) links as before; a process
    # asks each compiler once
    fake = tmp_path / "no-gold-c++"
    calls = tmp_path / "calls"
    fake.write_text(f"#!/bin/sh\necho x >> {calls}\n"
                    "for a in \"$@\"; do [ \"$a\" = -fuse-ld=gold ] && { echo 'cannot find ld.gold' >&2; exit 1; }; done\n"
                    "exec g++ \"$@\"\n")
    fake.chmod(0o755)
    build.link_flags.cache_clear()
    try:
        assert build.link_flags(str(fake), "fake 1") == []
        assert build.link_flags(str(fake), "fake 1") == []  # known: no second probe
        assert calls.read_text().count("x") == 1
        cxx, ver = build.compiler()
        real = build.link_flags(cxx, ver)
        if "clang" not in ver and subprocess.run(["which", "ld.gold"], capture_output=True).returncode == 0:
            assert real == ["-fuse-ld=gold"]
    finally:
        build.link_flags.cache_clear()
