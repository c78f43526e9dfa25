"""Bytes and FLOPs of a matrix product, and the measured machine figures they are set against.

The pages explain why a matrix-vector product is bound by memory: per FLOP it must move far
more bytes than a matrix-matrix product. The numbers behind that are arithmetic, computed
here once (the pages ask for them through the facts extension):

- :func:`gemv`, :func:`gemm` and :func:`qmv` give the FLOPs of a product (a multiply-add
  counts 2) and the fewest bytes it can move: each operand read once and the result written
  once, which a kernel can approach but not beat.
- :data:`MACHINE` holds the only measured figures the pages use, both from the README of
  m5-gemm at the commit the site pins (they are its author's, on a 40-core M5 Max; nothing
  here was timed on a GPU): the read bandwidth of a streaming kernel and the float32 GEMM
  rate of m5-gemm's fastest kernel at 4096³.
"""

from __future__ import annotations

from dataclasses import dataclass

#: m5-gemm at the commit the site pins (tests/docs/test_source_links.py checks its links).
M5_GEMM_README = "https://github.com/yaroslavvb/m5-gemm/blob/29414bebb522ddacaa009959f2bcdad9f5b3e5cf/README.md"


@dataclass(frozen=True)
class Machine:
    """Figures measured by someone else, with where they say so."""

    name: str
    read_bytes_per_s: float     # a streaming read of 4 GiB
    read_url: str
    gemm_flop_per_s: float      # float32 GEMM, 4096 x 4096 x 4096
    gemm_url: str

    @property
    def ridge(self) -> float:
        """FLOPs per byte a kernel needs before the GEMM rate, not the bandwidth, limits it."""
        return self.gemm_flop_per_s / self.read_bytes_per_s


MACHINE = Machine(
    name="M5 Max (40-core GPU)",
    read_bytes_per_s=494.8e9, read_url=M5_GEMM_README + "#L70-L77",
    gemm_flop_per_s=13.5e12, gemm_url=M5_GEMM_README + "#L9-L13",
)

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class Traffic:
    """One product: its FLOPs and the fewest bytes it moves."""

    flops: int
    bytes: int

    @property
    def flop_per_byte(self) -> float:
        return self.flops / self.bytes

    @property
    def bytes_per_flop(self) -> float:
        return self.bytes / self.flops

    def seconds_at(self, machine: Machine = MACHINE) -> float:
        """The time moving the bytes takes at the machine's read bandwidth: a lower bound."""
        return self.bytes / machine.read_bytes_per_s

    def seconds_computing(self, machine: Machine = MACHINE) -> float:
        """The time the FLOPs take at the machine's GEMM rate: the other lower bound."""
        return self.flops / machine.gemm_flop_per_s

    def flop_rate_at(self, machine: Machine = MACHINE) -> float:
        """The FLOP rate that bandwidth allows, at most the machine's GEMM rate."""
        return min(self.flop_per_byte * machine.read_bytes_per_s, machine.gemm_flop_per_s)


def _itemsize(dtype: str) -> int:
    if dtype not in ITEMSIZE:
        raise ValueError(f"dtype must be one of {', '.join(ITEMSIZE)}, got {dtype!r}")
    return ITEMSIZE[dtype]


def _positive(**sizes: int) -> None:
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


def gemv(M: int, K: int, dtype: str = "float16") -> Traffic:
    """y = A x, A of M x K: A and x read once, y written once."""
    _positive(M=M, K=K)
    return Traffic(2 * M * K, (M * K + K + M) * _itemsize(dtype))


def gemm(M: int, N: int, K: int, dtype: str = "float16") -> Traffic:
    """C = A B: A (M x K) and B (K x N) read once, C written once."""
    _positive(M=M, N=N, K=K)
    return Traffic(2 * M * N * K, (M * K + K * N + M * N) * _itemsize(dtype))


def qmv(N: int, K: int, bits: int = 4, group_size: int = 64, dtype: str = "float16") -> Traffic:
    """y = W x with W (N x K) quantized: the packed integers, one scale and one bias per group
    (in ``dtype``, as MLX stores them), x read once and y written once."""
    _positive(N=N, K=K)
    if K % group_size or (K * bits) % 32:
        raise ValueError(f"K = {K} is not a whole number of groups of {group_size} and of 32-bit words")
    size = _itemsize(dtype)
    packed = N * K * bits // 8
    return Traffic(2 * N * K, packed + 2 * N * (K // group_size) * size + (K + N) * size)


def tiled_gemm(M: int, N: int, K: int, BM: int, BN: int, dtype: str = "float32") -> Traffic:
    """C = A B by a kernel whose threadgroups each own a BM x BN tile of C and read their
    whole panels of A (BM x K) and B (K x BN) from device memory, with no help from a cache:
    A is read once per column of tiles, B once per row of tiles, C written once. The bytes
    fall as the tile grows, which is why a bigger tile raises the arithmetic intensity."""
    _positive(M=M, N=N, K=K, BM=BM, BN=BN)
    tiles_n, tiles_m = -(-N // BN), -(-M // BM)
    return Traffic(2 * M * N * K, (M * K * tiles_n + K * N * tiles_m + M * N) * _itemsize(dtype))
