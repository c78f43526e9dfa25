"""Facts added for the entries of issue 15: ``kernel.value`` (arithmetic over a first-party
kernel's constants) and the split-K / NAX thresholds of ``mlx.const``.

The constants are checked against the rules that use them (a product on each side of each
threshold), so a fact cannot drift from the routing it describes.
"""

from __future__ import annotations

import pytest

from gemmglossary.docs_hooks import facts
from gemmglossary.kernels import KERNELS
from gemmglossary.mlx import matmul as mm


def test_kernel_value_reads_the_kernel_constants_with_defines():
    c = KERNELS["tiled_gemm_db"].constants({"BK": 32})
    assert facts.evaluate("kernel.value file=tiled_gemm_db.metal expr=BM*BK define=BK:32") == str(c["BM"] * 32)
    assert facts.evaluate("kernel.value file=tiled_gemm.metal expr=THREADS") == "128"
    assert facts.evaluate("kernel.value file=tiled_gemm_db.metal expr=(2*(BM*BK+BK*BN)+BM*BN)*4 unit=KiB") == "32"
    assert facts.evaluate("kernel.value file=tiled_gemm.metal expr=(BM*BK+BK*BN+BM*BN)*4 unit=KiB") == "24"


@pytest.mark.parametrize("body,message", [
    ("kernel.value file=nope.metal expr=1", "file must name a kernel file"),
    ("kernel.value file=../README.md expr=1", "file must name a kernel file"),
    ("kernel.value file=tiled_gemm.metal expr=NOPE", "unknown name 'NOPE'"),
    ("kernel.value file=tiled_gemm.metal expr=BK define=XX:1", "has no -D constant XX"),
    ("kernel.value file=tiled_gemm.metal expr=BK define=BK", "define must be NAME:VALUE"),
    ("kernel.value file=tiled_gemm.metal", "needs expr="),
])
def test_bad_kernel_values_are_errors(body, message):
    with pytest.raises(facts.FactError, match=message):
        facts.evaluate(body)


def const(name: str) -> int:
    return int(facts.evaluate(f"mlx.const name={name}"))


def test_splitk_constants_are_the_rules():
    narrow = const("splitk_narrow")
    assert mm.splitk_plan(narrow - 1, narrow, 4096).config.as_tuple[:2] == (16, 32)
    lo, hi = const("splitk_min_partitions"), const("splitk_max_partitions")
    assert mm.splitk_plan(64, 64, 128).partitions == lo      # few K steps per tile: the floor
    assert mm.splitk_plan(16, 16, 1 << 16).partitions == hi  # many: the ceiling


def test_nax_constants_are_the_rules():
    ratio, small, small_ratio = const("nax_splitk_ratio"), const("nax_splitk_small"), const("nax_splitk_small_ratio")
    big = 2 * small
    assert mm.takes_nax_splitk(big, big, ratio * big, 1, True)
    assert not mm.takes_nax_splitk(big, big, ratio * big - 1, 1, True)
    assert mm.takes_nax_splitk(small, small, small_ratio * small + 1, 1, True)
    assert not mm.takes_nax_splitk(small, small, small_ratio * small, 1, True)
    few, scd = const("nax_swizzle_few_rows"), const("nax_swizzle_scd")
    g, s = mm.Device("g", 17), mm.Device("s", 17)
    assert (mm.nax_swizzle_log(few, g), mm.nax_swizzle_log(few + 1, g), mm.nax_swizzle_log(1, s)) == (0, 1, scd)
