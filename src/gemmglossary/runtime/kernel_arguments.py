"""What a call of ``gg.metal_kernel``'s kernel refuses before anything runs.

MLX's Python binding takes ``grid`` and ``threadgroup`` as three C ``int``s
(``std::tuple<int, int, int>`` in python/src/fast.cpp): a float or a value outside
``int`` is refused there, and a size below 1 reaches Metal as a threadgroup of
``min(threadgroup, grid)`` = 0 threads (or a negative size read as a huge unsigned one),
which Metal refuses. Each output shape is a list of ``int`` dimensions, none negative.
An output of ``float64`` is declared ``device double*`` in the source MLX writes, and
Metal has no ``double``: the GPU compiler rejects the kernel, so the emulator does too
instead of running it in double precision. Every refusal names the argument.
"""

from __future__ import annotations

import numpy as np

from ..emulator.errors import ArgumentTypeError, ArgumentValueError, CompileError

#: A C int, what MLX's binding converts each size to.
INT_MAX = 2 ** 31 - 1


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def size3(value, what: str) -> tuple[int, int, int]:
    """``grid`` or ``threadgroup``: three integers from 1 to INT_MAX."""
    try:
        items = tuple(value)
    except TypeError:
        raise ArgumentTypeError(f"[metal_kernel] `{what}` must be a 3-tuple of ints, got {value!r}") from None
    if len(items) != 3:
        raise ArgumentTypeError(f"[metal_kernel] `{what}` must be a 3-tuple of ints, got {value!r}")
    for axis, v in zip("xyz", items):
        if not _is_int(v):
            raise ArgumentTypeError(f"[metal_kernel] `{what}` {value!r}: {v!r} ({axis}) is a {type(v).__name__}; "
                                    "MLX takes ints and refuses it (use // for sizes)")
        if v > INT_MAX:
            raise ArgumentTypeError(f"[metal_kernel] `{what}` {value!r}: {v} ({axis}) does not fit the C int MLX's "
                                    f"binding takes (at most {INT_MAX})")
        if v < 1:
            raise ArgumentValueError(f"[metal_kernel] `{what}` {value!r}: {v} ({axis}) must be at least 1 (MLX "
                                     "dispatches min(threadgroup, grid) threads per threadgroup, and Metal refuses "
                                     "a threadgroup of no threads)")
    return tuple(int(v) for v in items)


def output_shape(shape, name: str) -> tuple[int, ...]:
    """One entry of ``output_shapes``: dimensions from 0 to INT_MAX."""
    try:
        dims = tuple(shape)
    except TypeError:
        raise ArgumentTypeError(f"[metal_kernel] output_shapes: the shape of output '{name}' must be a sequence of "
                                f"ints, got {shape!r}") from None
    for d in dims:
        if not _is_int(d) or not 0 <= d <= INT_MAX:
            cls = ArgumentTypeError if not _is_int(d) else ArgumentValueError
            raise cls(f"[metal_kernel] output_shapes: output '{name}' has shape {shape!r}; each dimension must be "
                      f"an int from 0 to {INT_MAX}")
    return tuple(int(d) for d in dims)


def no_double(output_names: list[str], output_dtypes: list[str], input_names: list[str],
              input_dtypes: list[str], template: list[tuple[str, object]]) -> None:
    """CompileError for a float64 input, output or template type: MLX writes it as ``double``."""
    where = [f"output '{n}'" for n, d in zip(output_names, output_dtypes) if d == "float64"]
    where += [f"input '{n}'" for n, d in zip(input_names, input_dtypes) if d == "float64"]
    where += [f"template argument {n}" for n, v in template if v == "float64"]
    if where:
        raise CompileError(f"[metal_kernel] {', '.join(where)}: float64, which MLX writes as `double` in the "
                           "kernel's source, and Metal has no double (the GPU compiler rejects the kernel); use "
                           "float32")
