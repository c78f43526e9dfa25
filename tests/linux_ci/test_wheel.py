"""``pip install gemmglossary`` as a user's CI does it: the wheel is built from this
checkout, installed into a new virtual environment with nothing else, and used from a
folder outside the repository: the page's example with numpy alone, the page's CI job
(docs/linux-ci.md, "In CI") on the page's pytest example, then, with another mlx version
installed than the one the site pins, MLX's own documented example, unchanged.

The steps share one environment, in the order below (one process runs a file's tests);
each prints how long it took. pip's cache is warm in CI once the install step has run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from gemmglossary import paths
from gemmglossary.coverage import mode as coverage_mode
from gemmglossary.runtime import mlx_headers

import test_page

pytestmark = pytest.mark.slow

REPO = paths.project_root()
#: What a build needs of the checkout: the package, its metadata, the pins its
#: vendor.toml links to.
BUILD_INPUTS = ("src", "pyproject.toml", "README.md", "LICENSE", "kernels/vendor.toml")
#: mlx versions to install beside the wheel: the first that is not the site's pin.
OTHER_MLX = next(v for v in ("0.32.4", "0.32.1") if v != mlx_headers.version())


class Installed:
    def __init__(self, root: Path):
        self.root = root
        self.venv = root / "venv"
        self.python = self.venv / "bin" / "python"
        self.user = root / "user-project"  # outside the repository
        self.user.mkdir()
        self.times: dict[str, float] = {}

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("GEMMGLOSSARY_ROOT", "PYTHONPATH", "VIRTUAL_ENV", "PYTEST_XDIST_WORKER",
                            "PYTEST_ADDOPTS", coverage_mode.ENV) and not k.startswith("GEMMGLOSSARY_BACKEND")}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["GEMMGLOSSARY_CACHE_DIR"] = str(paths.cache_dir())
        return dict(env, **extra)

    def run(self, what: str, args, **kw) -> subprocess.CompletedProcess:
        start = time.monotonic()
        proc = subprocess.run(args, cwd=kw.pop("cwd", self.user), env=kw.pop("env", self.env()),
                              capture_output=True, text=True, timeout=900, **kw)
        self.times[what] = time.monotonic() - start
        print(f"{what}: {self.times[what]:.1f} s")
        assert proc.returncode == 0, f"{what} failed:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def distributions(self) -> set[str]:
        listed = self.run("pip list", [str(self.python), "-m", "pip", "list", "--format", "json"])
        return {d["name"].lower() for d in json.loads(listed.stdout)}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    inst = Installed(tmp_path_factory.mktemp("wheel"))
    stage = inst.root / "checkout"
    for name in BUILD_INPUTS:
        source, target = REPO / name, stage / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, target)
    inst.run("pip wheel", [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(inst.root / "dist"),
                           str(stage)], cwd=inst.root)
    (inst.wheel,) = (inst.root / "dist").glob("gemmglossary-*.whl")
    inst.run("venv", [sys.executable, "-m", "venv", str(inst.venv)], cwd=inst.root)
    # the page's CI job, its first step: the emulator alone
    job = test_page.ci_job()
    steps = [s for s in job["steps"] if "run" in s]
    inst.run("install the wheel (the job's first step)", ["bash", "-c", steps[0]["run"]],
             env=inst.env(GEMMGLOSSARY=str(inst.wheel)))
    inst.later_steps = steps[1:]
    return inst


def test_the_wheel_carries_the_emulator_and_brings_numpy_alone(installed):
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert "gemmglossary/emulator/cpp/runtime.cpp" in names and "gemmglossary/emulator/shim/mslemu.h" in names
    pins = zipfile.ZipFile(installed.wheel).read("gemmglossary/vendor.toml")
    assert pins == (REPO / "kernels" / "vendor.toml").read_bytes()  # a copy of the pins, not a link
    print(f"wheel: {installed.wheel.name}, {installed.wheel.stat().st_size / 1024:.0f} KiB")
    assert installed.distributions() - {"pip", "setuptools"} == {"gemmglossary", "numpy"}


def test_the_pages_numpy_example_runs_outside_the_repository(installed):
    plain, _ = test_page.python_examples()
    numpy_example = next(b for b in plain if "import mlx" not in b)
    script = installed.user / "example.py"
    script.write_text(numpy_example + (
        "\nimport sys, json\nfrom gemmglossary import paths\n"
        "print(json.dumps({'checkout': paths.in_checkout(), 'headers': str(paths.vendor_dir()),"
        " 'package': gg.__file__, 'site': sorted({m.split('.')[0] for m in sys.modules}"
        " & {'mlx', 'ml_dtypes', 'matplotlib', 'mkdocs', 'markdown', 'yaml'})}))\n"), encoding="utf-8")
    found = json.loads(installed.run("the page's numpy example", [str(installed.python), str(script)])
                       .stdout.splitlines()[-1])
    assert found["checkout"] is False and found["site"] == []
    assert Path(found["package"]).is_relative_to(installed.venv)
    assert Path(found["headers"]).is_relative_to(paths.cache_dir())  # not the checkout's kernels/vendor/


def test_the_pages_ci_job_runs_the_pages_pytest_example(installed):
    _, test_file = test_page.python_examples()
    (installed.user / test_file.splitlines()[0][2:].strip()).write_text(test_file, encoding="utf-8")
    outputs = [installed.run(f"the job's step '{s['name']}'", ["bash", "-c", s["run"]]).stdout
               for s in installed.later_steps]
    assert "2 passed" in outputs[-1], outputs[-1]
    assert "gemmglossary: Metal kernels run on the CPU emulator" in outputs[-1]


def test_with_another_mlx_mlxs_documented_example_runs_unchanged(installed):
    installed.run(f"pip install mlx {OTHER_MLX}",
                  [str(installed.python), "-m", "pip", "install", "-q", f"mlx[cpu]=={OTHER_MLX}"])
    runner = installed.user / "mlx_documented_example.py"
    shutil.copy2(Path(__file__).with_name("mlx_documented_example.py"), runner)
    found = json.loads(installed.run("MLX's documented example", [str(installed.python), str(runner)])
                       .stdout.splitlines()[-1])
    assert found["mlx"] == OTHER_MLX != found["reproduces"] == mlx_headers.version()
    assert found["backend"] == "emulator"
    assert "Generated source code for `myexp`" in found["printed"]
    plain, _ = test_page.python_examples()
    (installed.user / "mlx_example.py").write_text(next(b for b in plain if "import mlx" in b), encoding="utf-8")
    installed.run("the page's mlx example", [str(installed.python), "mlx_example.py"])
    print("times:", {k: round(v, 1) for k, v in installed.times.items()}, f"total {sum(installed.times.values()):.0f} s")
