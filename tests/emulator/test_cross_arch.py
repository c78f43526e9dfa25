"""The runtime on aarch64 Linux (its own context switch, clone-based workers), built with
a cross compiler and run under qemu-user when both are installed
(Debian: g++-aarch64-linux-gnu, qemu-user)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gemmglossary.emulator import build
from gemmglossary.emulator.rewrite import rewrite
from gemmglossary.paths import kernels_dir

CXX = shutil.which("aarch64-linux-gnu-g++")
QEMU = shutil.which("qemu-aarch64")
pytestmark = pytest.mark.skipif(not (CXX and QEMU), reason="needs aarch64-linux-gnu-g++ and qemu-aarch64")
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    """The static aarch64 driver of a kernel file, built once per file and defines (the
    in-process and the 2-worker runs share it: a cross compile takes a few seconds)."""
    built: dict = {}

    def get(src: Path, defines=None) -> Path:
        key = (str(src), tuple(sorted((defines or {}).items())))
        if key not in built:
            built[key] = _binary(tmp_path_factory.mktemp("aarch64"), src, defines)
        return built[key]
    return get


def _binary(tmp_path, src: Path, defines=None) -> Path:
    pre = build.preprocess(src.read_text(), str(src), [str(src.parent)], defines)
    (tmp_path / "kernel.cpp").write_text(rewrite(pre, str(src), None).text)
    out = tmp_path / "driver"
    includes = [arg for d in build.shim_include_dirs() for arg in ("-I", str(d))]
    subprocess.run([CXX, "-std=c++17", "-O2", "-w", "-fno-strict-aliasing", "-fwrapv", *includes,
                    "-I", str(build.RUNTIME_SRC.parent), str(tmp_path / "kernel.cpp"), str(HERE / "cross" / "driver.cpp"),
                    "-o", str(out), "-static", "-ldl"], check=True, capture_output=True, text=True)
    return out


@pytest.mark.parametrize("iso", [False, True], ids=["in-process", "2-workers"])
@pytest.mark.parametrize("name", ["matmul_tiled", "matmul_simd"])
def test_first_party_kernel_on_aarch64(binary, name, iso):
    src = Path(kernels_dir()) / f"{name}.metal"
    if not src.exists():
        pytest.skip(f"{src} is missing")
    exe = binary(src)
    env = dict(os.environ, **({"ISO": "1"} if iso else {}))
    args = [QEMU, str(exe)] + (["simd"] if name == "matmul_simd" else [])
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_race_found_on_aarch64(binary):
    exe = binary(HERE / "kernels" / "tiled.metal", {"BARRIER1": 0})
    r = subprocess.run([QEMU, str(exe)], capture_output=True, text=True, env=dict(os.environ, ISO="1"), timeout=300)
    assert r.returncode != 0 and "data race on threadgroup memory 'As[" in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("clang++") is None or shutil.which("g++") is None, reason="needs both g++ and clang++")
@pytest.mark.parametrize("cxx", ["clang++", "g++"])
def test_both_compilers_give_the_same_results_and_diagnostics(monkeypatch, cxx):
    import numpy as np

    from gemmglossary.emulator import DataRaceError, load_kernel

    monkeypatch.setenv("CXX", cxx)
    build.compiler.cache_clear()
    try:
        k = load_kernel(HERE / "kernels" / "conformance.metal", "sgm_mma")
        rng = np.random.default_rng(1)
        a, b, c = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(3))
        out = np.zeros(128, np.float32)
        k(a, b, c, out, threads=32, threads_per_threadgroup=32)
        np.testing.assert_allclose(out[:64].reshape(8, 8), a @ b + c, rtol=1e-5, atol=1e-5)
        racy = load_kernel(HERE / "kernels" / "tiled.metal", "matmul_tiled", defines={"BARRIER1": 0})
        A = np.ones((40, 40), np.float32)
        with pytest.raises(DataRaceError) as e:
            racy(A, A, np.zeros_like(A), 40, 40, 40, threadgroups=(3, 3, 1), threads_per_threadgroup=(16, 16, 1))
        src = HERE / "kernels" / "tiled.metal"
        assert f"{src}:28" in str(e.value) and f"{src}:34" in str(e.value)
    finally:
        build.compiler.cache_clear()
