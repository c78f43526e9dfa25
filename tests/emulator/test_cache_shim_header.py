"""A damaged precompiled shim header is rebuilt, as a damaged kernel.so is (issue #36): a
truncated one made every later compile fail until the cache was deleted by hand."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from gemmglossary.emulator import CacheWarning, load_kernel


def _source() -> str:
    tag = int(uuid.uuid4().hex[:7], 16)  # a kernel no earlier run compiled
    return ("#include <metal_stdlib>\nusing namespace metal;\n"
            f"kernel void k(device float* o [[buffer(0)]]) {{ o[0] = 3.0f + 0.0f * {tag}; }}\n")


def test_a_truncated_precompiled_header_is_rebuilt(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(tmp_path))
    load_kernel(_source(), "k")  # builds the shim header with the flags kernels are compiled with
    headers = [p for p in (tmp_path / "emulator").rglob("mslemu.*") if p.suffix in (".gch", ".pch")]
    if not headers:
        pytest.skip("this compiler cannot precompile the shim (kernels then parse the header)")
    whole = {h: h.read_bytes() for h in headers}
    for h, data in whole.items():
        h.write_bytes(data[: len(data) // 3])  # cut short, as a full disk or a kill leaves it
    with pytest.warns(CacheWarning, match=r"mslemu\.(h\.gch|pch) is damaged"):
        kernel = load_kernel(_source(), "k")
    out = np.zeros(1, np.float32)
    kernel(out, threads=1, threads_per_threadgroup=1)
    assert out[0] == 3
    assert all(h.stat().st_size > len(data) // 3 for h, data in whole.items())  # rebuilt whole
