"""One Metal dispatch as MLX's host code encodes it, and the dispatches one MLX op makes.

A :class:`Launch` holds what a ``compute_encoder`` receives before ``dispatch_*``: the
kernel's host name (in one of our ``kernels/mlx_*.metal`` instantiation files), the
function constants, the buffers by ``[[buffer(n)]]`` index (an index MLX never sets is
absent: the buffer stays unbound, as on the GPU), the threadgroup size and either the
number of threadgroups (``dispatch_threadgroups``) or of threads (``dispatch_threads``).
A :class:`Plan` is the ordered list of launches of one op and the array that ends up
holding its result; intermediate buffers are numpy arrays shared between launches.

Also here, because several families use them: MLX's two spellings of a dtype in kernel
names (``type_to_name`` and ``get_type_string`` of ``mlx/backend/metal/utils.h``), and the
GPU the host modules assume when the caller names none.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..optional import require, require_installed
from ..paths import kernels_dir, vendor_dir
from .matmul import Device

#: What needs ml_dtypes (the site's and the tests': an installed emulator runs
#: gg.metal_kernel without it).
NEEDS_ML_DTYPES = "gemmglossary.mlx, MLX's kernels with their bfloat16 references,"
# Checked here, imported at the first use of bfloat16: importing ml_dtypes registers its
# types with numpy, 0.56 s of every process that imports this module (each snippet's
# kernel, each build), and most of them never meet a bfloat16 array. No array can be one
# before ml_dtypes is imported: it is what makes them.
require_installed("ml_dtypes", NEEDS_ML_DTYPES)

#: The GPU every host module assumes unless told otherwise: a base M1 (class g, generation 13):
#: no NAX, no wide GEMV, the qmv batch limits of generation 13.
DEFAULT_DEVICE = Device("g", 13)


@functools.cache
def bfloat16_dtype() -> np.dtype:
    """numpy's name for bfloat16 (numpy has none of its own; ml_dtypes provides it). Also
    this module's ``bfloat16``."""
    return np.dtype(require("ml_dtypes", NEEDS_ML_DTYPES).bfloat16)


def __getattr__(name: str):
    if name == "bfloat16":
        return bfloat16_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def dtype_name(dtype) -> str:
    """numpy's name of `dtype` (a dtype, a scalar type or a name): "bfloat16" for
    ml_dtypes' bfloat16, whether or not ml_dtypes has been imported yet."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        return dtype
    return np.dtype(dtype).name


#: MLX's ``type_to_name``, by numpy's name of the dtype: the dtype as it appears in gemv,
#: steel, softmax and reduce names.
TYPE_TO_NAME = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "int32": "int32",
                "int64": "int64", "bool": "bool_", "uint32": "uint32", "int8": "int8", "uint8": "uint8"}
#: MLX's ``get_type_string``, by numpy's name of the dtype: the Metal type name, as in
#: quantized and sdpa names.
TYPE_STRING = {"float32": "float", "float16": "float16_t", "bfloat16": "bfloat16_t"}


def type_to_name(dtype) -> str:
    try:
        return TYPE_TO_NAME[dtype_name(dtype)]
    except KeyError:
        raise TypeError(f"MLX has no kernels for dtype {np.dtype(dtype)} here") from None


def type_string(dtype) -> str:
    try:
        return TYPE_STRING[dtype_name(dtype)]
    except KeyError:
        raise TypeError(f"dtype {np.dtype(dtype)}: MLX instantiates this family for float32, float16 "
                        f"and bfloat16 only") from None


@dataclass
class Launch:
    """One ``dispatch_threadgroups`` (``threadgroups``) or ``dispatch_threads`` (``threads``)."""

    source: str  # file name in kernels/
    host_name: str
    buffers: dict[int, object]  # [[buffer(n)]] -> numpy array, numpy scalar or bytes
    threads_per_threadgroup: tuple[int, int, int]
    threadgroups: tuple[int, int, int] | None = None
    threads: tuple[int, int, int] | None = None
    function_constants: dict[int, object] = field(default_factory=dict)
    threadgroup_memory: dict[int, int] = field(default_factory=dict)

    def __post_init__(self):
        if (self.threadgroups is None) == (self.threads is None):
            raise ValueError("a launch has either threadgroups (dispatch_threadgroups) or threads (dispatch_threads)")

    @property
    def path(self) -> Path:
        return kernels_dir() / self.source

    def kernel(self):
        from ..emulator import load_kernel

        return load_kernel(self.path, self.host_name, function_constants=self.function_constants or None,
                           include_dirs=[vendor_dir()])

    def run(self, kernel=None, **options) -> None:
        """Execute on the emulator (``kernel``: this launch's kernel, already loaded, to skip the
        cache lookup); ``options`` go to the kernel call (schedule, race_check, ...)."""
        grid = {"threadgroups": self.threadgroups} if self.threads is None else {"threads": self.threads}
        (kernel or self.kernel())(self.buffers, threads_per_threadgroup=self.threads_per_threadgroup,
                                  threadgroup_memory=self.threadgroup_memory or None, **grid, **options)


@dataclass
class Plan:
    """The launches one MLX op encodes, in order, and the array holding the result."""

    launches: list[Launch]
    out: np.ndarray = field(repr=False)

    @property
    def host_names(self) -> list[str]:
        return [launch.host_name for launch in self.launches]

    def run(self, **options) -> np.ndarray:
        for launch in self.launches:
            launch.run(**options)
        return self.out
