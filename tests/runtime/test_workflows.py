"""The GitHub workflows stay what the README promises (they cannot run on these machines)."""

from __future__ import annotations

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


def test_macos_runs_readme_tests_on_metal_and_a_strict_build():
    wf = _load("test-macos.yml")
    (job,) = wf["jobs"].values()
    assert job["runs-on"] == "macos-14"
    assert job["env"]["GEMMGLOSSARY_BACKEND"] == "metal"
    setup = [s for s in _steps(job) if str(s.get("uses", "")).startswith("actions/setup-python@")]
    assert setup and str(setup[0]["with"]["python-version"]) == "3.11"
    runs = [s.get("run", "").strip() for s in _steps(job)]
    assert _readme_test_line() in runs
    assert any("mkdocs build --strict" in r for r in runs)


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
