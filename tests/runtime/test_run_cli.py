"""``gemmglossary run``: PASS/FAIL against numpy, diagnostics exit 1, bad input exit 2."""

from __future__ import annotations

import re

import pytest

from gemmglossary import paths
from gemmglossary.cli import main as cli_main
from gemmglossary.run import main


def kernel_path(name):
    return str(paths.kernels_dir() / f"{name}.metal")


@pytest.mark.parametrize("name", ["matmul_tiled", "matmul_simd", "matmul_simd_blocked", "tiled_gemm"])
def test_pass_on_each_gemm_kernel(backend_name, name, capsys):
    assert main([kernel_path(name), "--name", name, "--shape", "40,33,20"]) == 0
    out = capsys.readouterr().out
    assert f"{name} on {backend_name}: M=40 N=33 K=20" in out
    assert re.search(r"max \|C - numpy\| = \S+ \(tolerance", out)
    assert out.rstrip().endswith("PASS")


def test_through_the_cli_router_with_defines(backend_name, capsys):
    rc = cli_main(["run", kernel_path("matmul_simd_blocked"), "--name", "matmul_simd_blocked",
                   "--define", "TM=2", "-D", "TN=2", "--M", "30", "--N", "20", "--K", "9"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "-DTM=2 -DTN=2" in out and out.rstrip().endswith("PASS")


def test_fail_when_the_dispatch_is_too_small(backend_name, capsys):
    rc = main([kernel_path("matmul_tiled"), "--name", "matmul_tiled", "--shape", "64,64,16",
               "--threadgroups", "1,1,1"])
    assert rc == 1
    assert capsys.readouterr().out.rstrip().endswith("FAIL")


def test_tiled_gemm_alpha_beta(backend_name, capsys):
    rc = main([kernel_path("tiled_gemm"), "--name", "tiled_gemm", "--shape", "20,30,10",
               "--alpha", "2", "--beta", "0.5"])
    assert rc == 0, capsys.readouterr().out


def test_emulator_diagnostic_exits_1(tmp_path, monkeypatch, capsys):
    # A copy of matmul_tiled without its second barrier: the next iteration's stage
    # overwrites the tiles while other threads still read them. The emulator reports it.
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    src = (paths.kernels_dir() / "matmul_tiled.metal").read_text()
    barriers = [m.start() for m in re.finditer(r"threadgroup_barrier\(mem_flags::mem_threadgroup\);", src)]
    assert len(barriers) >= 2
    last = barriers[-1]
    broken = src[:last] + "/* barrier removed */" + src[last + len("threadgroup_barrier(mem_flags::mem_threadgroup);"):]
    path = tmp_path / "matmul_tiled_race.metal"
    path.write_text(broken)
    rc = main([str(path), "--name", "matmul_tiled", "--shape", "32,32,64"])
    out = capsys.readouterr()
    assert rc == 1, out
    assert out.out.strip() and "PASS" not in out.out


def test_compile_error_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GEMMGLOSSARY_BACKEND", "emulator")
    src = (paths.kernels_dir() / "matmul_tiled.metal").read_text().replace("tileA[lid.y][lid.x]", "tileA[lid.y][", 1)
    path = tmp_path / "broken.metal"
    path.write_text(src)
    rc = main([str(path), "--name", "matmul_tiled"])
    assert rc == 1
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nope.metal", "--name", "matmul_tiled"], "no such file: nope.metal"),
        (["{k}", "--name", "mystery"], "unknown kernel 'mystery'"),
        (["{k}", "--name", "matmul_simd"], "has no kernel named 'matmul_simd'"),
        (["{k}", "--name", "matmul_tiled", "--define", "TM"], "malformed --define 'TM'"),
        (["{k}", "--name", "matmul_tiled", "--define", "2X=1"], "malformed --define '2X=1'"),
        (["{k}", "--name", "matmul_tiled", "--shape", "1,2,z"], "expected x,y,z integers"),
        (["{k}", "--name", "matmul_tiled", "--shape", "4,4,4", "--M", "3"], "either --shape or --M/--N/--K"),
        (["{k}", "--name", "matmul_tiled", "--beta", "1"], "--alpha/--beta apply to tiled_gemm only"),
        (["{k}", "--name", "matmul_tiled", "--threads", "1,1,1", "--threadgroups", "1,1,1"], "not allowed with"),
        (["{k}"], "required: --name"),
        (["{k}", "--name", "matmul_tiled", "--shape", "-1,64,64"],
         "argument --shape: expected M,N,K (three positive integers), got '-1,64,64'"),
        (["{k}", "--name", "matmul_tiled", "--shape", "64,64"],
         "argument --shape: expected M,N,K (three positive integers), got '64,64'"),
        (["{k}", "--name", "matmul_tiled", "--M", "-3"], "argument --M: expected a positive integer, got '-3'"),
        (["{k}", "--name", "matmul_tiled", "--tpg", "16.5,16"], "expected x,y,z integers, got '16.5,16'"),
        (["{k}", "--name", "matmul_tiled", "--shape", "100000,100000,8"],
         "C would have 10,000,000,000 elements, above the limit of 67,108,864"),
        (["{k}", "--name", "matmul_tiled", "--shape", "4096,4096,4096", "--backend", "emulator"],
         "M*N*K = 68,719,476,736 is above the emulator's limit of 8,589,934,592 (2048^3)"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    argv = [a.replace("{k}", kernel_path("matmul_tiled")) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gemmglossary run: "), err
    assert message in err


def test_a_define_that_is_not_a_number_is_bad_input(capsys):
    rc = main([kernel_path("matmul_simd_blocked"), "--name", "matmul_simd_blocked", "--define", "TM=two"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("gemmglossary run: -DTM='two' is not an integer"), err


def test_limits_are_stated_in_the_help(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "limits: A, B and C of at most 67,108,864 elements each" in out
    assert "on the emulator M*N*K of at most 2^33" in out


def test_forcing_metal_off_apple_is_exit_2(monkeypatch, capsys):
    from gemmglossary.runtime import metal_status

    if metal_status()[0]:
        pytest.skip("this machine has a Metal device")
    assert main([kernel_path("matmul_tiled"), "--name", "matmul_tiled", "--backend", "metal"]) == 2
    assert "needs an Apple GPU" in capsys.readouterr().err
