"""The GitHub workflows stay what the README promises (they cannot run on these machines)."""

from __future__ import annotations

import platform
import re

import yaml

from gemmglossary.paths import project_root

WORKFLOWS = project_root() / ".github" / "workflows"


def _readme_test_line() -> str:
    readme = (project_root() / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", readme.split("## Quickstart", 1)[1], re.S)
    return [ln for ln in block.group(1).splitlines() if ln.strip()][1]


def _load(name):
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))


def _steps(job):
    return job["steps"]


def test_macos_runs_readme_tests_forced_metal_cases_and_a_strict_build():
    wf = _load("test-macos.yml")
    (job,) = wf["jobs"].values()
    assert job["runs-on"] == "macos-14"
    setup = [s for s in _steps(job) if str(s.get("uses", "")).startswith("actions/setup-python@")]
    assert setup and str(setup[0]["with"]["python-version"]) == "3.11"
    steps = [s for s in _steps(job) if "run" in s]
    runs = [s["run"].strip() for s in steps]
    # The README's line, with the backend chosen automatically, as on a reader's Mac
    readme = steps[runs.index(_readme_test_line())]
    assert "GEMMGLOSSARY_BACKEND" not in readme.get("env", {}) and "GEMMGLOSSARY_BACKEND" not in job.get("env", {})
    # The device and its families are printed; a missing device fails the job
    assert any(r.endswith("python -m gemmglossary.metal.device") for r in runs)
    # The metal cases again, forced: a missing GPU fails them (tests/runtime/conftest.py)
    forced = [s for s in steps if s.get("env", {}).get("GEMMGLOSSARY_BACKEND") == "metal"]
    assert len(forced) == 1 and forced[0]["run"].strip().endswith("pytest tests/runtime -m metal")
    assert any("mkdocs build --strict" in r for r in runs)
    # The header says what a hosted runner's GPU can and cannot show
    header = (WORKFLOWS / "test-macos.yml").read_text(encoding="utf-8").split("name:", 1)[0]
    assert "paravirtual" in header and "cannot show" in header and "on the real GPU" not in header


def test_the_device_module_runs_off_a_mac(capsys):
    from gemmglossary.metal import device

    if platform.system() == "Darwin":
        import pytest

        pytest.skip("on a Mac the module reports the real device")
    assert device.main() == 1
    assert "no Metal bindings" in capsys.readouterr().out


def test_pages_builds_strictly_and_deploys_with_the_official_actions():
    wf = _load("pages.yml")
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as True
    assert on["push"]["branches"] == ["main"]
    assert wf["permissions"]["pages"] == "write" and wf["permissions"]["id-token"] == "write"
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    assert build["runs-on"] == "ubuntu-latest"
    uses = [s.get("uses", "") for s in _steps(build)]
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    assert any("mkdocs build --strict" in s.get("run", "") for s in _steps(build))
    assert deploy["needs"] == "build"
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in _steps(deploy))
