"""The decode rows of `gemmglossary bench emulator` (qmv, gemv) are MLX's kernels, checked.

Run at 512 × 512 so that they reuse kernels test_quantized and test_gemv compile; the
benchmark itself runs 4096 × 4096.
"""

from __future__ import annotations

import io

import pytest

from gemmglossary import bench
from gemmglossary.bench import matvec




def test_products_are_mlx_kernels():
    names = {name: matvec.build(name, 512).plan.host_names for name in matvec.PRODUCTS}
    assert names == {"qmv": ["affine_qmv_fast_float_gs_64_b_4_batch_0"],
                     "llama_q4_0": ["kernel_mul_mv_q4_0_f32"],
                     "gemv": ["gemv_float32_bm4_bn1_sm1_sn32_tm4_tn4_nc0_axpby0"]}
    assert matvec.build("gemv").plan.host_names == ["gemv_float32_bm8_bn1_sm1_sn32_tm4_tn4_nc0_axpby0"]


def test_rows_are_timed_and_checked():
    rows = matvec.bench(["qmv", "gemv"], repeats=1, n=512)
    assert [r[0] for r in rows] == ["qmv 4-bit 512×512", "gemv 512×512"]
    assert all(r[-1] for r in rows), rows
    assert all(r[2] > 0 and r[3] > 0 for r in rows)


def test_a_product_the_emulator_cannot_run_is_reported(monkeypatch):
    from gemmglossary.emulator import CompileError
    from gemmglossary.mlx.launch import Launch

    def fail(self):
        raise CompileError("some.h:1: error: not today")
    monkeypatch.setattr(Launch, "kernel", fail)
    out = io.StringIO()
    rows = bench.bench_matvec(["gemv"], repeats=1, out=out)
    assert rows[0][2] is None and not rows[0][-1]
    assert "not run: some.h:1: error: not today" in out.getvalue()


def test_unknown_product_is_refused():
    with pytest.raises(ValueError, match="unknown product 'qvx'"):
        matvec.build("qvx", 8)
