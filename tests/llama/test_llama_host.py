"""llama.cpp's host decisions as gemmglossary.llama restates them.

- Every range a rule follows is recorded in :data:`HOST_LINES` with the hash of its text at
  the pinned commit (read from the vendored file, so this runs everywhere): a new pin fails
  here until each changed range is read again, and a rule naming an unread range fails too.
- The routing of ``mul_mat`` at the shapes the host's thresholds separate, the parameters of
  each branch (read from ggml-metal-impl.h, checked against the numbers its lines state),
  the grid, the buffers and the threadgroup memory.
- The args structs are ggml-metal-impl.h's, filled field by field (a missing one refused).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from gemmglossary.llama import blocks, mul_mat, rows, source
from gemmglossary.llama.launch import Tensor

#: (file under ggml/src/ggml-metal/, first, last) -> sha256 prefix of those lines (joined with
#: "\n" plus a final "\n") of the pinned file. Each was read against the rule that names it.
HOST_LINES = {
    ("ggml-metal-ops.cpp", 2442, 2448): "c4d6fdd83e0d36f4",  # mul_mat.ratios
    ("ggml-metal-ops.cpp", 2452, 2480): "21d5adf7afcb0b83",  # mul_mat.mv_ext_gate
    ("ggml-metal-ops.cpp", 2489, 2520): "bdbfd7e79893334f",  # mul_mat.mv_ext_params
    ("ggml-metal-ops.cpp", 2545, 2551): "c383c51e3d945786",  # mul_mat.mv_ext_dispatch
    ("ggml-metal-device.cpp", 773, 784): "a8cf126b7791987c",  # mul_mat.mv_ext_pipeline
    ("ggml-metal-common.cpp", 35, 42): "64b9df000f828b92",  # mul_mat.use_mm
    ("ggml-metal-ops.cpp", 2552, 2552): "bad456070357753c",  # mul_mat.mm_branch
    ("ggml-metal-ops.cpp", 2583, 2597): "9c499bc59486df6a",  # mul_mat.mm_dispatch
    ("ggml-metal-device.cpp", 801, 831): "ed87e4ff542bfc55",  # mul_mat.mm_pipeline
    ("ggml-metal-device.cpp", 844, 851): "eef53cb29ade61ed",  # mul_mat.mm_tile
    ("ggml-metal-device.cpp", 878, 893): "8b99e7612d80fb71",  # mul_mat.mv_float
    ("ggml-metal-device.cpp", 905, 909): "cefc7450183171ef",  # mul_mat.mv_q4_0
    ("ggml-metal-device.cpp", 925, 930): "d1ed3f8c02328295",  # mul_mat.mv_q8_0
    ("ggml-metal-device.cpp", 947, 951): "1bcee9ce64b23745",  # mul_mat.mv_q4_K
    ("ggml-metal-device.cpp", 1069, 1083): "a64ad64077141857",  # mul_mat.mv_pipeline
    ("ggml-metal-ops.cpp", 2629, 2644): "f28061942198708c",  # mul_mat.mv_dispatch
    ("ggml-metal-ops.cpp", 1574, 1581): "44d08f34808979c2",  # rows.soft_max_alibi
    ("ggml-metal-ops.cpp", 1610, 1620): "c494b3fb08d81d74",  # rows.soft_max_nth
    ("ggml-metal-ops.cpp", 1626, 1641): "798a123a4ad73638",  # rows.soft_max_buffers
    ("ggml-metal-device.cpp", 461, 477): "a0b6ed92079ea1fe",  # rows.soft_max_pipeline
    ("ggml-metal-ops.cpp", 4139, 4154): "a667c5dd3a46f74e",  # rows.norm_args
    ("ggml-metal-ops.cpp", 4159, 4159): "c9ae5e5226bc2302",  # rows.norm_unfused
    ("ggml-metal-ops.cpp", 4228, 4235): "1fab836dd61cb60c",  # rows.norm_nth
    ("ggml-metal-ops.cpp", 4239, 4248): "b45f362fb8a41413",  # rows.norm_buffers
    ("ggml-metal-device.cpp", 2042, 2077): "f3dd8a1bf1ff9be3",  # rows.norm_pipeline
    ("ggml-metal-ops.cpp", 3876, 3903): "c2ace942a8a80554",  # rows.bin_args
    ("ggml-metal-ops.cpp", 3941, 3945): "faa9ff916a6d5a0c",  # rows.bin_c4
    ("ggml-metal-ops.cpp", 3947, 3965): "de1e0cd0386e7cb5",  # rows.bin_buffers
    ("ggml-metal-device.cpp", 1927, 1950): "079f1c2a7b871f96",  # rows.bin_pipeline
}


def _hash(path, a, b):
    return hashlib.sha256(("\n".join(source.lines(path, a, b)) + "\n").encode()).hexdigest()[:16]


def test_every_rule_names_a_range_that_was_read():
    named = {v for mod in (mul_mat, rows) for v in mod.LINES.values()}
    assert named - set(HOST_LINES) == set(), "rules follow ranges no one has read: add their hashes"
    assert set(HOST_LINES) - named == set(), "stale HOST_LINES entries"


@pytest.mark.parametrize("key", sorted(HOST_LINES), ids=lambda k: f"{k[0]}:{k[1]}-{k[2]}")
def test_host_range_is_unchanged_at_the_pinned_commit(key):
    assert _hash(*key) == HOST_LINES[key], f"{key[0]} lines {key[1]}-{key[2]} changed: read them again"


def test_links_name_the_pinned_commit():
    rev = source.pinned().rev
    assert len(rev) == 40
    assert source.url("ggml-metal-ops.cpp", 2552) == (
        f"https://github.com/ggml-org/llama.cpp/blob/{rev}/ggml/src/ggml-metal/ggml-metal-ops.cpp#L2552")


def _w(type_, n, k, batches=(1, 1)):
    rng = np.random.default_rng(0)
    if type_ in ("f32", "f16"):
        return Tensor.of(rng.normal(size=(*batches[::-1], n, k)).astype(np.float32 if type_ == "f32" else np.float16))
    return Tensor.quantized(blocks.random_blocks(rng, n, k, type_), type_, k)


def _x(m, k, batches=(1, 1)):
    return Tensor.of(np.zeros((*batches[::-1], m, k), np.float32))


@pytest.mark.parametrize("type_", ["f32", "f16", "q4_0", "q8_0"])
def test_route_by_rows(type_):
    w = _w(type_, 128, 4096)
    assert [mul_mat.route(w, _x(m, 4096)).branch for m in (1, 2, 8, 9, 64)] == \
        ["mul_mv", "mul_mv_ext", "mul_mv_ext", "mul_mm", "mul_mm"]


def test_k_quants_take_the_small_batch_kernel_from_4_rows():
    w = _w("q4_K", 128, 4096)
    assert [mul_mat.route(w, _x(m, 4096)).branch for m in (1, 2, 3, 4, 8, 9)] == \
        ["mul_mv", "mul_mv", "mul_mv", "mul_mv_ext", "mul_mv_ext", "mul_mm"]


def test_the_small_batch_kernel_needs_k_a_multiple_of_128_and_mm_k_of_64():
    assert mul_mat.route(_w("f32", 64, 96), _x(4, 96)).branch == "mul_mv"
    assert mul_mat.route(_w("f32", 64, 96), _x(16, 96)).branch == "mul_mm"
    assert mul_mat.route(_w("f32", 64, 32), _x(16, 32)).branch == "mul_mv"     # ne00 < 64
    no_mm = mul_mat.Device(has_simdgroup_mm=False)
    assert mul_mat.route(_w("f32", 64, 128), _x(16, 128), no_mm).branch == "mul_mv"


def test_decode_q4_0_at_4096():
    c = mul_mat.route(_w("q4_0", 4096, 4096), _x(1, 4096))
    assert (c.host_name, c.nsg, c.nr0, c.nr1, c.smem) == ("kernel_mul_mv_q4_0_f32", 2, 4, 1, 0)
    assert c.grid == (4096 // (4 * 2), 1, 1)  # nr0 rows per simdgroup, nsg simdgroups


def test_decode_q8_0_rows_belong_to_the_threadgroup():
    c = mul_mat.route(_w("q8_0", 4096, 4096), _x(1, 4096))
    assert (c.nsg, c.nr0, c.smem) == (4, 2, 32 * 4 * 2)
    assert c.grid == (4096 // 2, 1, 1)


def test_float_mv_variants():
    assert mul_mat.route(_w("f32", 8, 16), _x(1, 16)).host_name == "kernel_mul_mv_f32_f32_short"
    c = mul_mat.route(_w("f16", 8, 4096), _x(1, 4096))
    assert (c.host_name, c.nsg, c.nr0, c.smem) == ("kernel_mul_mv_f16_f32_4", 4, 2, 256)
    assert mul_mat.route(_w("f32", 8, 130), _x(1, 130)).host_name == "kernel_mul_mv_f32_f32"
    assert mul_mat.route(_w("f32", 8, 130), _x(1, 130)).nsg == 2


def test_mm_tile_grid_and_edges():
    full = mul_mat.route(_w("q4_0", 128, 256), _x(64, 256, (3, 1)))
    assert full.grid == (2, 2, 3) and full.nsg == 4 and (full.nr0, full.nr1) == (64, 32)
    fc = source.impl_constant("FC_MUL_MM")
    assert full.function_constants == {fc: False, fc + 1: False, fc + 2: 3, fc + 3: 1, fc + 4: 3, fc + 5: 1}
    assert full.smem == 4096 + 2048
    edge = mul_mat.route(_w("f32", 100, 80), _x(33, 80))
    assert edge.function_constants[fc] is True and edge.function_constants[fc + 1] is True
    assert edge.smem == 8192 and edge.grid == (2, 2, 1)


def test_mv_ext_parameters():
    c = mul_mat.route(_w("q4_0", 100, 512), _x(2, 512))
    assert c.host_name == "kernel_mul_mv_ext_q4_0_f32_r1_2" and c.nsg == 2
    fc = source.impl_constant("FC_MUL_MV")
    assert c.function_constants[fc + 1] == 16 and c.nr0 == 4 and c.grid == (25, 1, 1)
    c = mul_mat.route(_w("q4_0", 100, 384), _x(7, 384))
    assert c.function_constants[fc + 1] == 8 and c.nr1 == 4 and c.grid == (13, 2, 1)


def test_buffers_and_args():
    w, x = _w("q4_0", 64, 256), _x(1, 256, (2, 1))
    p = mul_mat.plan(w, x)
    assert p.launch.buffers[1] is w.data and p.launch.buffers[2] is x.data and p.launch.buffers[3] is p.out
    args = np.frombuffer(p.launch.buffers[0], source.kargs("mul_mv"))[0]
    assert (args["ne00"], args["ne01"], args["nb01"], args["ne12"], args["r2"], args["nr0"]) == \
        (256, 64, 256 // 32 * 18, 2, 2, 4)
    assert p.out.shape == (1, 2, 1, 64)


def test_args_struct_fields_are_all_given():
    with pytest.raises(TypeError, match="missing"):
        source.pack("mul_mm", ne00=1)
    assert source.kargs("mul_mm").itemsize == len(source.pack("mul_mm", **{f: 0 for f in source.kargs("mul_mm").names}))


def test_rows_host_choices():
    assert [rows.soft_max_threads((n, 1, 1, 1)) for n in (10, 128, 1024, 4100)] == [32, 32, 256, 256]
    assert rows.soft_max_threads((1024, 8, 1, 1)) == 32
    assert [rows.norm_threads(n) for n in (1, 25, 64, 1000, 5000)] == [32, 32, 64, 1024, 1024]
    x = Tensor.of(np.zeros((2, 3, 8), np.float32))
    launch, _ = rows.soft_max(x)
    assert launch.buffers[2] is x.data and launch.buffers[3] is x.data   # no mask, no sinks: src0 again
    assert launch.threadgroups == (3, 2, 1) and launch.host_name == "kernel_soft_max_f32_4"
    launch, _ = rows.rms_norm(x)
    assert launch.buffers[2] is x.data and launch.buffers[3] is x.data
    launch, _ = rows.add(x, Tensor.of(np.zeros((1, 1, 8), np.float32)))
    assert launch.threadgroups == (2, 6, 1) and launch.threads_per_threadgroup == (1, 1, 1)  # one row: rb
