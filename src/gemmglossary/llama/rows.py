"""How llama.cpp's Metal host runs the row operations beside a matmul: soft_max, rms_norm, add.

Each is one threadgroup per row (``ne01 x ne02 x ne03`` threadgroups), its threads striding
along the row; the reductions go through ``simd_sum``/``simd_max`` and 32 floats of
threadgroup memory. Restates ``ggml_metal_op_soft_max``, ``ggml_metal_op_norm`` (the unfused
rms_norm) and ``ggml_metal_op_bin`` (the unfused add) of ggml-metal-ops.cpp, with their
pipeline getters in ggml-metal-device.cpp, at the pinned commit.

Two host habits worth knowing, both restated:

- A missing operand is bound as ``src0`` again: soft_max without a mask binds src0 at index 2
  (and at 3 without attention sinks), rms_norm binds src0 at 2 and 3 for the operands of the
  fusions it did not make. The kernel tells "absent" by comparing the pointers
  (``src1 != src0``), so the two bindings must be one buffer (the emulator keeps the alias).
- ``_4`` kernels read float4s when the row length is a multiple of 4; the host then counts
  the row in float4s (rms_norm's ``ne00_t``, add's ``ne00/4``).
"""

from __future__ import annotations

import math

import numpy as np

from .launch import Launch, Tensor
from .source import DEVICE, OPS, impl_constant, pack

LINES = {
    "soft_max_alibi": (OPS, 1574, 1581),       # scale, max_bias; n_head_log2, m0, m1
    "soft_max_nth": (OPS, 1610, 1620),         # 32 threads, doubled while the grid is small
    "soft_max_buffers": (OPS, 1626, 1641),     # src0 again for a missing mask or sinks; the grid
    "soft_max_pipeline": (DEVICE, 461, 477),   # _4 suffix, the mask's type, smem
    "norm_args": (OPS, 4139, 4154),            # ne00_t in float4s, nef/nbf of the fused operands
    "norm_unfused": (OPS, 4159, 4159),         # bid_fuse = { src0, src0 }
    "norm_nth": (OPS, 4228, 4235),
    "norm_buffers": (OPS, 4239, 4248),
    "norm_pipeline": (DEVICE, 2042, 2077),
    "bin_args": (OPS, 3876, 3903),
    "bin_c4": (OPS, 3941, 3945),               # row lengths in float4s for the _4 kernel
    "bin_buffers": (OPS, 3947, 3965),          # buffers; one thread per element, or rows
    "bin_pipeline": (DEVICE, 1927, 1950),      # _4, rb (one broadcast row), cb (column broadcast)
}

#: ``maxTotalThreadsPerThreadgroup`` the host reads from the pipeline
#: (``ggml_metal_pipeline_max_theads_per_threadgroup``): Metal reports it per pipeline and
#: device; 1024 is the most an Apple GPU allows and what kernels without a threadgroup-size
#: attribute report there.
MAX_THREADS = 1024


# ----------------------------------------------------------------------------- soft_max

def soft_max_threads(ne: tuple[int, int, int, int]) -> int:
    ne00, ne01, ne02, ne03 = ne
    n = ne00 // 4 if ne00 % 4 == 0 else ne00
    nth = 32
    while nth < n and nth * ne01 * ne02 * ne03 < 256:
        nth *= 2
    return nth


def soft_max(x: Tensor, mask: Tensor | None = None, *, scale: float = 1.0, max_bias: float = 0.0):
    """``ggml_soft_max_ext(x, mask, scale, max_bias)`` without sinks: (launch, out)."""
    if x.type != "f32":
        raise TypeError("soft_max takes float32 rows")
    n_head = x.ne[2]
    n_head_log2 = 1 << int(math.floor(math.log2(n_head)))
    m0 = np.float32(2.0) ** np.float32(-max_bias / n_head_log2)
    m1 = np.float32(2.0) ** np.float32(-(max_bias / 2.0) / n_head_log2)
    out = np.zeros_like(x.data)
    d = Tensor.of(out)
    m = mask or x  # for the args only: the kernel never reads them without a mask
    args = pack("soft_max", ne00=x.ne[0], ne01=x.ne[1], ne02=x.ne[2], nb01=x.nb[1], nb02=x.nb[2], nb03=x.nb[3],
                ne11=m.ne[1], ne12=m.ne[2], ne13=m.ne[3], nb11=m.nb[1], nb12=m.nb[2], nb13=m.nb[3],
                nb1=d.nb[1], nb2=d.nb[2], nb3=d.nb[3], scale=scale, max_bias=max_bias, m0=m0, m1=m1,
                n_head_log2=n_head_log2)
    suffix = "_4" if x.ne[0] % 4 == 0 else ""
    name = f"kernel_soft_max_{mask.type if mask else 'f32'}{suffix}"
    buffers = {0: args, 1: x.data, 2: mask.data if mask else x.data, 3: x.data, 4: out}
    return Launch("softmax.metal", name, buffers, x.ne[1:], (soft_max_threads(x.ne), 1, 1),
                  threadgroup_memory=32 * 4), out


def soft_max_reference(x: np.ndarray, mask: np.ndarray | None = None, scale: float = 1.0) -> np.ndarray:
    """float64 softmax of ``x * scale + mask`` (the mask broadcast over batches)."""
    z = x.astype(np.float64) * scale
    if mask is not None:
        m = mask.astype(np.float64)[..., :z.shape[-2], :]
        z = z + np.broadcast_to(m, z.shape) if m.ndim == z.ndim else z + m
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ------------------------------------------------------------------------------ rms_norm

def norm_threads(ne00_t: int, max_threads: int = MAX_THREADS) -> int:
    nth = 32
    while nth < ne00_t and nth < max_threads:
        nth *= 2
    return min(nth, max_threads, (ne00_t + 31) // 32 * 32)


def rms_norm(x: Tensor, eps: float = 1e-6):
    """``ggml_rms_norm(x, eps)``, unfused: (launch, out)."""
    if x.type != "f32":
        raise TypeError("rms_norm takes float32 rows")
    out = np.zeros_like(x.data)
    d = Tensor.of(out)
    ne00 = x.ne[0]
    ne00_t = ne00 // 4 if ne00 % 4 == 0 else ne00
    args = pack("norm", ne00=ne00, ne00_t=ne00_t, nb1=d.nb[1], nb2=d.nb[2], nb3=d.nb[3], eps=eps,
                nef1=[x.ne[1]], nef2=[x.ne[2]], nef3=[x.ne[3]], nbf1=[x.nb[1]], nbf2=[x.nb[2]], nbf3=[x.nb[3]],
                scale=1.0)
    name = "kernel_rms_norm_f32" + ("_4" if ne00 % 4 == 0 else "")
    buffers = {0: args, 1: x.data, 2: x.data, 3: x.data, 4: out}
    return Launch("norm.metal", name, buffers, x.ne[1:], (norm_threads(ne00_t), 1, 1),
                  {impl_constant("FC_NORM") + 0: False}, threadgroup_memory=32 * 4), out


def rms_norm_reference(x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)


# ----------------------------------------------------------------------------------- add

def add(a: Tensor, b: Tensor):
    """``ggml_add(a, b)``: ``b`` broadcast to ``a`` along every dim where it has 1 (or a divisor):
    (launch, out)."""
    if a.type != b.type or a.type not in ("f32", "f16"):
        raise TypeError("add of two float32 or two float16 tensors here")
    out = np.zeros_like(a.data)
    d = Tensor.of(out)
    c4 = a.ne[0] % 4 == 0 and b.ne[0] % 4 == 0
    cb = a.ne[0] != b.ne[0]
    rb = b.rows() == 1 and math.prod(d.ne) < 65536  # both contiguous here
    ne00, ne10, ne0 = (a.ne[0] // 4, b.ne[0] // 4, d.ne[0] // 4) if c4 else (a.ne[0], b.ne[0], d.ne[0])
    args = pack("bin", ne00=ne00, ne01=a.ne[1], ne02=a.ne[2], ne03=a.ne[3], nb00=a.nb[0], nb01=a.nb[1],
                nb02=a.nb[2], nb03=a.nb[3], ne10=ne10, ne11=b.ne[1], ne12=b.ne[2], ne13=b.ne[3], nb10=b.nb[0],
                nb11=b.nb[1], nb12=b.nb[2], nb13=b.nb[3], ne0=ne0, ne1=d.ne[1], ne2=d.ne[2], ne3=d.ne[3],
                nb0=d.nb[0], nb1=d.nb[1], nb2=d.nb[2], nb3=d.nb[3], offs=0, o1=[0])
    name = f"kernel_bin_fuse_{a.type}_{b.type}_{d.type}" + ("_4" if c4 else "")
    fc = impl_constant("FC_BIN")
    constants = {fc + 0: 0, fc + 1: 1, fc + 2: rb, fc + 3: cb}
    if rb:
        grid, tg = (ne0, d.rows(), 1), (1, 1, 1)
    else:
        nth = 1
        while 2 * nth < ne0 and nth < min(256, MAX_THREADS):
            nth *= 2
        grid, tg = a.ne[1:], (nth, 1, 1)
    buffers = {0: args, 1: a.data, 2: b.data, 3: out}
    return Launch("binbcast.metal", name, buffers, grid, tg, constants), out
