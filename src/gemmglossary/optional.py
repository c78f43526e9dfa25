"""The optional dependencies: who needs them, and what installs them.

``pip install gemmglossary`` is the emulator (``metal_kernel``, ``load_kernel``, the pytest
plugin) with numpy alone. What only the site and its tests use (mkdocs, matplotlib,
ml_dtypes, the pinned mlx, ...) comes with the ``site`` extra, and mlx itself is the user's
own when a kernel runs on the Apple GPU. A missing one is a :class:`MissingDependency`
saying what needed it and the command that installs it, never an ImportError from deep
inside a module.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

#: The extra of pyproject.toml that brings each optional module (by its top-level name).
#: mlx is in the site's extra too, pinned, but a user's own mlx of any version serves the
#: call that needs it (gg.metal_kernel on the GPU), so its fix names mlx itself.
EXTRAS = {
    "ml_dtypes": "site", "matplotlib": "site", "mkdocs": "site", "markdown": "site", "pymdownx": "site",
    "yaml": "site", "jupytext": "site", "nbclient": "site", "nbformat": "site", "ipykernel": "site",
    "mlx": None,
}

#: The distribution that provides a module, where its name differs.
DISTRIBUTIONS = {"yaml": "PyYAML", "pymdownx": "pymdown-extensions", "markdown": "Markdown", "mlx": "mlx"}


class MissingDependency(ImportError):
    """An optional dependency is not installed; the message says what needs it and how to get it."""


def install_command(module: str) -> str:
    """The command that installs what provides ``module``."""
    top = module.split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return f"pip install {DISTRIBUTIONS.get(top, top)}"
    return f"pip install 'gemmglossary[{extra}]' (in a checkout: pip install -e '.[{extra}]')"


def _missing(module: str, needed_for: str) -> MissingDependency:
    top = module.split(".")[0]
    return MissingDependency(f"{needed_for} needs {DISTRIBUTIONS.get(top, top)}, which is not installed: "
                             f"{install_command(module)}", name=module)


def require(module: str, needed_for: str) -> ModuleType:
    """``import module``, or a :class:`MissingDependency` naming ``needed_for`` and the fix."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise  # the module is there but broken: its own error says more than ours would
        raise _missing(module, needed_for) from None


def require_installed(module: str, needed_for: str) -> None:
    """:func:`require`'s check without the import (for a module imported at its first
    use, whose import is costly): a :class:`MissingDependency` if it is not installed."""
    top = module.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except ModuleNotFoundError as exc:  # (a finder may say so by raising)
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise
        spec = None
    if spec is None:
        raise _missing(module, needed_for)


def available(module: str) -> bool:
    """Whether ``module`` imports here (an installed one that fails to import counts as absent)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
