"""docs/linux-ci.md runs as shown: its Python examples, its pytest example under the plugin
with the page's own configuration, the argument tables against the real signatures, and
MLX's own documented example (read from the installed mlx, never copied here) through
``gg.metal_kernel``, unchanged. Its CI job is run by tests/linux_ci/test_wheel.py."""

from __future__ import annotations

import inspect
import re

import pytest
import yaml

import gemmglossary as gg
from gemmglossary import paths
from gemmglossary.runtime import custom_kernels, mlx_values

import mlx_documented_example

pytest_plugins = ["pytester"]

# pytester's in-process runs forget the modules imported during them, and an extension
# module cannot be imported twice in one process (mlx.core aborts it): mlx, when installed,
# is imported before any of them.
mlx_values.mlx_core()

PAGE = paths.docs_dir() / "linux-ci.md"
CACHE = paths.cache_dir()  # read before pytester moves HOME


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M)


def python_examples() -> tuple[list[str], str]:
    """(the examples run as they are, the pytest example: the block that names its file)."""
    found = blocks("python")
    tests = [b for b in found if b.startswith("# test_")]
    assert len(tests) == 1, "docs/linux-ci.md: expected one ```python block starting with '# test_<name>.py'"
    return [b for b in found if b not in tests], tests[0]


def ci_job() -> dict:
    (job,) = yaml.safe_load(blocks("yaml")[0])["jobs"].values()
    return job


def test_the_examples_run(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)  # nothing they do depends on the repository
    plain, _ = python_examples()
    assert len(plain) == 2, "docs/linux-ci.md: the mlx example and the numpy one"
    ran = []
    for n, block in enumerate(plain):
        namespace = {"__name__": f"linux_ci_example_{n}"}
        exec(compile(block, f"docs/linux-ci.md (example {n + 1})", "exec"), namespace)
        assert namespace["row_sum"].backend == gg.backend()
        ran.append(namespace)
    # the host name the table gives for the first example
    assert "custom_kernel_row_sum__float_float_float" in PAGE.read_text(encoding="utf-8")
    assert "[[kernel]] void custom_kernel_row_sum__float_float_float(" in ran[0]["row_sum"].last_source


def test_the_pytest_example_passes_under_the_plugin_with_the_pages_configuration(pytester, monkeypatch):
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(CACHE))
    _, test_file = python_examples()
    name = test_file.splitlines()[0][2:].strip()
    pytester.path.joinpath(name).write_text(test_file, encoding="utf-8")
    (toml,) = blocks("toml")
    pytester.path.joinpath("pyproject.toml").write_text(toml, encoding="utf-8")
    result = pytester.runpytest("-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["gemmglossary: Metal kernels run on the CPU emulator (*); strict:*"])


def test_mlx_documented_example_runs_unchanged():
    mx = pytest.importorskip("mlx.core", reason="the example is read from the installed mlx")
    result = mlx_documented_example.run(mx, gg.metal_kernel)
    assert "mx.fast.metal_kernel(" in result["code"]  # MLX's text, its own call
    assert "Generated source code for `myexp`" in result["printed"]  # verbose=True, through gg
    assert "[[kernel]] void custom_kernel_myexp_" in result["printed"]


def test_a_changed_documented_example_would_be_run_as_changed():
    """What runs is what the docstring says: a broken example fails."""
    mx = pytest.importorskip("mlx.core")

    class Doc:
        def __init__(self, doc):
            self.__doc__ = doc

    class Fast:
        metal_kernel = Doc("Example:\n\n  .. code-block:: python\n\n    assert 1 == 2\n\nReturns: x\n")

    class Mx:
        fast = Fast()

        def __getattr__(self, name):
            return getattr(mx, name)

    assert mlx_documented_example.documented_example(Mx()) == "assert 1 == 2\n"
    with pytest.raises(AssertionError):
        mlx_documented_example.run(Mx(), gg.metal_kernel)


def table_arguments(heading: str) -> list[str]:
    rows = [ln for ln in PAGE.read_text(encoding="utf-8").splitlines() if ln.startswith("| ")]
    start = next(i for i, ln in enumerate(rows) if ln.startswith(f"| {heading}"))
    out = []
    for ln in rows[start + 1:]:
        if not ln.startswith("| `"):
            break
        out += re.findall(r"`(\w+)`", ln.split("|")[1])
    return out


def test_the_tables_name_every_argument_of_both_calls():
    made = [p for p in inspect.signature(custom_kernels.metal_kernel).parameters]
    called = [p for p in inspect.signature(custom_kernels.EmulatedMetalKernel.__call__).parameters if p != "self"]
    assert table_arguments("Argument of `mx.fast.metal_kernel`") == made
    assert sorted(table_arguments("Argument of the call")) == sorted(called)


def test_the_tables_name_every_argument_mlx_documents():
    mx = pytest.importorskip("mlx.core", reason="MLX's own signature is read from the installed mlx")
    first = mx.fast.metal_kernel.__doc__.splitlines()[0]
    documented = re.findall(r"(\w+):", first.split("(", 1)[1])
    assert documented == table_arguments("Argument of `mx.fast.metal_kernel`")


def test_the_ci_job_is_a_github_actions_job_on_ubuntu():
    job = ci_job()
    assert job["runs-on"] == "ubuntu-latest"
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert runs[0] == 'python -m pip install "$GEMMGLOSSARY"' and runs[-1] == "python -m pytest --metal-emulator"


def test_the_install_line_installs_what_the_ci_job_installs():
    """The page's install command is the CI job's first step, whose GEMMGLOSSARY the wheel
    test replaces by a wheel of this checkout: what it installs is tested there."""
    (install,) = blocks("sh")
    job = ci_job()
    step = next(s for s in job["steps"] if "run" in s)
    assert install.strip() == step["run"].replace("$GEMMGLOSSARY", step["env"]["GEMMGLOSSARY"])
