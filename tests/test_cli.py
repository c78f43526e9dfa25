"""The ``gemmglossary`` command: one argparse tree, its help and its exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gemmglossary.cli import COMMAND_MODULES, main


def test_help_lists_every_command_and_the_exit_status(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("vendor", "excerpts", "run", "bench"):
        assert f"\n    {command}" in out, out
    assert "exit status:" in out and "2  bad input" in out


@pytest.mark.parametrize("argv", [["excerpts", "--help"], ["excerpts", "update", "--help"],
                                  ["run", "--help"], ["bench", "--help"], ["bench", "emulator", "--help"],
                                  ["bench", "metal", "--help"], ["bench", "suite", "--help"], ["vendor", "--help"]])
def test_every_command_has_help(argv, capsys):
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith(f"usage: gemmglossary {' '.join(a for a in argv if a != '--help')}")


@pytest.mark.parametrize("argv, message", [
    (["nope"], "gemmglossary: argument COMMAND: invalid choice: 'nope'"),
    (["excerpts"], "gemmglossary excerpts: the following arguments are required: ACTION"),
    (["excerpts", "chek"], "gemmglossary excerpts: argument ACTION: invalid choice: 'chek'"),
    (["excerpts", "check", "--accept-changes"], "gemmglossary: unrecognized arguments: --accept-changes"),
    (["bench", "emulator", "--sizes", "x"], "gemmglossary bench emulator: argument --sizes: expected comma-separated"),
    (["bench", "emulator", "--kernels", "mystery"], "unknown kernel(s) mystery"),
    (["vendor", "--nope"], "gemmglossary: unrecognized arguments: --nope"),
    # issue 36: checked as `run` checks them, before anything is allocated
    (["bench", "emulator", "--repeats", "0"], "argument --repeats: expected a positive integer, got '0'"),
    (["bench", "emulator", "--sizes", "100000"], "size 100000: M=100000 N=100000 K=100000: A would have"),
    (["bench", "emulator", "--sizes", "4096"], "above the emulator's limit"),
    (["bench", "metal", "--repeats", "0"], "argument --repeats: expected a positive integer"),
    (["bench", "metal", "--sizes", "100000"], "size 100000"),
    (["bench", "suite", "--target", "nan"], "argument --target: expected a positive number of seconds"),
    (["run", "kernels/matmul_tiled.metal", "--name", "matmul_tiled", "--alpha", "nan"],
     "argument --alpha: expected a finite number, got 'nan'"),
    (["run", "kernels/tiled_gemm.metal", "--name", "tiled_gemm", "--beta", "inf"], "argument --beta: expected a finite number"),
    (["run", "kernels/matmul_tiled.metal", "--name", "matmul_tiled", "--seed", "-1"],
     "argument --seed: expected an integer >= 0"),
    (["run", "kernels/matmul_tiled.metal", "--name", "matmul_tiled", "--threads", "4294967296"],
     "argument --threads: 4294967296 is above UINT32_MAX"),
    (["run", "kernels", "--name", "matmul_tiled"], "kernels is a folder, not a kernel file"),
])
def test_bad_input_is_one_line_on_stderr_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_no_command_prints_the_usage_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage: gemmglossary" in capsys.readouterr().err


def test_each_module_registers_its_own_command():
    import importlib

    for name in COMMAND_MODULES:
        assert callable(importlib.import_module(name).register), name


def test_the_installed_script_is_the_tree():
    run = subprocess.run([sys.executable, "-m", "gemmglossary.cli", "excerpts", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "invalid choice: 'nope'" in run.stderr


@pytest.mark.parametrize("argv", [["exercise", "list"], ["excerpts", "check"], ["exercise", "show", "scale_add"],
                                  ["--help"], ["run", "--help"], ["vendor", "--check"]])
def test_a_reader_that_leaves_is_no_error(argv):
    """`gemmglossary ... | head -1`: the pipe closes before the command writes (issue 36)."""
    proc = subprocess.Popen([sys.executable, "-m", "gemmglossary.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read()
    # 141 as a command killed by SIGPIPE (0 for --help: argparse drops what it cannot write)
    assert proc.wait(timeout=300) in (0, 141) and err == "", err
