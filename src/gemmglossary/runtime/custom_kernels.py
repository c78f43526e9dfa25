"""``gg.metal_kernel``: the call of ``mx.fast.metal_kernel``, on the GPU or the emulator.

On the ``metal`` backend this is ``mx.fast.metal_kernel`` itself (numpy inputs are
converted to mlx arrays and the outputs back).  On the ``emulator`` backend the
kernel source is generated exactly as the pinned MLX generates it (its version:
:func:`.mlx_headers.version`, from kernels/vendor.toml)
(:mod:`gemmglossary.mlx.custom_kernel`), prefixed like MLX prefixes it (its ``utils.h``), and run on the
CPU emulator with MLX's dispatch: ``grid`` counts threads (``dispatchThreads``) and
each threadgroup dimension is ``min(threadgroup, grid)``.

Inputs are converted by MLX itself (``mx.array``) when mlx is installed, and by numpy's
restatement of that conversion when it is not (:mod:`.mlx_values`), so a numpy, Python or
mlx value becomes the array MLX would bind: a float is a 0-d float32, an int a 0-d int32 (int64
when it does not fit), numpy float64 is float32, and a numpy view keeps its element
strides. They are bound in the memory MLX binds: an mlx array given twice, or two mlx
views of one array, are one memory (MLX binds one buffer at both indices, each at its
offset), a numpy array given twice is two (``mx.array`` copies it each time); outputs are
fresh memory, as MLX allocates them, and without ``init_value`` they hold no defined values:
here every byte is the emulator's fill for undefined memory (NaN as a float).  With ``ensure_row_contiguous=False`` an input that is not row-contiguous is
bound as MLX binds it -- its own memory from its first element, with its own
``_strides`` -- so a body that ignores the strides reads what it would read on the GPU;
with ``True`` it is copied to row-contiguous first, as MLX copies it.  Outputs are mlx
arrays when any input is an mlx array, numpy arrays otherwise.  numpy has no bfloat16:
bfloat16 travels as its 16-bit pattern and a bfloat16 output returned as numpy is
widened (exactly) to float32.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from ..mlx import custom_kernel as ms
from ..optional import require
from . import kernel_arguments as checks
from . import mlx_headers, mlx_values
from .selection import BackendUnavailable, backend

#: MLX compiles ``metal::utils() + source``: the text of its kernels/utils.h.
MLX_PRELUDE = '#include "mlx/backend/metal/kernels/utils.h"\n'


_is_mlx_array = mlx_values.is_mlx_array


class EmulatorCannotBind(ValueError):
    """An input MLX would bind as it is, but the emulator cannot represent faithfully."""


class _Input:
    """One input as MLX binds it: dtype, shape, element strides, memory from its first element."""

    def __init__(self, value, name: str, ensure_row_contiguous: bool):
        # converted by MLX itself when mlx is installed, by numpy's restatement when not
        self.dtype, self.shape, view = mlx_values.as_bound(value)
        item = view.dtype.itemsize
        if view.flags.c_contiguous or view.size == 0 or ensure_row_contiguous:
            # Row-contiguous already, or copied to row-contiguous as MLX copies it.
            self.buffer = np.ascontiguousarray(view)
            strides, acc = [], 1
            for d in reversed(self.shape):
                strides.append(acc)
                acc *= d
            self.strides = tuple(reversed(strides))
            return
        self.strides = tuple(s // item for s in view.strides)
        if any(s < 0 for s in self.strides):
            raise EmulatorCannotBind(
                f"[metal_kernel] input '{name}' has negative strides {self.strides}: with "
                "ensure_row_contiguous=False MLX binds it as it is, its pointer in the middle of "
                "its buffer, which the emulator cannot represent; pass ensure_row_contiguous=True "
                "or a copy"
            )
        # The memory the view spans from its first element (MLX binds the buffer at the
        # view's offset); indexing past it is reported as out of bounds. A view of that
        # memory, not a copy: an input that shares it (the array the view was taken from)
        # is bound to the same memory, as MLX binds one buffer at both indices.
        span = 1 + sum((d - 1) * s for d, s in zip(self.shape, self.strides))
        self.buffer = np.lib.stride_tricks.as_strided(view, shape=(span,), strides=(item,), writeable=False)

    @property
    def spec(self) -> ms.InputSpec:
        return ms.InputSpec(self.dtype, self.shape)

    def as_argument(self):
        if len(self.shape) == 0:  # `const constant T& x`: its bytes, exactly
            return self.buffer.tobytes()
        return self.buffer


def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype(np.uint16 if name == "bfloat16" else ("bool" if name == "bool" else name))


def _to_mlx(arr: np.ndarray, dtype_name: str):
    import mlx.core as mx

    if dtype_name == "bfloat16":
        return mx.array(arr).view(mx.bfloat16)
    return mx.array(arr)


def _bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


class EmulatedMetalKernel:
    """What ``gg.metal_kernel`` returns on the emulator backend."""

    backend = "emulator"

    def __init__(self, name, input_names, output_names, source, header="",
                 ensure_row_contiguous=True, atomic_outputs=False, compile_options=None):
        # MLX's order: compile_options is parsed (the binding's argument), then the outputs checked.
        self.math_mode = ms.math_mode(compile_options)
        if not output_names:
            raise ValueError("[metal_kernel] Must specify at least one output.")
        self.name = name
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.source = source
        self.header = header
        self.ensure_row_contiguous = ensure_row_contiguous
        self.atomic_outputs = atomic_outputs
        self.compile_options = compile_options
        if self.math_mode != ms.DEFAULT_MATH_MODE:
            from ..emulator import PortabilityWarning

            warnings.warn(
                f"[metal_kernel] {name!r}: math_mode={self.math_mode!r} lets the GPU compiler "
                "reassociate and skip IEEE handling of NaN, infinities and signed zeros; the "
                "emulator computes IEEE (math_mode='safe'), so its results may differ from the GPU's",
                PortabilityWarning, stacklevel=3,
            )
        self._compiled: dict[str, object] = {}
        self.last_source: str | None = None

    def _kernel(self, generated: ms.GeneratedKernel):
        key = generated.source
        if key not in self._compiled:
            from ..coverage import generated as coverage_of_generated
            from ..emulator import load_kernel as emulator_load_kernel

            # `#line`: diagnostics count lines of the generated source (what verbose=True prints)
            file = f"/metal_kernel/{generated.name}.metal"
            kernel = emulator_load_kernel(MLX_PRELUDE + f'#line 1 "{file}"\n' + generated.source, generated.name,
                                          include_dirs=[str(mlx_headers.include_root())])
            # in a coverage run, so that the counts of a body's lines reach its file
            coverage_of_generated.record(Path(kernel.so).parent, file, generated.source)
            self._compiled[key] = kernel
        return self._compiled[key]

    def __call__(self, *, inputs: Sequence, output_shapes: Sequence, output_dtypes: Sequence,
                 grid, threadgroup, template=None, init_value=None, verbose=False, stream=None):
        # MLX's order: convert the inputs, check the template, then the sizes.
        names = self.input_names + [f"#{i}" for i in range(len(self.input_names), len(inputs))]
        prepared = [_Input(x, n, self.ensure_row_contiguous) for x, n in zip(inputs, names)]
        template = mlx_values.template_arguments(template)
        for what, actual, expected in (
            ("inputs", len(inputs), len(self.input_names)),
            ("output_shapes", len(output_shapes), len(self.output_names)),
            ("output_dtypes", len(output_dtypes), len(self.output_names)),
        ):
            if actual != expected:
                raise ValueError(
                    f"[metal_kernel] Expected `{what}` to have size {expected} but got size {actual}."
                )
        want_mlx = any(_is_mlx_array(x) for x in inputs)
        out_names = [ms.dtype_name(d) for d in output_dtypes]
        shapes = [checks.output_shape(s, n) for s, n in zip(output_shapes, self.output_names)]
        gx, gy, gz = checks.size3(grid, "grid")
        tx, ty, tz = checks.size3(threadgroup, "threadgroup")
        checks.no_double(self.output_names, out_names, names, [p.dtype for p in prepared], template)
        generated = ms.generate(self.name, self.input_names, self.output_names, self.source,
                                [p.spec for p in prepared], out_names, header=self.header,
                                template=template, atomic_outputs=self.atomic_outputs)
        self.last_source = generated.source
        if verbose:
            sys.stdout.write(ms.verbose_text(self.name, generated.source))
            sys.stdout.flush()

        outputs = []
        for shape, dname in zip(shapes, out_names):
            if init_value is None:
                outputs.append(_unwritten(shape, dname))
            elif dname == "bfloat16":
                bits = (np.asarray(init_value, np.float32).view(np.uint32) >> 16).astype(np.uint16)
                outputs.append(np.full(shape, bits, dtype=np.uint16))
            else:
                outputs.append(np.full(shape, init_value, dtype=_numpy_dtype(dname)))

        arguments = []
        for buf in generated.layout:
            if buf.kind == "output":
                arguments.append(outputs[buf.position])
                continue
            inp = prepared[buf.position]
            if buf.kind == "input":
                arguments.append(inp.as_argument())
            elif buf.kind == "shape":
                arguments.append(np.array(inp.shape, dtype=np.int32))
            elif buf.kind == "strides":
                arguments.append(np.array(inp.strides, dtype=np.int64))
            else:
                arguments.append(np.int32(len(inp.shape)))

        kernel = self._kernel(generated)
        max_tg = int(getattr(kernel, "max_total_threads_per_threadgroup", 1024))
        if tx * ty * tz > max_tg:
            raise ValueError(
                f"Thread group size ({tx * ty * tz}) is greater than  the maximum allowed threads "
                f"per threadgroup ({max_tg})."
            )
        kernel(*arguments, threads=(gx, gy, gz),
               threads_per_threadgroup=(min(tx, gx), min(ty, gy), min(tz, gz)))

        if want_mlx:
            return [_to_mlx(o, d) for o, d in zip(outputs, out_names)]
        return [_bf16_bits_to_float32(o) if d == "bfloat16" else o for o, d in zip(outputs, out_names)]


def _unwritten(shape, dname: str) -> np.ndarray:
    """An output without ``init_value``: MLX allocates it and leaves its contents undefined.
    The emulator fills it as it fills fresh threadgroup memory (every byte
    MSLEMU_TG_FILL_BYTE: NaN as a float, -1 as a signed integer), so an element the kernel
    never writes shows up in a comparison instead of passing as the zeros numpy often hands out."""
    from ..emulator.abi import abi

    out = np.empty(shape, dtype=_numpy_dtype(dname))  # bfloat16: its 16-bit patterns
    out.view(np.uint8).fill(abi()["MSLEMU_TG_FILL_BYTE"])
    return out


class MLXMetalKernel:
    """What ``gg.metal_kernel`` returns on the metal backend: mx.fast.metal_kernel."""

    backend = "metal"

    def __init__(self, name, input_names, output_names, source, header="",
                 ensure_row_contiguous=True, atomic_outputs=False, compile_options=None):
        mx = require("mlx.core", "gg.metal_kernel on the Apple GPU (it is mx.fast.metal_kernel)")
        if not mx.metal.is_available():
            raise BackendUnavailable("the metal backend needs mlx with Metal (mx.metal.is_available() is False)")
        kwargs = dict(name=name, input_names=list(input_names), output_names=list(output_names),
                      source=source, header=header, ensure_row_contiguous=ensure_row_contiguous,
                      atomic_outputs=atomic_outputs)
        if compile_options is not None:
            kwargs["compile_options"] = compile_options
        self._kernel = mx.fast.metal_kernel(**kwargs)
        self.output_names = list(output_names)

    def __call__(self, *, inputs, output_shapes, output_dtypes, grid, threadgroup,
                 template=None, init_value=None, verbose=False, stream=None):
        import mlx.core as mx

        want_mlx = any(_is_mlx_array(x) for x in inputs)

        def mx_dtype(d):
            if str(d).startswith("mlx.core."):
                return d
            name = ms.dtype_name(d)
            return getattr(mx, "bool_" if name == "bool" else name)

        dtypes = [mx_dtype(d) for d in output_dtypes]
        # the sizes MLX's binding or Metal would refuse, refused here with the argument's name
        shapes = [checks.output_shape(s, n) for s, n in zip(output_shapes, self.output_names)]
        kwargs = dict(inputs=list(inputs), output_shapes=shapes, output_dtypes=dtypes,
                      grid=checks.size3(grid, "grid"), threadgroup=checks.size3(threadgroup, "threadgroup"),
                      template=template, init_value=init_value, verbose=verbose)
        if stream is not None:
            kwargs["stream"] = stream
        outputs = self._kernel(**kwargs)
        if want_mlx:
            return list(outputs)
        mx.eval(outputs)
        return [np.array(o.astype(mx.float32)) if o.dtype == mx.bfloat16 else np.array(o) for o in outputs]


def metal_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str,
                 header: str = "", ensure_row_contiguous: bool = True, atomic_outputs: bool = False,
                 compile_options=None):
    """Same signature and call as ``mx.fast.metal_kernel`` of the pinned mlx (:func:`.mlx_headers.version`).

    The backend is chosen when the kernel is made (see :func:`gemmglossary.runtime.backend`).
    """
    cls = MLXMetalKernel if backend() == "metal" else EmulatedMetalKernel
    return cls(name, input_names, output_names, source, header=header,
               ensure_row_contiguous=ensure_row_contiguous, atomic_outputs=atomic_outputs,
               compile_options=compile_options)
