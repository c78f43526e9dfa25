"""How llama.cpp's Metal host runs ``ggml_mul_mat(src0, src1)``: one kernel, picked by shape and type.

``dst = src1 @ src0ᵀ`` per batch: ``src0`` holds the weights, ``ne01`` rows of ``ne00`` values
(quantized or not), ``src1`` the activations, ``ne11`` rows of ``ne10 = ne00`` float values;
``dst`` is float32, ``ne11`` rows of ``ne01``. Batches broadcast: ``src1`` has ``r2 = ne12/ne02``
(and ``r3``) times as many as ``src0``, and batch ``i12`` reads weights batch ``i12 / r2``.

Restates ``ggml_metal_op_mul_mat`` (ggml-metal-ops.cpp), the pipeline getters it calls
(ggml-metal-device.cpp) and ``ggml_metal_op_mul_mat_use_mm`` (ggml-metal-common.cpp), at the
pinned commit, for a GPU with simdgroup matrices and without Metal 4 tensors (``has_tensor``:
the M5's path, which compiles ``mul_mm.metal`` with ``GGML_METAL_HAS_TENSOR``; not restated).
The three branches, in the host's order (:func:`route`):

1. ``mul_mv_ext``: float32 activations, ``ne00 % 128 == 0`` and a small batch of rows (2 to
   8; 4 to 8 for the K-quants): a few rows of src1 per threadgroup, reusing each weight.
2. ``mul_mm``: neither operand transposed, ``ne00 >= 64`` and more than 8 rows: the tiled
   simdgroup-matrix GEMM, a 64 x 32 output tile per threadgroup of 4 simdgroups.
3. ``mul_mv``: everything else, the decode path (one row of activations): ``nr0`` weight
   rows per simdgroup (per threadgroup for f32, f16 and q8_0), ``nsg`` simdgroups.

The Hadamard branch (``ggml_metal_op_mul_mat_use_fwht``) is taken only for a tensor its
graph marks with a hint; a plain product never has one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tiles import cdiv
from .launch import Launch, Tensor
from .source import COMMON, DEVICE, OPS, impl_constant, pack

#: The lines each rule follows: rule -> (file under ggml/src/ggml-metal/, first, last).
LINES = {
    "ratios": (OPS, 2442, 2448),          # ne00 == ne10, r2 = ne12/ne02, r3 = ne13/ne03
    "mv_ext_gate": (OPS, 2452, 2480),     # the small-batch kernels: which types, which ne11
    "mv_ext_params": (OPS, 2489, 2520),   # nsg = 2, nxpsg, r0ptg, r1ptg by ne11
    "mv_ext_dispatch": (OPS, 2545, 2551),
    "mv_ext_pipeline": (DEVICE, 773, 784),
    "use_mm": (COMMON, 35, 42),           # not transposed, simdgroup mm, ne00 >= 64, ne11 > 8
    "mm_branch": (OPS, 2552, 2552),
    "mm_dispatch": (OPS, 2583, 2597),     # buffers 0-3, smem at 0, grid (ne11/nr1, ne01/nr0, batches)
    "mm_pipeline": (DEVICE, 801, 831),    # bc_inp, bc_out, the function constants
    "mm_tile": (DEVICE, 844, 851),        # nr0 = 64, nr1 = 32, smem, nsg = 4
    "mv_float": (DEVICE, 878, 893),       # f32/f16: _short below 32, else nsg, nr0 = 2, _4
    "mv_q4_0": (DEVICE, 905, 909),
    "mv_q8_0": (DEVICE, 925, 930),
    "mv_q4_K": (DEVICE, 947, 951),
    "mv_pipeline": (DEVICE, 1069, 1083),  # the name, the function constants
    "mv_dispatch": (OPS, 2629, 2644),     # buffers, smem, nr0 per threadgroup or per simdgroup
}

#: Types of the small-batch kernels (mv_ext_gate): from 2 rows, and the K-quants from 4.
MV_EXT_TYPES = ("f32", "f16", "bf16", "q1_0", "q2_0", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "mxfp4", "iq4_nl")
MV_EXT_K_TYPES = ("q4_K", "q5_K", "q6_K", "q2_K", "q3_K")
#: mv_dispatch: the types whose nr0 rows belong to the whole threadgroup, not to each simdgroup.
MV_ROWS_PER_THREADGROUP = ("f32", "f16", "bf16", "q8_0")


@dataclass(frozen=True)
class Device:
    """The device properties the routing reads (``props_dev``)."""

    has_simdgroup_mm: bool = True
    has_tensor: bool = False


@dataclass(frozen=True)
class Choice:
    """What the host decided: the kernel family, the pipeline and its parameters."""

    branch: str                       # "mul_mv_ext", "mul_mm" or "mul_mv"
    host_name: str                    # the pipeline's base name (the function in the .metal file)
    function_constants: dict[int, object]
    nsg: int                          # simdgroups per threadgroup
    nr0: int                          # src0 rows (output columns) per threadgroup or simdgroup
    nr1: int                          # src1 rows per threadgroup
    smem: int                         # threadgroup memory at index 0, bytes
    grid: tuple[int, int, int]        # threadgroups


def _ratios(w: Tensor, x: Tensor) -> tuple[int, int]:
    if w.ne[0] != x.ne[0]:
        raise ValueError(f"mul_mat: ne00 = {w.ne[0]} and ne10 = {x.ne[0]} differ")
    if x.ne[2] % w.ne[2] or x.ne[3] % w.ne[3]:
        raise ValueError(f"mul_mat: src1's batches {x.ne[2:]} are not a multiple of src0's {w.ne[2:]}")
    return x.ne[2] // w.ne[2], x.ne[3] // w.ne[3]


def use_mv_ext(w: Tensor, x: Tensor) -> bool:
    ne00, ne11 = w.ne[0], x.ne[1]
    return x.type == "f32" and ne00 % 128 == 0 and (
        (w.type in MV_EXT_TYPES and 2 <= ne11 <= 8) or (w.type in MV_EXT_K_TYPES and 4 <= ne11 <= 8))


def use_mm(w: Tensor, x: Tensor, device: Device) -> bool:
    # contiguous tensors are never transposed (nb[0] > nb[1]) here
    return device.has_simdgroup_mm and w.ne[0] >= 64 and x.ne[1] > 8


def _mv_ext(w: Tensor, x: Tensor, r2: int, r3: int) -> Choice:
    ne00, ne01, ne11 = w.ne[0], w.ne[1], x.ne[1]
    nsg = 2
    nxpsg = 16 if ne00 % 256 == 0 and ne11 < 3 else 8 if ne00 % 128 == 0 else 4
    r0ptg = (32 // nxpsg) * nsg
    r1ptg = {2: 2, 3: 3, 6: 3, 4: 4, 7: 4, 8: 4, 5: 5}[ne11]
    fc = impl_constant("FC_MUL_MV")
    return Choice("mul_mv_ext", f"kernel_mul_mv_ext_{w.type}_{x.type}_r1_{r1ptg}",
                  {fc + 0: nsg, fc + 1: nxpsg, fc + 2: x.ne[2], fc + 3: r2, fc + 4: r3},
                  nsg, r0ptg, r1ptg, 0, (cdiv(ne01, r0ptg), cdiv(ne11, r1ptg), x.ne[2] * x.ne[3]))


def _mm(w: Tensor, x: Tensor, r2: int, r3: int, device: Device) -> Choice:
    if device.has_tensor:
        raise NotImplementedError("mul_mm with Metal 4 tensors (has_tensor, the M5) is not restated here")
    bc_inp = w.ne[0] % 32 != 0
    bc_out = w.ne[1] % 64 != 0 or x.ne[1] % 32 != 0    # dst's ne0 = ne01, ne1 = ne11
    fc = impl_constant("FC_MUL_MM")
    nr0, nr1 = 64, 32
    nsg = impl_constant("N_MM_SIMD_GROUP_X") * impl_constant("N_MM_SIMD_GROUP_Y")
    return Choice("mul_mm", f"kernel_mul_mm_{w.type}_{x.type}",
                  {fc + 0: bc_inp, fc + 1: bc_out, fc + 2: x.ne[2], fc + 3: x.ne[3], fc + 4: r2, fc + 5: r3},
                  nsg, nr0, nr1, 8192 if bc_out else 4096 + 2048,
                  (cdiv(x.ne[1], nr1), cdiv(w.ne[1], nr0), x.ne[2] * x.ne[3]))


def _mv(w: Tensor, x: Tensor, r2: int, r3: int) -> Choice:
    ne00, ne01, ne11 = w.ne[0], w.ne[1], x.ne[1]
    nr1, smem, suffix = 1, 0, ""
    if w.type in ("f32", "f16", "bf16"):
        if ne00 < 32:
            nsg, nr0, suffix = 1, 32, "_short"
        else:
            nsg, nr0 = min(4, (ne00 + 127) // 128), 2
            smem = 32 * 4 * nr0
            suffix = "_4" if ne00 % 4 == 0 else ""
    elif w.type in ("q4_0", "q8_0", "q4_K"):
        tag = w.type.upper()
        nsg, nr0 = impl_constant(f"N_SG_{tag}"), impl_constant(f"N_R0_{tag}")
        if w.type == "q8_0":
            smem = 32 * 4 * nr0
    else:
        raise NotImplementedError(f"mul_mv of {w.type}: only f32, f16, q4_0, q8_0 and q4_K are restated here")
    fc = impl_constant("FC_MUL_MV")
    per_tg = nr0 if w.type in MV_ROWS_PER_THREADGROUP else nr0 * nsg
    return Choice("mul_mv", f"kernel_mul_mv_{w.type}_{x.type}{suffix}",
                  {fc + 0: nsg, fc + 2: x.ne[2], fc + 3: r2, fc + 4: r3, fc + 5: False},
                  nsg, nr0, nr1, smem, (cdiv(ne01, per_tg), cdiv(ne11, nr1), x.ne[2] * x.ne[3]))


def route(w: Tensor, x: Tensor, device: Device = Device()) -> Choice:
    """The host's choice for ``mul_mat(w, x)``, its branches in its order."""
    r2, r3 = _ratios(w, x)
    if use_mv_ext(w, x):
        return _mv_ext(w, x, r2, r3)
    if use_mm(w, x, device):
        return _mm(w, x, r2, r3, device)
    return _mv(w, x, r2, r3)


def _args(choice: Choice, w: Tensor, x: Tensor, d: Tensor, r2: int, r3: int) -> bytes:
    (ne00, ne01, ne02, _), (nb00, nb01, nb02, nb03) = w.ne, w.nb
    (ne10, ne11, ne12, _), (nb10, nb11, nb12, nb13) = x.ne, x.nb
    ne0, ne1 = d.ne[0], d.ne[1]
    if choice.branch == "mul_mm":
        return pack("mul_mm", ne00=ne00, ne02=ne02, nb01=nb01, nb02=nb02, nb03=nb03, ne12=ne12, nb10=nb10,
                    nb11=nb11, nb12=nb12, nb13=nb13, ne0=ne0, ne1=ne1, r2=r2, r3=r3)
    common = dict(ne00=ne00, ne01=ne01, ne02=ne02, nb00=nb00, nb01=nb01, nb02=nb02, nb03=nb03, ne10=ne10,
                  ne11=ne11, ne12=ne12, nb10=nb10, nb11=nb11, nb12=nb12, nb13=nb13, ne0=ne0, ne1=ne1, r2=r2, r3=r3)
    if choice.branch == "mul_mv_ext":
        return pack("mul_mv_ext", **common)
    return pack("mul_mv", nr0=choice.nr0, **common)


@dataclass
class Plan:
    choice: Choice
    launch: Launch
    out: np.ndarray

    @property
    def launches(self) -> list[Launch]:
        return [self.launch]

    @property
    def host_names(self) -> list[str]:
        return [self.launch.host_name]

    def run(self, **options) -> np.ndarray:
        self.launch.run(**options)
        return self.out


def plan(w: Tensor, x: Tensor, device: Device = Device()) -> Plan:
    """The dispatch of ``mul_mat(w, x)``: buffers 0 (args), 1 (src0), 2 (src1), 3 (dst)."""
    if x.type != "f32":
        raise NotImplementedError("src1 is float32 here (the activations llama.cpp's graphs pass)")
    choice = route(w, x, device)
    r2, r3 = _ratios(w, x)
    out = np.zeros((x.ne[3], x.ne[2], x.ne[1], w.ne[1]), np.float32)
    d = Tensor.of(out)
    source = "mul_mm.metal" if choice.branch == "mul_mm" else "mul_mv.metal"
    launch = Launch(source, choice.host_name, {0: _args(choice, w, x, d, r2, r3), 1: w.data, 2: x.data, 3: out},
                    choice.grid, (32, choice.nsg, 1), choice.function_constants,
                    None if choice.branch == "mul_mv_ext" else choice.smem)  # mv_ext sets no threadgroup memory
    return Plan(choice, launch, out)


def reference(w: Tensor, x: Tensor) -> np.ndarray:
    """``src1 @ src0ᵀ`` in float64, batches broadcast as the kernels broadcast them."""
    r2, r3 = _ratios(w, x)
    wv = w.values().astype(np.float64).reshape(w.ne[3], w.ne[2], w.ne[1], w.ne[0])
    xv = x.values().astype(np.float64).reshape(x.ne[3], x.ne[2], x.ne[1], x.ne[0])
    wb = np.repeat(np.repeat(wv, r3, axis=0), r2, axis=1)
    return xv @ np.swapaxes(wb, -1, -2)
