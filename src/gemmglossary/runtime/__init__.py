"""One kernel API over two backends: the Apple GPU (``metal``) and the CPU emulator.

* :func:`load_kernel` compiles a ``.metal`` file (or source string) verbatim and
  returns a kernel called with buffers and a dispatch, like a Metal compute pipeline.
* :func:`metal_kernel` is ``mx.fast.metal_kernel``: a body plus names; MLX's signature
  generation is reproduced exactly for the emulator.
* :func:`backend` reports the active backend: ``metal`` on macOS arm64 with a Metal
  device that has what the kernels need (see :mod:`.selection`), else ``emulator``;
  ``GEMMGLOSSARY_BACKEND=metal|emulator`` forces one, and forcing ``metal`` where no
  Metal device is reachable raises :class:`BackendUnavailable`.

The metal paths are written to Apple's and MLX's documented APIs but cannot run on
the Linux machines this project is developed on, and have never been run by us; the
macOS workflow is written to run them on a hosted runner's virtual GPU, which cannot
show everything (see .github/workflows/test-macos.yml), and is unverified.
"""

from __future__ import annotations

from .selection import BACKENDS, ENV_VAR, BackendUnavailable, automatic, backend, metal_device, metal_status
from .custom_kernels import metal_kernel


def load_kernel(path_or_source, name, *, defines=None, function_constants=None, include_dirs=None,
                backend_name: str | None = None):
    """Compile kernel ``name``; see the emulator and :mod:`gemmglossary.metal.backend` for the call.

    ``kernel(*buffers, threads=(x,y,z) | threadgroups=(x,y,z), threads_per_threadgroup=(x,y,z),
    threadgroup_memory={index: bytes})``; numpy arrays are device buffers written back
    in place, scalars/structured arrays/bytes fill ``constant`` arguments.
    """
    chosen = backend(backend_name)
    kwargs = dict(defines=defines, function_constants=function_constants, include_dirs=include_dirs)
    if chosen == "metal":
        from ..metal.backend import load_kernel as metal_load_kernel

        return metal_load_kernel(path_or_source, name, **kwargs)
    from ..emulator import load_kernel as emulator_load_kernel

    return emulator_load_kernel(path_or_source, name, **kwargs)


__all__ = [
    "BACKENDS", "ENV_VAR", "BackendUnavailable", "automatic", "backend", "metal_device", "metal_status",
    "load_kernel", "metal_kernel",
]
