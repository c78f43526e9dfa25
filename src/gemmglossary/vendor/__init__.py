"""Materialize the pinned upstream sources (MLX's Metal headers, llama.cpp's Metal
sources) into ``kernels/vendor/``.

The site quotes MLX's and llama.cpp's own kernels and the tests execute them, but this
repository never commits upstream code. ``kernels/vendor.toml`` pins, for each upstream
project, one distribution file of the package index (MLX: the ``mlx-cpu`` wheel, which ships
the headers; llama.cpp: the ``llama-cpp-python`` sdist, which vendors it) by its exact name
and sha256, and every file taken from it by its sha256. Vendoring downloads that file into
the user's cache (:mod:`.distfiles`), reads the pinned members out of it (:mod:`.archive`)
and writes them under ``kernels/vendor/`` (:mod:`.materialize`). It never imports or asks
the installed ``mlx``: the site's pin and a user's MLX are independent.

It runs by itself when the site builds (the mkdocs hook), when the tests start
(``tests/conftest.py``) and before ``gemmglossary excerpts``, so neither README command
needs a separate step. Those automatic runs only add missing files: a vendored file that
differs from its pin stops them with its name, and only ``gemmglossary vendor`` restores
it (keeping the edited copy). Without the package index and without the file in the cache,
they stop with a message saying what to run; nothing is skipped.
"""

from .command import main, register
from .manifest import VENDOR_PREFIX, PinnedFile, Pins, Source, VendorError, load_pins, manifest_path
from .materialize import VendorState, check_file, ensure, restore, state, status

#: Where MLX keeps its Metal kernels: the include path of the vendored MLX headers
#: (``#include "mlx/backend/metal/kernels/utils.h"``), under ``kernels/vendor/``.
MLX_KERNELS_SUBPATH = "mlx/backend/metal/kernels"

__all__ = ["MLX_KERNELS_SUBPATH", "VENDOR_PREFIX", "PinnedFile", "Pins", "Source", "VendorError", "VendorState",
           "check_file", "ensure", "load_pins", "main", "manifest_path", "register", "restore", "state", "status"]
