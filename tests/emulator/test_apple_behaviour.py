"""#10 §3: what MLX relies on beyond the specification runs with Apple's results and a
PortabilityWarning naming both lines; strict mode (strict=True, or
GEMMGLOSSARY_EMULATOR_STRICT=1) makes it a PortabilityError. The decision and the
specification's words are on docs/emulator.md."""

import warnings
from pathlib import Path

import numpy as np
import pytest

from gemmglossary.emulator import PortabilityError, PortabilityWarning, load_kernel

SRC = Path(__file__).parent / "kernels" / "apple.metal"


def _line(text):
    return next(i for i, ln in enumerate(SRC.read_text().splitlines(), 1) if text in ln)


def test_a_barrier_without_memory_flags_orders_threadgroup_memory_with_a_warning():
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(1, np.float32)
    k = load_kernel(SRC, "mem_none_reduction")
    with pytest.warns(PortabilityWarning) as record:
        k(x, out, threads=128, threads_per_threadgroup=128)
    assert out[0] == x.sum()
    msg = "\n".join(str(w.message) for w in record)
    assert f"{SRC}:{_line('v += partial[k]')}" in msg and f"{SRC}:{_line('partial[sg] = v')}" in msg
    assert "mem_flags::mem_threadgroup" in msg and "'partial[1]'" in msg


def test_a_barrier_some_lanes_branch_around_runs_with_a_warning():
    x = np.arange(64, dtype=np.float32) + 1
    out = np.zeros(64, np.float32)
    k = load_kernel(SRC, "divergent_barrier")
    with pytest.warns(PortabilityWarning, match="reached by part of simdgroup") as record:
        k(x, out, 40, threads=64, threads_per_threadgroup=64)
    acc = np.where(np.arange(64) < 40, 6 * x, 0)
    down = np.concatenate([acc[1:], acc[-1:]])
    down[31] = acc[31]  # simdgroup 0's last lane keeps its own value
    np.testing.assert_array_equal(out, acc + down)
    msg = "\n".join(str(w.message) for w in record)
    assert f"threadgroup_barrier at {SRC}:{_line('for (int k = 0; k < 3; ++k)') + 1}" in msg
    assert f"simd_shuffle_down at {SRC}:{_line('simd_shuffle_down(acc, 1)')}" in msg


def test_no_warning_when_every_thread_reaches_the_barrier():
    out = np.zeros(64, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_kernel(SRC, "divergent_barrier")(np.ones(64, np.float32), out, 64, threads=64, threads_per_threadgroup=64)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_strict_mode_turns_the_warnings_into_errors(monkeypatch, how):
    out = np.zeros(1, np.float32)
    k = load_kernel(SRC, "mem_none_reduction")
    kw = {}
    if how == "argument":
        kw["strict"] = True
    else:
        monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_STRICT", "1")
    with pytest.raises(PortabilityError, match=r"\(strict mode\) .*not portable"):
        k(np.ones(128, np.float32), out, threads=128, threads_per_threadgroup=128, **kw)
    assert out[0] == 0, "nothing is written back"
    monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_STRICT", "1")
    with pytest.warns(PortabilityWarning):  # an explicit strict=False wins over the environment
        k(np.ones(128, np.float32), out, threads=128, threads_per_threadgroup=128, strict=False)
    assert out[0] == 128
