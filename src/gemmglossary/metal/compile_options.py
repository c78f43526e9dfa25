"""The MTLCompileOptions the Metal backend compiles with: MLX's choices.

``MTLCompileOptions`` defaults to fast math, which lets the compiler reassociate
floating-point arithmetic and ignore NaN, infinities and signed zeros.  The emulator
computes IEEE, and MLX compiles its kernels with safe math, so the backend sets the
math mode explicitly, and the language version too, exactly as MLX 0.32's
``mlx/backend/metal/device.cpp`` does (``set_compile_options`` with the default
``MathMode::Safe``, and ``get_metal_version``):

* macOS 15 or later: ``mathMode = MTLMathModeSafe``; before: ``fastMathEnabled = NO``
  (``mathMode`` is new in macOS 15);
* language version by macOS version: 27 -> Metal 4.1 (no PyObjC constant yet: MLX
  writes ``(4 << 16) + 1``), 26 -> 4.0, 15 -> 3.2, older -> 3.1.
"""

from __future__ import annotations

import platform

#: (oldest macOS major version, MTLLanguageVersion constant name or raw value), newest first.
LANGUAGE_VERSIONS = ((27, (4 << 16) + 1), (26, "MTLLanguageVersion4_0"), (15, "MTLLanguageVersion3_2"),
                     (0, "MTLLanguageVersion3_1"))

#: ``mathMode`` exists from this macOS version on.
MATH_MODE_SINCE = 15


def macos_major() -> int:
    release = platform.mac_ver()[0]
    return int(release.split(".")[0]) if release else 0


def language_version(Metal, major: int) -> int:
    for since, version in LANGUAGE_VERSIONS:
        if major >= since:
            return version if isinstance(version, int) else int(getattr(Metal, version))
    raise AssertionError("unreachable: the last entry starts at 0")


def compile_options(Metal, macros: dict[str, str] | None = None, major: int | None = None):
    """A new MTLCompileOptions with MLX's math mode and language version."""
    major = macos_major() if major is None else major
    options = Metal.MTLCompileOptions.alloc().init()
    if major >= MATH_MODE_SINCE:
        options.setMathMode_(Metal.MTLMathModeSafe)
    else:
        options.setFastMathEnabled_(False)
    options.setLanguageVersion_(language_version(Metal, major))
    if macros:
        options.setPreprocessorMacros_(macros)
    return options
