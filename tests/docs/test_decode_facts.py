"""The facts of the decode-path pages: gemv blocks, the quantized routing, bytes per FLOP.

The values below are worked out by hand: from matmul.cpp's gemv_axbpy and quantized.cpp's
QuantizedMatmul::eval_gpu at the pinned MLX tag (the routing itself is tested in
tests/mlx/test_quantized.py and tests/mlx/test_matmul.py), and from the arithmetic of
gemmglossary.traffic, which is checked here against the operands' sizes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gemmglossary import traffic
from gemmglossary.docs_hooks import facts
from gemmglossary.mlx import matmul as mm
from gemmglossary.mlx import quantized as mq

MIRROR = Path("/work/.mirror/ml-explore+mlx/repo")


@pytest.mark.parametrize("body,value", [
    # gemv: 4 simdgroups of 1 x 32 threads, 4 rows each, for 4096 outputs 8 simdgroups
    ("mlx.gemv K=1024 outputs=1024", "16"),
    ("mlx.gemv K=1024 outputs=4096 field=bm", "8"),
    ("mlx.gemv K=50 outputs=100 field=sm", "8"),
    ("mlx.gemv K=4096 outputs=100 field=bn", "8"),
    ("mlx.gemv K=4096 outputs=4096 transpose=true field=threadgroup", "(32, 16, 1)"),
    ("mlx.gemv K=4096 outputs=4096 transpose=true", "256"),
    ("mlx.gemv K=4096 outputs=4096 field=threadgroups", "128"),
    # quantized routing for x @ W.T, base M1 (gen 13): 14 rows for K, N <= 2048, 10 to 4096, 6 above
    ("mlx.qlimit K=2048 N=2048", "14"),
    ("mlx.qlimit K=4096 N=4096", "10"),
    ("mlx.qlimit K=4096 N=11008", "6"),
    ("mlx.qlimit K=4096 N=4096 device=d", "18"),
    ("mlx.qlimit K=4096 N=4096 gen=17", "25"),
    ("mlx.qkernel M=1 N=4096 K=4096", "qmv_fast"),
    ("mlx.qkernel M=1 N=4100 K=4096", "qmv"),
    ("mlx.qkernel M=1 N=4096 K=128", "qmv_quad"),
    ("mlx.qkernel M=4 N=4096 K=4096 gen=15", "qmv_wide"),
    ("mlx.qkernel M=9 N=4096 K=4096", "qmv_fast"),  # below the limit of 10, no qmv_wide before gen 15
    ("mlx.qkernel M=10 N=4096 K=4096 batch=2", "qmm_t"),
    ("mlx.qkernel M=10 N=4096 K=4096", "qmm_t_splitk"),
    ("mlx.qkernel M=3 N=4096 K=512 transpose=false", "qvm"),
    ("mlx.qkernel M=4 N=4096 K=512 transpose=false", "qmm_n"),
    ("mlx.qformat", "8"),
    ("mlx.qformat bits=8 field=fast_block", "256"),
    ("mlx.qformat bits=3 field=pack_factor", "8"),
    ("mlx.qformat field=bits", "2, 3, 4, 5, 6 or 8"),
    ("mlx.qformat field=group_sizes", "32, 64 or 128"),
    ("mlx.qconst name=qmv_rows", "8"),
    ("mlx.qconst name=qmv_quad_k", "64 or 128"),
    ("mlx.qconst name=qvm_matrix_rows", "4"),
    ("mlx.qconst name=qvm_split_k", "1024"),
    ("mlx.qconst name=qmm_nax_k", "64"),
    ("mlx.qconst name=qmv_wide_min_gen", "15"),
    ("mlx.qurl rule=batch_limit", mm.source_url(85, 145, path="mlx/backend/metal/quantized.cpp")),
    # the decode kernels' constants, as the pages read them
    ("kernel.value file=gemv.metal expr=STEP", "128"),
    ("kernel.value file=gemv.metal expr=STEP*4", "512"),
    ("kernel.value file=qmv4.metal expr=ROWS_PER_THREADGROUP", "8"),
    ("kernel.value file=reductions.metal expr=MAX_SIMDGROUPS*4", "128"),
    # bytes and FLOPs: 4096 x 4096 float16 gemv moves (16M + 8K) * 2 bytes for 32M FLOPs
    ("traffic op=gemv M=4096 K=4096 field=bytes", f"{(4096 * 4096 + 8192) * 2:,}"),
    ("traffic op=gemv M=4096 K=4096 field=flops", f"{2 * 4096 * 4096:,}"),
    ("traffic op=gemv M=4096 K=4096 dtype=float32 field=flop_per_byte", "0.5"),
    ("traffic op=gemm M=4096 N=4096 K=4096 field=flop_per_byte", "1,365"),
    ("traffic op=qmv N=4096 K=4096 field=MiB", "9.02"),
    ("traffic.machine field=read_gbps", "494.8"),
    ("traffic.machine field=gemm_tflops", "13.5"),
])
def test_decode_fact_values(body, value):
    assert facts.evaluate(body) == value


@pytest.mark.parametrize("body,message", [
    ("mlx.gemv K=0 outputs=4", "argument K= must be 1 to 2147483647, got 0"),
    ("mlx.qkernel M=1 N=64 K=64 bits=7", "bits must be 2, 3, 4, 5, 6 or 8 and group_size 32, 64 or 128"),
    ("mlx.qformat bits=7", "got bits=7"),
    ("mlx.qurl rule=nope", "rule must be one of"),
    ("traffic op=gemv K=8", "M must be at least 1"),
    ("traffic op=qmv N=8 K=100", "not a whole number of groups"),
    ("traffic op=gemv M=1 K=8 dtype=int8", "dtype must be one of"),
    ("traffic.machine", "needs field="),
])
def test_bad_decode_facts_are_errors(body, message):
    with pytest.raises(facts.FactError, match=re.escape(message)):
        facts.evaluate(body)


def test_traffic_is_the_operands_read_once():
    g = traffic.gemv(300, 200, "float32")
    assert (g.flops, g.bytes) == (2 * 300 * 200, 4 * (300 * 200 + 200 + 300))
    m = traffic.gemm(64, 32, 16, "bfloat16")
    assert (m.flops, m.bytes) == (2 * 64 * 32 * 16, 2 * (64 * 16 + 16 * 32 + 64 * 32))
    q = traffic.qmv(8, 128, bits=4, group_size=32)
    # 8 x 128 nibbles, 8 x 4 scales and biases in float16, x and y in float16
    assert q.bytes == 8 * 128 // 2 + 2 * 8 * 4 * 2 + (128 + 8) * 2
    m5 = traffic.MACHINE
    assert g.seconds_at() == g.bytes / m5.read_bytes_per_s
    assert g.flop_rate_at() == g.flop_per_byte * m5.read_bytes_per_s < m5.gemm_flop_per_s
    assert traffic.gemm(4096, 4096, 4096).flop_rate_at() == m5.gemm_flop_per_s  # past the ridge: capped


def test_machine_links_point_at_the_pinned_m5_gemm_readme():
    for url in (traffic.MACHINE.read_url, traffic.MACHINE.gemm_url):
        assert url.startswith("https://github.com/yaroslavvb/m5-gemm/blob/29414bebb522ddacaa009959f2bcdad9f5b3e5cf/README.md#L")


README_AT = {"read_url": "494.8 GB/s", "gemm_url": "**13.5**"}


@pytest.mark.skipif(not (Path("/work/.mirror/yaroslavvb+m5-gemm/repo")).exists(), reason="no m5-gemm mirror here")
def test_machine_figures_are_in_the_lines_they_cite():
    readme = subprocess.run(["git", "-C", "/work/.mirror/yaroslavvb+m5-gemm/repo", "show", "29414be:README.md"],
                            capture_output=True, text=True, check=True).stdout.split("\n")
    for field, text in README_AT.items():
        a, b = map(int, re.search(r"#L(\d+)-L(\d+)$", getattr(traffic.MACHINE, field)).groups())
        assert text in "\n".join(readme[a - 1:b]), field


#: The first line of each rule of quantized.py's LINES, at the pinned tag.
RULE_STARTS = {
    "batch_limit": "inline int get_qmv_batch_limit(", "fast_alignment": "inline int qmv_fast_k_alignment(",
    "qmv_quad": "void qmv_quad(", "qmv": "void qmv(", "qmv_fast_gate": "bool fast = N % bn == 0",
    "qmv_wide_gate": "// affine qmv_wide only beats qmv on gen-15+", "qvm": "void qvm(",
    "qmm_nax_gate": "bool has_nax_kernel =", "qmm_splitk": "void qmm_splitk(", "dispatch_qmv": "void dispatch_qmv(",
    "route": "void QuantizedMatmul::eval_gpu(", "fold_rows": "bool non_batched = w.ndim() == 2",
    "vector_limit": "int vector_limit = transpose_ ? get_qmv_batch_limit(K, N, d) : 4;",
    "qvm_split": "if (K < 1024) {",
}


def test_quantized_rule_lines_are_ordered_ranges():
    assert set(mq.LINES) == set(RULE_STARTS)
    for name, (start, end) in mq.LINES.items():
        assert 0 < start <= end, name
    assert mq.rule_url("qmv").endswith(f"/{mm.MLX_TAG}/mlx/backend/metal/quantized.cpp#L461-L535")


@pytest.mark.skipif(not MIRROR.exists(), reason="no MLX source mirror here (the lines were read from it)")
def test_quantized_rule_lines_start_where_they_say():
    text = subprocess.run(["git", "-C", str(MIRROR), "show", f"{mm.MLX_TAG}:{mq.HOST_PATH}"],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    for name, (start, end) in mq.LINES.items():
        assert RULE_STARTS[name] in text[start - 1], (name, text[start - 1])
