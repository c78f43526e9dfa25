"""The sizes a benchmark accepts: ``--sizes`` of ``bench emulator`` and ``bench metal``."""

from __future__ import annotations

import argparse


def square_sizes(text: str, backend: str | None = None) -> list[int]:
    """Comma-separated square sizes n, each within what ``gemmglossary run`` accepts for an
    n x n x n product on ``backend`` (checked before any matrix is allocated)."""
    from ..run import BadInput, check_shape

    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive sizes, got {text!r}")
    for n in sizes:
        try:
            check_shape(n, n, n, backend)
        except BadInput as exc:
            raise argparse.ArgumentTypeError(f"size {n}: {exc}") from None
    return sizes
