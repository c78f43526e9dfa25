"""A ggml tensor as llama.cpp's Metal host sees it, and one dispatch of a llama.cpp kernel.

:class:`Tensor`: ggml names dimensions from the innermost: ``ne[0]`` is the length of a
row (numpy's last axis), ``ne[1]`` the rows, ``ne[2]``, ``ne[3]`` the batches; ``nb[i]``
is the stride of dimension ``i`` in bytes. A quantized row of ``ne[0]`` weights is
``ne[0] / QK`` blocks, so ``nb[0]`` is the block's size and ``nb[1]`` the row's bytes.

:class:`Launch`: what the encoder receives before ``dispatch_threadgroups`` (the host
always dispatches threadgroups): the kernel's host name in one of llama.cpp's ``.metal``
files, its function constants, the buffers by index (``set_bytes`` of an args struct at 0,
then the tensors), the threadgroup memory at index 0, the grid and the threadgroup size.
Run on the emulator, compiled from the vendored file unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import blocks, source
from ..msl.declarations import function_constants
from ..msl.expressions import evaluate

#: ggml_type_name of the numpy dtypes the kernels take unquantized.
FLOAT_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}


@dataclass
class Tensor:
    """A contiguous ggml tensor: its bytes, its ggml type name and ``ne`` (4 dims, innermost first)."""

    data: np.ndarray           # the buffer the kernel reads (float values, or uint8 block bytes)
    type: str                  # "f32", "f16", "q4_0", "q8_0", "q4_K"
    ne: tuple[int, int, int, int]

    @classmethod
    def of(cls, x: np.ndarray) -> "Tensor":
        """A float32 or float16 numpy array of up to 4 dims."""
        x = np.ascontiguousarray(x)
        if x.dtype not in FLOAT_TYPES or not 1 <= x.ndim <= 4:
            raise TypeError(f"a ggml tensor here is float32 or float16 with 1 to 4 dims, not {x.dtype} {x.shape}")
        return cls(x, FLOAT_TYPES[x.dtype], tuple(reversed(x.shape)) + (1,) * (4 - x.ndim))

    @classmethod
    def quantized(cls, data: np.ndarray, type: str, k: int) -> "Tensor":
        """Rows of blocks: ``data`` uint8 of shape (..., rows, row bytes), ``k`` weights a row."""
        f = blocks.fmt(type)
        data = np.ascontiguousarray(data)
        if data.dtype != np.uint8 or data.shape[-1] * f.weights != k * f.bytes_per_block:
            raise ValueError(f"{type}: a row of {k} weights is {k // f.weights * f.bytes_per_block} bytes")
        return cls(data, type, (k,) + tuple(reversed(data.shape[:-1])) + (1,) * (4 - data.ndim))

    @property
    def quantized_format(self) -> bool:
        return self.type not in FLOAT_TYPES.values()

    @property
    def nb(self) -> tuple[int, int, int, int]:
        """Byte strides (ggml's ``nb``) of the contiguous layout."""
        if self.quantized_format:
            f = blocks.fmt(self.type)
            nb0, row = f.bytes_per_block, self.ne[0] // f.weights * f.bytes_per_block
        else:
            nb0 = self.data.dtype.itemsize
            row = nb0 * self.ne[0]
        return (nb0, row, row * self.ne[1], row * self.ne[1] * self.ne[2])

    def values(self) -> np.ndarray:
        """float32 values in numpy's order (dequantized with :mod:`.blocks` if quantized)."""
        if self.quantized_format:
            return blocks.dequantize(self.data, self.type)
        return self.data.astype(np.float32)

    def rows(self) -> int:
        return self.ne[1] * self.ne[2] * self.ne[3]


@dataclass
class Launch:
    """One ``dispatch_threadgroups`` of a kernel of llama.cpp's ``kernels/<source>``."""

    source: str                                  # "mul_mm.metal", ...
    host_name: str                               # the pipeline's base name
    buffers: dict[int, object]                   # index -> bytes (args) or numpy array
    threadgroups: tuple[int, int, int]
    threads_per_threadgroup: tuple[int, int, int]
    function_constants: dict[int, object] = field(default_factory=dict)
    threadgroup_memory: int | None = None        # bytes set at [[threadgroup(0)]]; None: never set

    @property
    def path(self):
        return source.metal_path(f"kernels/{self.source}")

    def constants_by_name(self) -> dict[str, object]:
        """The function constants by name. The host sets them by index (``FC_MUL_MM + 0``...);
        the emulator takes an index only when the declaration writes it as a number, so each
        index is matched to the declaration whose index expression has that value."""
        names = {}
        for fc in function_constants(self.path.read_text(encoding="utf-8"), str(self.path)):
            names[evaluate(fc.argument, source.impl_constants())] = fc.name
        missing = sorted(set(self.function_constants) - set(names))
        if missing:
            raise KeyError(f"{self.source} declares no function constant at {missing}")
        return {names[i]: v for i, v in self.function_constants.items()}

    def kernel(self):
        from ..emulator import load_kernel

        return load_kernel(self.path, self.host_name, function_constants=self.constants_by_name() or None,
                           include_dirs=source.include_dirs())

    def bound(self) -> dict[int, object]:
        """The buffers as the kernels declare them (``device const char *``): arrays as int8
        views of their memory (one array bound twice stays one buffer)."""
        return {i: b.reshape(-1).view(np.int8) if isinstance(b, np.ndarray) else b for i, b in self.buffers.items()}

    def run(self, kernel=None, **options) -> None:
        (kernel or self.kernel())(self.bound(), threadgroups=self.threadgroups,
                                  threads_per_threadgroup=self.threads_per_threadgroup,
                                  threadgroup_memory=None if self.threadgroup_memory is None else {0: self.threadgroup_memory},
                                  **options)

