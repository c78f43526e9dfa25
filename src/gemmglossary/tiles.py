"""``cdiv``: how many tiles of one size cover a length, the one definition every dispatch
(the first-party kernels' in :mod:`gemmglossary.kernels`, MLX's restated in
:mod:`gemmglossary.mlx.matmul`, the exercises' expressions, the snippets) computes grids with."""

from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive integers: how many tiles of ``b`` cover ``a``."""
    return -(-a // b)
