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


def _binary(tmp_path, src: Path, defines=None) -> Path:
    pre = build.preprocess(src.read_text(), str(src), [str(src.parent)], defines)
    (tmp_path / "kernel.cpp").write_text(rewrite(pre, str(src), None).text)
    shutil.copy(build.RUNTIME_SRC, tmp_path / "runtime.cpp")
    out = tmp_path / "driver"
    subprocess.run([CXX, "-std=c++17", "-O2", "-w", "-fno-strict-aliasing", "-fwrapv", "-I", str(build.SHIM_DIR),
                    "-I", str(tmp_path), str(tmp_path / "kernel.cpp"), str(HERE / "cross" / "driver.cpp"),
                    "-o", str(out), "-static", "-ldl"], check=True, capture_output=True, text=True)
    return out


@pytest.mark.parametrize("iso", [False, True], ids=["in-process", "2-workers"])
@pytest.mark.parametrize("name", ["matmul_tiled", "matmul_simd"])
def test_first_party_kernel_on_aarch64(tmp_path, name, iso):
    src = Path(kernels_dir()) / f"{name}.metal"
    if not src.exists():
        pytest.skip(f"{src} is missing")
    exe = _binary(tmp_path, src)
    env = dict(os.environ, **({"ISO": "1"} if iso else {}))
    args = [QEMU, str(exe)] + (["simd"] if name == "matmul_simd" else [])
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_race_found_on_aarch64(tmp_path):
    exe = _binary(tmp_path, HERE / "kernels" / "tiled.metal", {"BARRIER1": 0})
    r = subprocess.run([QEMU, str(exe)], capture_output=True, text=True, env=dict(os.environ, ISO="1"), timeout=300)
    assert r.returncode != 0 and "data race on threadgroup memory 'As[" in r.stdout, r.stdout + r.stderr
