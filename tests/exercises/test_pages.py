"""Transcripts on the exercise pages (`$ gemmglossary exercise check ...`) still print what they show.

Each page shows what the checker says about the skeleton as shipped. The command is run
here on the emulator (the transcripts are emulator output) and every line the page shows
must appear in its output, whitespace aside.
"""

from __future__ import annotations

import re
import shlex

import pytest

from gemmglossary import cli
from gemmglossary.paths import docs_dir, project_root

BLOCK = re.compile(r"^```text\n(\$ gemmglossary exercise .*?)^```", re.S | re.M)


def transcripts():
    found = []
    for page in sorted((docs_dir() / "exercises").glob("*.md")):
        for block in BLOCK.findall(page.read_text(encoding="utf-8")):
            lines = block.splitlines()
            argv = shlex.split(lines.pop(0)[2:])[1:]
            found.append((page.name, argv, "\n".join(lines)))
    return found


def _normalized(text: str) -> str:
    return " ".join(text.split())


def test_every_exercise_page_shows_a_transcript():
    pages = {p.name for p in (docs_dir() / "exercises").glob("*.md")} - {"index.md"}
    assert pages and pages == {page for page, _, _ in transcripts()}


@pytest.mark.parametrize("page,argv,expected", transcripts(), ids=lambda v: v if isinstance(v, str) and
                         v.endswith(".md") else "")
def test_transcript_matches_a_fresh_run(page, argv, expected, capsys, monkeypatch):
    monkeypatch.chdir(project_root())
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    assert "--backend" in argv and "emulator" in argv, f"docs/exercises/{page}: the transcript names its backend"
    status = cli.main(argv)
    out = capsys.readouterr().out
    assert status == 1, "a skeleton as shipped fails"
    assert _normalized(expected) in _normalized(out), (
        f"docs/exercises/{page}: `gemmglossary {' '.join(argv)}` no longer prints what the page shows.\n"
        f"page:\n{expected}\n\nnow:\n{out}")
