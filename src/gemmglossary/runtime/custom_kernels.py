"""``gg.metal_kernel``: the call of ``mx.fast.metal_kernel``, on the GPU or the emulator.

On the ``metal`` backend this is ``mx.fast.metal_kernel`` itself (numpy inputs are
converted to mlx arrays and the outputs back).  On the ``emulator`` backend the
kernel source is generated exactly as MLX 0.32.4 generates it
(:mod:`gemmglossary.mlx.custom_kernel`), prefixed like MLX prefixes it (its ``utils.h``), and run on the
CPU emulator with MLX's dispatch: ``grid`` counts threads (``dispatchThreads``) and
each threadgroup dimension is ``min(threadgroup, grid)``.

Inputs may be numpy arrays, mlx arrays or Python scalars (a float becomes a 0-d
float32, an int a 0-d int32, a bool a 0-d bool, as in MLX).  Outputs are mlx arrays
when any input is an mlx array, numpy arrays otherwise.  numpy float64 inputs become
float32 as ``mx.array`` makes them.  numpy has no bfloat16: bfloat16 travels as its
16-bit pattern and a bfloat16 output returned as numpy is widened (exactly) to float32.
"""

from __future__ import annotations

import sys
from typing import Sequence

import numpy as np

from ..mlx import custom_kernel as ms
from .selection import BackendUnavailable, backend

#: MLX compiles ``metal::utils() + source``: the text of its kernels/utils.h.
MLX_PRELUDE = '#include "mlx/backend/metal/kernels/utils.h"\n'


def _is_mlx_array(x) -> bool:
    return type(x).__module__.startswith("mlx") and type(x).__name__ == "array"


class _Input:
    """One input as the emulator will see it."""

    def __init__(self, value, ensure_row_contiguous: bool):
        if _is_mlx_array(value):
            import mlx.core as mx

            self.dtype = ms.dtype_name(value.dtype)
            if self.dtype == "bfloat16":
                arr = np.array(value.view(mx.uint16))
            else:
                arr = np.array(value)
        elif isinstance(value, (bool, np.bool_)) and not isinstance(value, np.ndarray):
            arr, self.dtype = np.asarray(value, dtype=np.bool_), "bool"
        elif isinstance(value, int) and not isinstance(value, np.generic):
            arr, self.dtype = np.asarray(value, dtype=np.int32), "int32"
        elif isinstance(value, float) and not isinstance(value, np.generic):
            arr, self.dtype = np.asarray(value, dtype=np.float32), "float32"
        else:
            arr = np.asarray(value)
            if arr.dtype == np.float64:  # mx.array(float64 numpy) is float32
                arr = arr.astype(np.float32)
            elif arr.dtype == np.complex128:
                arr = arr.astype(np.complex64)
            self.dtype = ms.dtype_name(arr.dtype)
        self.shape = tuple(int(d) for d in arr.shape)
        item = arr.dtype.itemsize
        if ensure_row_contiguous or arr.flags.c_contiguous or arr.size == 0 or any(
            s < 0 or s % item for s in arr.strides
        ):
            self.buffer = np.ascontiguousarray(arr)
            strides, acc = [], 1
            for d in reversed(self.shape):
                strides.append(acc)
                acc *= d
            self.strides = tuple(reversed(strides))
        else:
            # Pass the memory the view spans, with the view's strides (MLX passes the
            # array's own buffer and strides when it does not copy).
            self.strides = tuple(s // item for s in arr.strides)
            span = 1 + sum((d - 1) * s for d, s in zip(self.shape, self.strides))
            flat = np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(item,))
            self.buffer = np.array(flat)

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


def _size3(value, what) -> tuple[int, int, int]:
    t = tuple(int(v) for v in value)
    if len(t) != 3:
        raise ValueError(f"[metal_kernel] `{what}` must be a 3-tuple, got {value!r}")
    return t


class EmulatedMetalKernel:
    """What ``gg.metal_kernel`` returns on the emulator backend."""

    backend = "emulator"

    def __init__(self, name, input_names, output_names, source, header="",
                 ensure_row_contiguous=True, atomic_outputs=False, compile_options=None):
        if not output_names:
            raise ValueError("[metal_kernel] Must specify at least one output.")
        self.name = name
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.source = source
        self.header = header
        self.ensure_row_contiguous = ensure_row_contiguous
        self.atomic_outputs = atomic_outputs
        self.compile_options = compile_options  # math mode: the emulator computes in IEEE
        self._compiled: dict[str, object] = {}
        self.last_source: str | None = None

    def _kernel(self, generated: ms.GeneratedKernel):
        key = generated.source
        if key not in self._compiled:
            from .. import paths
            from ..emulator import load_kernel as emulator_load_kernel

            # `#line`: diagnostics count lines of the generated source (what verbose=True prints)
            marker = f'#line 1 "/metal_kernel/{generated.name}.metal"\n'
            self._compiled[key] = emulator_load_kernel(
                MLX_PRELUDE + marker + generated.source, generated.name,
                include_dirs=[str(paths.vendor_dir())],
            )
        return self._compiled[key]

    def __call__(self, *, inputs: Sequence, output_shapes: Sequence, output_dtypes: Sequence,
                 grid, threadgroup, template=None, init_value=None, verbose=False, stream=None):
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
        prepared = [_Input(x, self.ensure_row_contiguous) for x in inputs]
        out_names = [ms.dtype_name(d) for d in output_dtypes]
        generated = ms.generate(self.name, self.input_names, self.output_names, self.source,
                                [p.spec for p in prepared], out_names, header=self.header,
                                template=template, atomic_outputs=self.atomic_outputs)
        self.last_source = generated.source
        if verbose:
            sys.stdout.write(ms.verbose_text(self.name, generated.source))
            sys.stdout.flush()

        outputs = []
        for shape, dname in zip(output_shapes, out_names):
            shape = tuple(int(d) for d in shape)
            if init_value is None:
                outputs.append(np.empty(shape, dtype=_numpy_dtype(dname)))
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

        gx, gy, gz = _size3(grid, "grid")
        tx, ty, tz = _size3(threadgroup, "threadgroup")
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


class MLXMetalKernel:
    """What ``gg.metal_kernel`` returns on the metal backend: mx.fast.metal_kernel."""

    backend = "metal"

    def __init__(self, name, input_names, output_names, source, header="",
                 ensure_row_contiguous=True, atomic_outputs=False, compile_options=None):
        import mlx.core as mx

        if not mx.metal.is_available():
            raise BackendUnavailable("the metal backend needs mlx with Metal (mx.metal.is_available() is False)")
        kwargs = dict(name=name, input_names=list(input_names), output_names=list(output_names),
                      source=source, header=header, ensure_row_contiguous=ensure_row_contiguous,
                      atomic_outputs=atomic_outputs)
        if compile_options is not None:
            kwargs["compile_options"] = compile_options
        self._kernel = mx.fast.metal_kernel(**kwargs)

    def __call__(self, *, inputs, output_shapes, output_dtypes, grid, threadgroup,
                 template=None, init_value=None, verbose=False, stream=None):
        import mlx.core as mx

        want_mlx = any(_is_mlx_array(x) for x in inputs)
        mx_inputs = [x if _is_mlx_array(x) or isinstance(x, (bool, int, float)) else mx.array(np.asarray(x))
                     for x in inputs]
        def mx_dtype(d):
            if str(d).startswith("mlx.core."):
                return d
            name = ms.dtype_name(d)
            return getattr(mx, "bool_" if name == "bool" else name)

        dtypes = [mx_dtype(d) for d in output_dtypes]
        if template is not None:
            template = [(n, v if isinstance(v, (bool, int)) else mx_dtype(v)) for n, v in template]
        kwargs = dict(inputs=mx_inputs, output_shapes=[tuple(s) for s in output_shapes],
                      output_dtypes=dtypes, grid=tuple(grid), threadgroup=tuple(threadgroup),
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
    """Same signature and call as ``mx.fast.metal_kernel`` of the pinned mlx (0.32.4).

    The backend is chosen when the kernel is made (see :func:`gemmglossary.runtime.backend`).
    """
    cls = MLXMetalKernel if backend() == "metal" else EmulatedMetalKernel
    return cls(name, input_names, output_names, source, header=header,
               ensure_row_contiguous=ensure_row_contiguous, atomic_outputs=atomic_outputs,
               compile_options=compile_options)
