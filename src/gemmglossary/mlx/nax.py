"""Host side of MLX's NAX GEMM: ``steel_gemm_fused_nax``, the fused kernel for neural accelerators.

MLX takes this kernel instead of the steel ``gemm`` when ``is_nax_available()`` (an
architecture of generation 17, or 18 for phones, and macOS 26.2) and the product is not
complex, not float32 with TF32 disabled, and not a split-K case (:func:`.matmul.route`, ``steel_matmul_axpby`` in
``mlx/backend/metal/matmul.cpp``). Its host function, ``steel_matmul_regular_axpby_nax``,
binds the same buffers, ``GEMMParams`` and function constants as the steel kernel, so the
planning is :func:`.steel.plan_fused`'s; what differs is said once in :mod:`.matmul`: the
tile (:func:`.matmul.nax_config`: 128×128×512 with 4×4 simdgroups, or 64×128×256 / ×64
with 2×4 on device classes ``s``, ``c`` and ``d``), the ``swizzle_log``
(:func:`.matmul.nax_swizzle_log`) and the kernel name.

The kernel is MLX's, compiled from ``kernels/mlx_steel_gemm_nax.metal``; on the emulator
its ``matmul2d`` runs in the shim of Metal 4 tensor ops (``emulator/shim/mslemu_tensor_ops.h``).
"""

from __future__ import annotations

import numpy as np

from ..paths import kernels_dir, vendor_dir
from . import matmul, steel
from .launch import dtype_name

#: Element types of the instantiations in kernels/mlx_steel_gemm_nax.metal, by numpy's name.
DTYPES = ("float16", "bfloat16")
#: (BM, BN, BK, WM, WN) instantiated there: every tile :func:`.matmul.nax_config` returns.
CONFIGS = ((128, 128, 512, 4, 4), (64, 128, 256, 2, 4), (64, 128, 64, 2, 4))
#: The device :func:`plan` assumes: a base chip of the first generation with NAX.
DEFAULT_DEVICE = matmul.Device("g", matmul.NAX_MIN_GENERATION)


def source_path():
    return kernels_dir() / "mlx_steel_gemm_nax.metal"


def include_dirs():
    return [vendor_dir()]


def plan(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: float = 1.0,
         beta: float = 0.0, device: matmul.Device = DEFAULT_DEVICE) -> steel.SteelLaunch:
    """Plan D = alpha·(A @ B) + beta·C with MLX's ``steel_gemm_fused_nax`` on ``device``.

    Operands as in :func:`.steel.plan` (float16 or bfloat16). The tile is the one MLX's
    host code picks for this device and shape; whether MLX would send this product to
    this kernel at all (and not to split-K) is :func:`.matmul.route`'s question.
    """
    if not device.nax_available:
        raise matmul.HostError(f"device class {device.letter!r}, generation {device.generation}: "
                               "MLX's is_nax_available() is false there, so it never dispatches this kernel")
    if a.dtype != b.dtype or dtype_name(a.dtype) not in DTYPES:
        raise TypeError(f"A and B must both be float16 or bfloat16 (the instantiations in "
                        f"{source_path().name}), got {a.dtype} and {b.dtype}")
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"cannot multiply shapes {a.shape} and {b.shape}")
    M, N, K = a.shape[-2], b.shape[-1], a.shape[-1]
    config = matmul.nax_config(device, M, N, K)
    return steel.plan_fused(a, b, c, alpha=alpha, beta=beta, config=config,
                            swizzle_log=matmul.nax_swizzle_log(matmul.cdiv(M, config.bm), device), nax=True)
