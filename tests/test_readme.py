"""The README's two quickstart lines are the project's contract with a new reader."""

from __future__ import annotations

import re

from gemmglossary.paths import project_root


def quickstart_lines() -> list[str]:
    readme = (project_root() / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README.md: no ```sh block under ## Quickstart"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_quickstart_has_exactly_two_commands():
    lines = quickstart_lines()
    assert len(lines) == 2, f"README quickstart must have exactly two command lines, has {lines}"
    serve, test = lines
    assert serve.endswith("mkdocs serve"), serve
    assert test.endswith("pytest"), test


def test_ci_runs_the_readme_test_line_verbatim():
    test_line = quickstart_lines()[1]
    ci = (project_root() / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert test_line in commands, f".ci/run does not run the README test line verbatim: {test_line!r}"


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((project_root() / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_serve_line_installs_the_site_and_the_test_line_includes_it():
    serve, test = quickstart_lines()
    extras = _pyproject()["project"]["optional-dependencies"]
    found = re.search(r"pip install -e '\.\[(\w+)\]' && mkdocs serve$", serve)
    assert found, f"README's first line must install the site's extra: {serve!r}"
    site = found.group(1)
    assert any(r.startswith("mkdocs") for r in extras[site]), f"the `{site}` extra does not bring MkDocs"
    assert "pip install -e '.[test]' && pytest" in test
    assert f"gemmglossary[{site}]" in extras["test"], "the tests build the site: `test` must include it"
    # the Pages workflow builds the site with the README's install
    pages = (project_root() / ".github" / "workflows" / "pages.yml").read_text(encoding="utf-8")
    assert serve.split(" && mkdocs serve")[0] in pages


def test_the_emulator_needs_numpy_alone_off_macos():
    """`pip install gemmglossary` on Linux: numpy, nothing of the site's (docs/linux-ci.md)."""
    import platform

    from packaging.markers import Marker
    from packaging.requirements import Requirement

    linux = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": platform.machine()}
    needed = [Requirement(r) for r in _pyproject()["project"]["dependencies"]]
    on_linux = [r.name for r in needed if r.marker is None or Marker(str(r.marker)).evaluate(linux)]
    assert on_linux == ["numpy"]
