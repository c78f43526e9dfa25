"""``gemmglossary bench metal``: off Apple it declines (exit 0); the plot is drawn anywhere."""

from __future__ import annotations

import pytest

from gemmglossary.bench import metal as bench_metal
from gemmglossary.runtime import metal_status
from metal_gate import require_metal


def test_off_apple_says_it_cannot_measure(capsys):
    if metal_status()[0]:
        pytest.skip("this machine has an Apple GPU: the benchmark would really run")
    assert bench_metal.main([]) == 0
    out = capsys.readouterr().out
    assert "cannot measure GPU speed here" in out and "needs an Apple GPU (Metal)" in out


def test_plot_writes_a_png(tmp_path):
    out = tmp_path / "plots" / "bench.png"
    bench_metal.plot({"mx.matmul": {1024: 5.0, 2048: 7.5, 4096: 8.0},
                      "tiled_gemm": {1024: 3.0, 2048: 5.0, 4096: 6.1}}, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.metal
def test_bench_runs_on_apple(tmp_path, capsys):
    require_metal()
    out = tmp_path / "bench.png"
    assert bench_metal.main(["--sizes", "256", "--repeats", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "mx.matmul" in text and "!" not in text.split("(! =")[0]
    assert out.exists()


def test_routed_from_the_cli(capsys):
    from gemmglossary.cli import main as cli_main

    if metal_status()[0]:
        pytest.skip("this machine has an Apple GPU: the benchmark would really run")
    assert cli_main(["bench", "metal"]) == 0
    assert "cannot measure GPU speed here" in capsys.readouterr().out
