"""The emulator's import paths need numpy alone: with every optional dependency made
unimportable, ``gg.metal_kernel``, ``gg.load_kernel``, the pytest plugin and the command's
help still work, and what does need one says so with the extra to install.

Each check runs in a fresh interpreter whose import system refuses the site's modules
(installed here, so refusing them is the only way to see their absence)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from gemmglossary.optional import EXTRAS

#: What `pip install gemmglossary` does not bring: every optional module, and the site's
#: engines and the tests' tools that are not imported by name anywhere in the package.
REFUSED = sorted(set(EXTRAS) | {"material", "mkdocs_jupyter", "zensical", "playwright", "IPython"})

PRELUDE = textwrap.dedent(f"""
    import importlib.abc, json, sys
    REFUSED = {REFUSED!r}

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in REFUSED:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

    sys.meta_path.insert(0, Refuse())

    def loaded():
        return sorted({{m.split(".")[0] for m in sys.modules}} & set(REFUSED + ["numpy"]))
""")


def run(body: str, tmp_path) -> dict:
    """Run ``body`` after the prelude, outside the repository; it prints one JSON object."""
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_the_package_and_its_plugin_loads_nothing_else(tmp_path):
    found = run("""
        import gemmglossary, gemmglossary.pytest_plugin
        print(json.dumps({"loaded": loaded()}))
    """, tmp_path)
    assert found["loaded"] == []  # not even numpy: the plugin is loaded by every pytest run


def test_metal_kernel_and_load_kernel_run_without_the_site(tmp_path):
    found = run("""
        import numpy as np
        import gemmglossary as gg

        k = gg.metal_kernel(name="twice", input_names=["a"], output_names=["b"],
                            source="uint i = thread_position_in_grid.x; b[i] = T(2) * a[i];")
        (b,) = k(inputs=[np.arange(4, dtype=np.float32)], template=[("T", np.float32)], grid=(4, 1, 1),
                 threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[np.float32])
        src = ("#include <metal_stdlib>\\nusing namespace metal;\\n"
               "kernel void add1(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += 1; }\\n")
        x = np.zeros(3, np.float32)
        gg.load_kernel(src, "add1")(x, threads=(3, 1, 1), threads_per_threadgroup=(3, 1, 1))
        print(json.dumps({"b": b.tolist(), "x": x.tolist(), "backend": gg.backend(), "loaded": loaded()}))
    """, tmp_path)
    assert found["b"] == [0, 2, 4, 6] and found["x"] == [1, 1, 1]
    assert found["backend"] == "emulator"
    assert found["loaded"] == ["numpy"]


def test_the_command_and_what_needs_an_extra(tmp_path):
    found = run("""
        import contextlib, io
        from gemmglossary import cli
        from gemmglossary.optional import MissingDependency

        with contextlib.redirect_stdout(io.StringIO()) as out:
            status = cli.main(["--help"])
        with contextlib.redirect_stderr(io.StringIO()) as err:
            zensical = cli.main(["zensical", "--site-dir", "site-zensical-none"])
        errors = {}
        try:
            import gemmglossary.mlx.steel
        except MissingDependency as exc:
            errors["mlx"] = str(exc)
        from gemmglossary.runtime.custom_kernels import MLXMetalKernel
        try:
            MLXMetalKernel("k", ["a"], ["b"], "b[0] = a[0];")
        except MissingDependency as exc:
            errors["gpu"] = str(exc)
        print(json.dumps({"status": status, "help": out.getvalue(), "errors": errors,
                          "zensical": [zensical, err.getvalue()]}))
    """, tmp_path)
    assert found["status"] == 0 and "exercise" in found["help"]
    # a command of the site's: one line naming the extra, status 2, before it writes anything
    assert found["zensical"] == [2, "gemmglossary zensical: gemmglossary zensical (the snippet pages) needs mkdocs, "
                                    "which is not installed: pip install 'gemmglossary[site]' (in a checkout: "
                                    "pip install -e '.[site]')\n"]
    assert found["errors"]["mlx"] == (
        "gemmglossary.mlx, MLX's kernels with their bfloat16 references, needs ml_dtypes, which is not installed: "
        "pip install 'gemmglossary[site]' (in a checkout: pip install -e '.[site]')")
    assert found["errors"]["gpu"] == ("gg.metal_kernel on the Apple GPU (it is mx.fast.metal_kernel) needs mlx, "
                                      "which is not installed: pip install mlx")


def test_every_extra_named_is_one_pyproject_defines():
    import tomllib

    from gemmglossary.paths import project_root

    extras = tomllib.loads((project_root() / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {e for e in EXTRAS.values() if e is not None} <= set(extras)
    site = " ".join(extras["site"]).lower()
    for module, extra in EXTRAS.items():
        if extra == "site":
            from gemmglossary.optional import DISTRIBUTIONS

            assert DISTRIBUTIONS.get(module, module).lower().replace("_", "-") in site.replace("_", "-") \
                or module in ("markdown", "yaml", "nbclient", "nbformat"), module  # (those come with mkdocs/jupytext)


def test_ml_dtypes_is_imported_at_the_first_bfloat16(tmp_path):
    """MLX's host modules and the facts extension (every site build) import ml_dtypes only
    when a bfloat16 is asked for: its import is half a second of every such process."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import json, sys
        import numpy as np
        import gemmglossary.docs_hooks.facts, gemmglossary.mlx.steel, gemmglossary.mlx.nax
        from gemmglossary.mlx import launch
        before = "ml_dtypes" in sys.modules
        names = [launch.type_to_name(np.float16), launch.type_to_name("bfloat16")]
        still = "ml_dtypes" in sys.modules
        bf = launch.bfloat16
        import ml_dtypes
        print(json.dumps({"before": before, "still": still, "names": names, "same": bf == np.dtype(ml_dtypes.bfloat16),
                          "of_array": launch.type_string(np.zeros(2, bf).dtype)}))
    """)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found == {"before": False, "still": False, "names": ["float16", "bfloat16"], "same": True,
                     "of_array": "bfloat16_t"}
