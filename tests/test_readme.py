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
