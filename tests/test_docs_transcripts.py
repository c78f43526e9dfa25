"""Shell transcripts on pages (`$ gemmglossary run kernels/...`) still print what they show.

A transcript is a ```text block whose first line is a `$ gemmglossary run` command (with
`\\` continuations), at the margin or indented in an admonition or folded note. When the kernel file it names is in the repository, the command is
run here and every line the page shows must appear in its output, whitespace aside (pages
wrap long lines). Transcripts of edited copies (files not in the repository) are listed
by `unrunnable_transcripts` and not checked.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from gemmglossary import cli
from gemmglossary.paths import docs_dir, project_root

BLOCK = re.compile(r"^( *)```text\n\1(\$ gemmglossary run .*?)^\1```", re.S | re.M)


def transcripts(root: Path | None = None) -> list[tuple[str, list[str], str]]:
    """(page, argv, expected output) for every `gemmglossary run` transcript."""
    found = []
    for page in sorted((root or docs_dir()).rglob("*.md")):
        for indent, block in BLOCK.findall(page.read_text(encoding="utf-8")):
            lines = [line[len(indent):] if line.startswith(indent) else line for line in block.splitlines()]
            command = lines.pop(0)[2:]
            while command.endswith("\\"):
                command = command[:-1] + " " + lines.pop(0).strip()
            argv = shlex.split(command)[1:]  # drop "gemmglossary"
            found.append((str(page.relative_to(docs_dir())), argv, "\n".join(lines)))
    return found


def _normalized(text: str) -> str:
    return " ".join(text.split())


def runnable(argv: list[str]) -> bool:
    return (project_root() / argv[1]).is_file()


@pytest.mark.parametrize("page,argv,expected",
                         [t for t in transcripts() if runnable(t[1])],
                         ids=lambda v: v if isinstance(v, str) and v.endswith(".md") else "")
def test_transcript_matches_a_fresh_run(page, argv, expected, capsys, monkeypatch):
    monkeypatch.chdir(project_root())
    cli.main(argv)
    out = capsys.readouterr().out
    assert _normalized(expected) in _normalized(out), (
        f"docs/{page}: `gemmglossary {' '.join(argv)}` no longer prints what the page shows.\n"
        f"page:\n{expected}\n\nnow:\n{out}")


def test_transcripts_are_found_and_some_are_checked():
    found = transcripts()
    assert sum(runnable(argv) for _, argv, _ in found) >= 2, found


def test_a_stale_transcript_is_caught(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(project_root())
    argv = ["run", "kernels/tiled_gemm.metal", "--name", "tiled_gemm", "--shape", "8,8,8"]
    cli.main(argv)
    out = capsys.readouterr().out
    assert "PASS" in out
    assert _normalized("tiled_gemm on emulator: M=9") not in _normalized(out)
