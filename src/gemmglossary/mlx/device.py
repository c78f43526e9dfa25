"""The Apple GPU that MLX's host code asks about: its architecture name, generation and size class.

MLX reads ``MTLDevice.architecture.name`` (e.g. ``applegpu_g15s``) and derives two
things from it (``Device::Device`` in ``mlx/backend/metal/device.cpp``): the generation
from the two digits before the last letter (13 for M1, 14 M2, 15 M3, 16 M4, 17 M5) and the
size class from the last letter ('p' phone, 'g' base chip, 's' Max, 'd' Ultra; MLX's
comments call 's' and 'd' the large devices). Several kernel choices depend on them, so the
host modules take a :class:`GPU` (there is none here: the default is a base M1).
https://github.com/ml-explore/mlx/blob/v0.32.4/mlx/backend/metal/device.cpp
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPU:
    architecture: str = "applegpu_g13g"

    @property
    def generation(self) -> int:
        """Two digits before the size letter; a non-digit counts as 0 (as MLX does)."""
        name = self.architecture
        if len(name) < 3:
            return 0
        digits = [c if c.isdigit() else "0" for c in name[-3:-1]]
        return int(digits[0]) * 10 + int(digits[1])

    @property
    def size_class(self) -> str:
        return self.architecture[-1]

    @property
    def has_nax(self) -> bool:
        """MLX's ``is_nax_available`` on a new enough OS: generation 17 (18 on phones) and later."""
        return self.generation >= (18 if self.size_class == "p" else 17)


#: The default GPU of every host module: a base M1 (no NAX, no wide gemv, qmv batch limits of gen 13).
DEFAULT_GPU = GPU()
