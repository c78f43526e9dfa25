"""Every GEMMGLOSSARY_* variable goes through one parser (gemmglossary.settings), and a
value it does not accept names the variable and what it accepts (issue #36)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gemmglossary import settings
from gemmglossary.settings import SettingError, VARIABLES, value

SRC = Path(__file__).resolve().parents[1] / "src" / "gemmglossary"


@pytest.mark.parametrize("name, text, accepts", [
    ("GEMMGLOSSARY_EMULATOR_WORKERS", "abc", "a positive integer"),
    ("GEMMGLOSSARY_EMULATOR_WORKERS", "0", "a positive integer"),
    ("GEMMGLOSSARY_EMULATOR_WORKERS", "2.5", "a positive integer"),
    ("GEMMGLOSSARY_EMULATOR_STRICT", "banana", "1, true, yes, on or 0, false, no, off"),
    ("GEMMGLOSSARY_EMULATOR_INPROCESS", "maybe", "1, true, yes, on or 0, false, no, off"),
    ("GEMMGLOSSARY_BACKEND", "cuda", "one of metal, emulator or auto"),
    ("GEMMGLOSSARY_EMULATOR_START", "vfork", "fork or spawn"),
    ("GEMMGLOSSARY_SITE_COVERAGE", "of", "on or off"),
    ("GEMMGLOSSARY_ROOT", "/nonexistent", "an existing folder"),
])
def test_a_value_it_does_not_accept_names_the_variable(monkeypatch, name, text, accepts):
    monkeypatch.setenv(name, text)
    with pytest.raises(SettingError) as info:
        value(name)
    assert str(info.value).startswith(f"{name}={text!r}") and accepts in str(info.value), info.value


@pytest.mark.parametrize("name, text, parsed", [
    ("GEMMGLOSSARY_EMULATOR_WORKERS", " 3 ", 3),
    ("GEMMGLOSSARY_EMULATOR_STRICT", "Yes", True),
    ("GEMMGLOSSARY_EMULATOR_STRICT", "off", False),
    ("GEMMGLOSSARY_EMULATOR_STRICT", "", False),
    ("GEMMGLOSSARY_BACKEND", "Emulator", "emulator"),
    ("GEMMGLOSSARY_SITE_COVERAGE", "", "on"),
])
def test_accepted_values(monkeypatch, name, text, parsed):
    monkeypatch.setenv(name, text)
    assert value(name) == parsed


def test_a_file_is_not_a_folder(monkeypatch, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    for name in ("GEMMGLOSSARY_EXERCISES_DIR", "GEMMGLOSSARY_CACHE_DIR", "GEMMGLOSSARY_ROOT"):
        monkeypatch.setenv(name, str(f))
        with pytest.raises(SettingError, match=f"{name}=.*not a folder"):
            value(name)


def test_nothing_else_reads_a_variable_of_ours():
    """A variable read past the parser would be unchecked again; every one is declared."""
    read = re.compile(r"""environ(?:\.get\(|\[)\s*["'](GEMMGLOSSARY_\w+)|getenv\(\s*["'](GEMMGLOSSARY_\w+)""")
    mentioned = re.compile(r"\bGEMMGLOSSARY_[A-Z_]+[A-Z]\b")
    offenders, undeclared = [], set()
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "settings.py":
            offenders += [f"{path.relative_to(SRC)}: {m.group(0)}" for m in read.finditer(text)]
        undeclared |= {m for m in mentioned.findall(text) if not m.startswith("GEMMGLOSSARY_ONCE")} - set(VARIABLES)
    assert not offenders, offenders
    assert not undeclared, undeclared


def test_the_emulator_reads_workers_and_strict_through_it(monkeypatch):
    import gemmglossary as gg
    from gemmglossary.emulator import PortabilityError

    k = gg.load_kernel("#include <metal_stdlib>\nkernel void f(device float* a [[buffer(0)]],\n"
                       "  uint i [[thread_position_in_grid]]) {\n threadgroup float t[2];\n a[i] = t[i];\n}\n", "f",
                       backend_name="emulator")
    run = dict(threads=(2, 1, 1), threads_per_threadgroup=(2, 1, 1))
    monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_WORKERS", "abc")
    with pytest.raises(SettingError, match="GEMMGLOSSARY_EMULATOR_WORKERS='abc': expected a positive integer"):
        k(np.zeros(2, np.float32), **run)
    monkeypatch.delenv("GEMMGLOSSARY_EMULATOR_WORKERS")
    monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_STRICT", "banana")
    with pytest.raises(SettingError, match="GEMMGLOSSARY_EMULATOR_STRICT='banana'"):
        k(np.zeros(2, np.float32), **run)
    monkeypatch.setenv("GEMMGLOSSARY_EMULATOR_STRICT", "on")
    with pytest.raises(PortabilityError):  # the read of threadgroup memory nobody wrote
        k(np.zeros(2, np.float32), **run)


@pytest.mark.parametrize("env, command", [
    ({"GEMMGLOSSARY_EMULATOR_WORKERS": "abc"}, ["run", "kernels/matmul_tiled.metal", "--name", "matmul_tiled"]),
    ({"GEMMGLOSSARY_ROOT": "/nonexistent"}, ["excerpts", "check"]),
    ({"GEMMGLOSSARY_CACHE_DIR": "/proc/x"}, ["run", "kernels/matmul_tiled.metal", "--name", "matmul_tiled"]),
])
def test_a_command_says_it_in_one_line_and_exits_2(env, command):
    import os

    root = SRC.parents[1]
    proc = subprocess.run([sys.executable, "-m", "gemmglossary.cli", *command], cwd=root, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})
    name = next(iter(env))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and name in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_the_docs_table_lists_what_a_user_may_set():
    table = settings.describe()
    assert "`GEMMGLOSSARY_EMULATOR_WORKERS` | a positive integer" in table
    assert "GEMMGLOSSARY_COVERAGE_SESSION" not in table  # set by the project for its own processes
