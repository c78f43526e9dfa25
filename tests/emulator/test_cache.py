"""Compiled kernels are cached: loading the same thing twice compiles once."""

import uuid

import numpy as np

from gemmglossary.emulator import build_stats, load_kernel


def test_second_load_is_a_cache_hit():
    tag = uuid.uuid4().hex  # a source no earlier run compiled
    # (in code, not a comment: comments never reach the compiler, so they are not part of the key)
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           f"kernel void k(device float* o [[buffer(0)]]) {{ o[0] = 2.0f + 0.0f * {int(tag[:7], 16)}; }}\n")
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


def test_missing_compiler_is_a_clear_error(monkeypatch):
    import pytest

    from gemmglossary.emulator import CompileError, build

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
