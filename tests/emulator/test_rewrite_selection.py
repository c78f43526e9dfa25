"""An instantiation file is rewritten once per process, and each kernel compiled from it is
selected from that rewriting (emulator/rewrite.py: Rewriter.selected): the text, kernels and
function constants it gives are exactly those of rewriting the file for that kernel alone,
for every instantiation file in kernels/ (its first and last instantiation; those with more
than build.SMALL_FILE are the ones compiled one kernel at a time)."""

from __future__ import annotations

import pytest

from gemmglossary import paths, vendor
from gemmglossary.emulator import build, rewrite


@pytest.mark.parametrize("name", sorted(p.name for p in paths.kernels_dir().glob("mlx_*.metal")))
def test_a_selected_kernel_is_a_fresh_rewrite(name):
    vendor.ensure()
    path = paths.kernels_dir() / name
    pre = build.preprocess(path.read_text(), str(path), [str(paths.kernels_dir()), str(paths.vendor_dir())], None)
    rewrite._memo.clear()
    names = rewrite.rewrite(pre, str(path)).all_names
    for kernel in dict.fromkeys([names[0], names[-1]]):
        got = rewrite._rewritten(pre, str(path), None, False).selected({kernel})
        fresh = rewrite.Rewriter(pre, str(path), None, {kernel}).run()
        assert got.text == fresh.text, kernel
        assert got.kernels == fresh.kernels and got.function_constants == fresh.function_constants, kernel
        assert got.all_names == fresh.all_names
        # and what a compile gets: the values filled in from the one rewriting of the file
        assert rewrite.rewrite(pre, str(path), {}, {kernel}).text == rewrite._with_values(
            fresh, rewrite._rewritten(pre, str(path), None, False).fc_specs, {}, str(path)).text
    assert len(rewrite._memo) == 1  # the file was rewritten once
