"""The kernel source ``mx.fast.metal_kernel`` generates, as a pure function.

``mx.fast.metal_kernel`` takes only the *body* of a kernel and writes the rest: the
signature (one buffer per input, optional ``<name>_shape``/``_strides``/``_ndim``
buffers, one buffer per output, the thread attributes the body mentions), the
template header and the explicit instantiation, and the kernel's host name.  This
module reproduces that text for the MLX release the project pins
(:data:`.matmul.MLX_TAG`), so the emulator runs exactly the kernel the GPU would.

The rules below were read from MLX's sources at that tag (``mlx/backend/common/metal_kernel.cpp``:
``write_signature``, ``write_template``, ``make_template_hash`` and ``metal_kernel``;
``mlx/backend/common/compiled.cpp``: ``get_type_string``; the dispatch is in
``mlx/backend/metal/custom_kernel.cpp``) and are checked byte for byte against the text the
installed mlx wheel of that release prints with ``verbose=True``
(``tests/mlx/test_custom_kernel_source.py``).  This is an independent re-implementation,
not a copy.

Quirks kept on purpose, because MLX has them:

* An input with fewer than 8 elements goes in the ``constant`` address space, a
  0-d input is a reference (``const constant T& x``).
* A name is "mentioned" when it occurs anywhere in the source as a substring
  (``thread_position_in_grid`` also matches ``my_thread_position_in_grid_copy``).
  The header is not searched, only the body.
* ``_shape``/``_strides``/``_ndim`` buffers are only added for inputs with ndim > 0.
* The separator after an output compares the buffer index (which counts shape
  buffers) with ``len(inputs) + len(outputs) - 1``; with shape buffers, no
  attributes and several outputs MLX closes the parameter list early.  We write
  the same text.
* Template values are printed as C++ streams print them: ``True`` becomes ``1``.
* In the host name a negative template int keeps its ``-`` (``N=-3`` gives
  ``custom_kernel_neg__-3_...``): ``make_template_hash`` replaces only ``<``, ``>`` and
  ``", "``. That name is also the kernel function's, so such a source does not compile: the
  emulator reports the compiler's error, as a build of MLX's source would fail.

What the Python binding accepts is restated too (``python/src/fast.cpp``), with the same
exceptions: a template value must be a Python ``bool``, a Python ``int`` that fits a C
``int``, or an ``mx.Dtype`` (numpy scalars, numpy types, strings, ``IntEnum`` members:
``ValueError``); ``compile_options`` must be ``None`` or a dict whose only key is
``"math_mode"`` with a value in :data:`MATH_MODES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

#: Inputs with fewer elements are passed in the ``constant`` address space.
MAX_CONSTANT_ARRAY_SIZE = 8

#: Canonical dtype name -> the Metal type MLX writes (``get_type_string``).
TYPE_STRINGS = {
    "float32": "float",
    "float16": "float16_t",
    "bfloat16": "bfloat16_t",
    "float64": "double",
    "complex64": "complex64_t",
    "bool": "bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
}

#: The thread attributes MLX looks for in the source, in MLX's order, with its types.
METAL_ATTRIBUTES = (
    ("dispatch_quadgroups_per_threadgroup", "uint"),
    ("dispatch_simdgroups_per_threadgroup", "uint"),
    ("dispatch_threads_per_threadgroup", "uint3"),
    ("grid_origin", "uint3"),
    ("grid_size", "uint3"),
    ("quadgroup_index_in_threadgroup", "uint"),
    ("quadgroups_per_threadgroup", "uint"),
    ("simdgroup_index_in_threadgroup", "uint"),
    ("simdgroups_per_threadgroup", "uint"),
    ("thread_execution_width", "uint"),
    ("thread_index_in_quadgroup", "uint"),
    ("thread_index_in_simdgroup", "uint"),
    ("thread_index_in_threadgroup", "uint"),
    ("thread_position_in_grid", "uint3"),
    ("thread_position_in_threadgroup", "uint3"),
    ("threadgroup_position_in_grid", "uint3"),
    ("threadgroups_per_grid", "uint3"),
    ("threads_per_grid", "uint3"),
    ("threads_per_simdgroup", "uint"),
    ("threads_per_threadgroup", "uint3"),
)


def dtype_name(dtype) -> str:
    """Canonical name (``"float32"``...) of an mlx Dtype, numpy dtype/type or string."""
    text = str(dtype)
    if text.startswith("mlx.core."):
        text = text[len("mlx.core."):]
    else:
        try:
            import numpy as np

            text = np.dtype(dtype).name
        except TypeError:
            pass
    if text == "bool_":
        text = "bool"
    if text not in TYPE_STRINGS:
        raise ValueError(f"[metal_kernel] Unsupported dtype {dtype!r}")
    return text


def type_string(dtype) -> str:
    return TYPE_STRINGS[dtype_name(dtype)]


@dataclass(frozen=True)
class InputSpec:
    """What the generated source depends on for one input: its dtype and shape."""

    dtype: str
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= int(d)
        return n

    @property
    def location(self) -> str:
        return "constant" if self.size < MAX_CONSTANT_ARRAY_SIZE else "device"


@dataclass(frozen=True)
class ShapeInfo:
    shape: bool
    strides: bool
    ndim: bool


def shape_infos(input_names: Sequence[str], source: str) -> list[ShapeInfo]:
    return [
        ShapeInfo(f"{n}_shape" in source, f"{n}_strides" in source, f"{n}_ndim" in source)
        for n in input_names
    ]


def attributes(source: str) -> list[tuple[str, str]]:
    """(name, type) of each thread attribute the source mentions, in MLX's order."""
    return [(attr, ty) for attr, ty in METAL_ATTRIBUTES if attr in source]


#: ``compile_options={"math_mode": ...}``: the modes MLX accepts, and its default.
MATH_MODES = ("safe", "relaxed", "fast")
DEFAULT_MATH_MODE = "safe"

#: A template int is a C++ ``int``.
TEMPLATE_INT_MIN, TEMPLATE_INT_MAX = -(2**31), 2**31 - 1

_INVALID_TEMPLATE = "[metal_kernel] Invalid template argument. Must be `mlx.core.Dtype`, `int` or `bool`."


def _is_mlx_dtype(value) -> bool:
    return type(value).__module__.startswith("mlx") and type(value).__name__ == "Dtype"


def template_arguments(template) -> list[tuple[str, object]]:
    """The ``template=`` of a call, checked as MLX's binding checks it.

    Returns ``[(name, value)]`` with bools and ints kept and each ``mx.Dtype`` replaced
    by its canonical name (``"float32"``): the form :func:`generate` takes.
    """
    out: list[tuple[str, object]] = []
    for item in template or ():
        # the binding takes a list of (name, value) pairs: anything else is a TypeError there
        if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 2:
            raise TypeError(f"[metal_kernel] template: each item is a (name, value) pair, e.g. "
                            f"('T', mx.float32), got {item!r}")
        name, value = item
        if type(value) is bool:
            out.append((str(name), value))
        elif type(value) is int:  # not a subclass, not a numpy integer: MLX refuses those
            if not TEMPLATE_INT_MIN <= value <= TEMPLATE_INT_MAX:
                raise ValueError(_INVALID_TEMPLATE)
            out.append((str(name), value))
        elif _is_mlx_dtype(value):
            out.append((str(name), dtype_name(value)))
        else:
            raise ValueError(_INVALID_TEMPLATE)
    return out


def math_mode(compile_options) -> str:
    """The math mode of ``metal_kernel(compile_options=...)``, checked as MLX checks it."""
    if compile_options is None:
        return DEFAULT_MATH_MODE
    if not isinstance(compile_options, dict):
        raise ValueError("[metal_kernel] Expected `compile_options` to be a dict.")
    mode = DEFAULT_MATH_MODE
    for key, value in compile_options.items():
        if not isinstance(key, str):  # MLX: RuntimeError(std::bad_cast)
            raise RuntimeError(f"[metal_kernel] compile option names are str, got {key!r}")
        if key != "math_mode":
            raise ValueError(f"[metal_kernel] Unknown compile option `{key}`.")
        if not isinstance(value, str):  # MLX: RuntimeError(std::bad_cast)
            raise RuntimeError(f"[metal_kernel] math_mode is a str, got {value!r}")
        if value not in MATH_MODES:
            raise ValueError("[metal_kernel] Expected math_mode to be 'safe', 'relaxed', or 'fast'.")
        mode = value
    return mode


def _template_value(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(int(value))
    return type_string(value)


def _template_param_type(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    return "typename"


def check_template(template) -> list[tuple[str, object]]:
    """``template`` in the form :func:`template_arguments` returns (dtypes by name)."""
    out = []
    for name, value in template or ():
        if not isinstance(value, (bool, int)) and not (isinstance(value, str) and value in TYPE_STRINGS):
            raise ValueError(_INVALID_TEMPLATE)
        out.append((str(name), value))
    return out


def write_template(template) -> str:
    return "<" + ", ".join(_template_value(v) for _, v in template) + ">"


def template_hash(template_def: str) -> str:
    """``<float, -3, 1>`` -> ``_float_-3_1`` (MLX's ``make_template_hash``)."""
    out = []
    i = 0
    while i < len(template_def):
        c = template_def[i]
        if c in "<>":
            out.append("_")
        elif c == "," and i + 1 < len(template_def) and template_def[i + 1] == " ":
            out.append("_")
            i += 1
        else:
            out.append(c)
        i += 1
    return "".join(out)[:-1]


def kernel_name(name: str, inputs: Sequence[InputSpec], output_dtypes: Sequence, template=()) -> str:
    """The host name MLX gives the kernel (``custom_kernel_<name>[_<template>]_<types>``)."""
    result = "custom_kernel_" + name
    if template:
        result += "_" + template_hash(write_template(template))
    for spec in inputs:
        result += "_" + type_string(spec.dtype)
        if spec.ndim == 0:
            result += "s"
        elif spec.size < MAX_CONSTANT_ARRAY_SIZE:
            result += "c"
    for dtype in output_dtypes:
        result += "_" + type_string(dtype)
    return result


@dataclass(frozen=True)
class Buffer:
    """One ``[[buffer(i)]]`` of the generated signature, for binding arguments."""

    index: int
    kind: str  # "input", "shape", "strides", "ndim", "output"
    position: int  # which input or output it belongs to


def buffer_layout(inputs: Sequence[InputSpec], infos: Sequence[ShapeInfo], n_outputs: int) -> list[Buffer]:
    layout: list[Buffer] = []
    for i, (spec, info) in enumerate(zip(inputs, infos)):
        layout.append(Buffer(len(layout), "input", i))
        if spec.ndim > 0:
            for kind, present in (("shape", info.shape), ("strides", info.strides), ("ndim", info.ndim)):
                if present:
                    layout.append(Buffer(len(layout), kind, i))
    for j in range(n_outputs):
        layout.append(Buffer(len(layout), "output", j))
    return layout


def write_signature(
    func_name: str,
    header: str,
    source: str,
    input_names: Sequence[str],
    inputs: Sequence[InputSpec],
    output_names: Sequence[str],
    output_dtypes: Sequence,
    template: Sequence[tuple[str, object]],
    attrs: Sequence[tuple[str, str]],
    infos: Sequence[ShapeInfo],
    atomic_outputs: bool,
) -> str:
    parts = [header]
    if template:
        params = ", ".join(f"{_template_param_type(v)} {n}" for n, v in template)
        parts.append(f"template <{params}>\n")
    parts.append(f"[[kernel]] void {func_name}(\n")
    index = 0
    for name, spec, info in zip(input_names, inputs, infos):
        ref = "&" if spec.ndim == 0 else "*"
        parts.append(f"  const {spec.location} {type_string(spec.dtype)}{ref} {name} [[buffer({index})]],\n")
        index += 1
        if spec.ndim > 0:
            if info.shape:
                parts.append(f"  const constant int* {name}_shape [[buffer({index})]],\n")
                index += 1
            if info.strides:
                parts.append(f"  const constant int64_t* {name}_strides [[buffer({index})]],\n")
                index += 1
            if info.ndim:
                parts.append(f"  const constant int& {name}_ndim [[buffer({index})]],\n")
                index += 1
    for name, dtype in zip(output_names, output_dtypes):
        ty = type_string(dtype)
        if atomic_outputs:
            ty = f"atomic<{ty}>"
        parts.append(f"  device {ty}* {name} [[buffer({index})]]")
        # MLX compares the running buffer index (shape buffers included) here.
        if index < len(inputs) + len(output_names) - 1 or attrs:
            parts.append(",\n")
        else:
            parts.append(") {\n")
        index += 1
    for k, (attr, ty) in enumerate(attrs):
        parts.append(f"  {ty} {attr} [[{attr}]]")
        parts.append(",\n" if k < len(attrs) - 1 else ") {\n")
    parts.append(source)
    parts.append("\n}\n")
    return "".join(parts)


@dataclass(frozen=True)
class GeneratedKernel:
    name: str  # host name of the kernel function
    source: str  # the full text MLX compiles after its utils header
    layout: tuple[Buffer, ...]
    infos: tuple[ShapeInfo, ...]


def generate(
    name: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    source: str,
    inputs: Sequence[InputSpec],
    output_dtypes: Sequence,
    header: str = "",
    template=None,
    atomic_outputs: bool = False,
) -> GeneratedKernel:
    """The kernel ``mx.fast.metal_kernel`` (of the pinned MLX) builds for these arguments.

    ``inputs`` gives each input's dtype and shape (the generated text depends on
    nothing else of the arrays).  ``ensure_row_contiguous`` does not change the text.
    """
    if not output_names:
        raise ValueError("[metal_kernel] Must specify at least one output.")
    for what, actual, expected in (
        ("inputs", len(inputs), len(input_names)),
        ("output_dtypes", len(output_dtypes), len(output_names)),
    ):
        if actual != expected:
            raise ValueError(
                f"[metal_kernel] Expected `{what}` to have size {expected} but got size {actual}."
            )
    template = check_template(template)
    infos = shape_infos(input_names, source)
    attrs = attributes(source)
    func = kernel_name(name, inputs, output_dtypes, template)
    text = write_signature(
        func, header, source, input_names, inputs, output_names, output_dtypes,
        template, attrs, infos, atomic_outputs,
    )
    if template:
        inst = func + write_template(template)
        text += f'\ntemplate [[host_name("{func}")]] [[kernel]] decltype({inst}) {inst};\n'
    return GeneratedKernel(func, text, tuple(buffer_layout(inputs, infos, len(output_names))), tuple(infos))


def body_line_offset(source: str, body: str) -> int | None:
    """The offset from the lines of a kernel's ``body`` to the lines of the generated
    ``source`` that holds it verbatim from the start of a line (blank lines around it
    aside): line ``n`` of the body is line ``n + offset`` of the generated source, which
    is what the emulator's diagnostics (and line counts) name. None if it is not there."""
    lead = len(body) - len(body.lstrip("\n"))
    body = body.strip("\n")
    if not body.strip():
        return None
    at = source.find(body)
    while at > 0 and source[at - 1] != "\n":
        at = source.find(body, at + 1)
    return None if at < 0 else source[:at].count("\n") - lead


def verbose_text(name: str, source: str) -> str:
    """What MLX prints for ``verbose=True``."""
    return f"Generated source code for `{name}`:\n```\n{source}\n```\n"
