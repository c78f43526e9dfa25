"""One run of a learner's kernel: buffers and dispatch for a case, the launch, what came back.

Kernel files run through ``gg.load_kernel`` (the GPU on a Mac, the emulator elsewhere);
``mx.fast.metal_kernel``-style bodies through ``gg.metal_kernel``. Inputs are random
(seeded by the case), outputs start as NaN unless the description says otherwise, so an
element nobody wrote is visible.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..emulator import errors as emu_errors
from . import expressions
from .spec import Exercise


@dataclass
class Case:
    """One case of one variant, with everything evaluated."""

    index: int
    values: dict  # the case's own variables, as written in exercise.toml
    defines: dict  # the variant's -D defines
    scope: dict  # every variable: constants, defines, case, derived

    @property
    def label(self) -> str:
        text = " ".join(f"{k}={v}" for k, v in self.values.items() if not isinstance(v, dict))
        if self.defines:
            text += " (" + " ".join(f"-D{k}={v}" for k, v in self.defines.items()) + ")"
        return text


@dataclass
class Launch:
    """What the checker passed and what came back from one launch."""

    case: Case
    dispatch: str  # e.g. "threadgroups (2, 3, 1) x (16, 16, 1)"
    originals: dict  # name -> float64 copy of every array as passed (inout: before the launch)
    outputs: dict = field(default_factory=dict)  # name -> array after the launch (empty if it raised)
    error: BaseException | None = None
    warnings: list = field(default_factory=list)  # PortabilityWarning instances
    body_offset: int = 0  # body form: generated lines before the learner's first line


def cases(exercise: Exercise, defines: dict) -> list[Case]:
    out = []
    for i, values in enumerate(exercise.cases):
        plain = {k: v for k, v in values.items() if not isinstance(v, dict)}
        out.append(Case(i, dict(values), dict(defines), exercise.variables(plain, defines)))
    return out


def _init(text: str, shape: tuple, dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    def uniform(lo, hi):
        return rng.uniform(lo, hi, shape).astype(dtype)

    def integers(lo, hi):
        return rng.integers(lo, hi, shape).astype(dtype)

    value = expressions.evaluate(text, {
        "uniform": uniform, "integers": integers, "nan": np.nan, "zeros": 0, "ones": 1,
    })
    if isinstance(value, np.ndarray):
        return value
    return np.full(shape, value, dtype=dtype)


def buffers(exercise: Exercise, case: Case) -> tuple[dict, dict]:
    """({name: value}, {name: float64 copy of every array as passed, for the reference})."""
    rng = np.random.default_rng(1000 + case.index)
    bound, originals = {}, {}
    overrides = case.values.get("init", {})
    for b in exercise.buffers:
        where = f"{exercise.name}: buffer {b.name!r}"
        try:
            if b.kind == "scalar":
                bound[b.name] = np.array(expressions.evaluate(b.value, case.scope), dtype=b.dtype)[()]
            elif b.kind == "struct":
                value = np.zeros((), dtype=b.struct_dtype())
                for fname, text in b.fields.items():
                    value[fname] = expressions.evaluate(text, case.scope)
                bound[b.name] = value
            else:
                shape = tuple(expressions.integer(s, case.scope) for s in b.shape)
                arr = _init(overrides.get(b.name, b.init), shape, np.dtype(b.dtype), rng)
                bound[b.name] = arr
                originals[b.name] = arr.astype(np.float64) if arr.dtype.kind in "fiub" else arr.copy()
        except expressions.ExpressionError as exc:
            raise expressions.ExpressionError(f"{where}: {exc}") from None
    return bound, originals


def _body_offset(source: str | None, body: str) -> int:
    """Lines of generated source before the learner's body (diagnostics count generated lines)."""
    from ..mlx.custom_kernel import body_line_offset

    return (body_line_offset(source, body) or 0) if source else 0


def load_kernel(exercise: Exercise, path: Path, defines: dict, backend_name: str | None):
    """The learner's kernel file compiled for one variant (raises the backend's compile error)."""
    from ..runtime import load_kernel as gg_load_kernel

    return gg_load_kernel(str(path), exercise.kernel, defines=dict(defines) or None, backend_name=backend_name)


def binding(exercise: Exercise, case: Case, bound: dict) -> tuple[list | dict, dict, tuple]:
    """(buffers to pass, grid keyword, threads per threadgroup) for one case."""
    if exercise.convention is not None:  # a first-party GEMM kernel: kernels.py says how it is bound
        from ..kernels import KERNELS

        conv = KERNELS[exercise.convention]
        s = case.scope
        d = conv.dispatch(s["M"], s["N"], s["K"], dict(case.defines))
        args = conv.arguments(bound["A"], bound["B"], bound["C"], alpha=s["alpha"], beta=s["beta"])
        return args, {"threadgroups": d.threadgroups}, d.threads_per_threadgroup
    d = exercise.dispatch
    tpg = expressions.triple(d.threads_per_threadgroup, case.scope)
    if d.threadgroups is not None:
        grid = {"threadgroups": expressions.triple(d.threadgroups, case.scope)}
    else:
        grid = {"threads": expressions.triple(d.threads, case.scope)}
    return {b.index: bound[b.name] for b in exercise.buffers}, grid, tpg


def run_kernel(kernel, exercise: Exercise, case: Case) -> Launch:
    bound, originals = buffers(exercise, case)
    args, grid, tpg = binding(exercise, case, bound)
    (what, size), = grid.items()
    launch = Launch(case, f"{what} {tuple(size)} x {tuple(tpg)}", originals)
    call_args = args if isinstance(args, list) else [args]
    _launch(launch, lambda: kernel(*call_args, threads_per_threadgroup=tpg, **grid))
    if launch.error is None:
        launch.outputs = {b.name: bound[b.name] for b in exercise.buffers if b.kind in ("output", "inout")}
    return launch


def make_body_kernel(exercise: Exercise, body_source: str):
    from ..runtime import metal_kernel

    b = exercise.body
    return metal_kernel(exercise.kernel, list(b.input_names), list(b.output_names), body_source)


def run_body(kernel, exercise: Exercise, case: Case, body_source: str) -> Launch:
    bound, originals = buffers(exercise, case)
    b = exercise.body
    grid = expressions.triple(b.grid, case.scope)
    tg = expressions.triple(b.threadgroup, case.scope)
    text = f"grid {grid} x threadgroup {tg} (mx.fast.metal_kernel)"
    launch = Launch(case, text, originals)
    outs = [exercise.buffer(n) for n in b.output_names]
    shapes = [tuple(expressions.integer(s, case.scope) for s in o.shape) for o in outs]
    init = {o.init for o in outs}
    init_value = float("nan") if init == {"nan"} else (0.0 if init == {"zeros"} else None)
    result = {}

    def go():
        result["out"] = kernel(inputs=[bound[n] for n in b.input_names], output_shapes=shapes,
                               output_dtypes=[np.dtype(o.dtype) for o in outs], grid=grid, threadgroup=tg,
                               init_value=init_value)

    _launch(launch, go)
    launch.body_offset = _body_offset(getattr(kernel, "last_source", None), body_source)
    if launch.error is None:
        launch.outputs = {o.name: np.asarray(a) for o, a in zip(outs, result["out"])}
    return launch


def _launch(launch: Launch, call) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", emu_errors.PortabilityWarning)
        try:
            call()
        except Exception as exc:  # judged by the caller: every failure is a finding, not a crash
            launch.error = exc
    for w in caught:
        if isinstance(w.message, emu_errors.PortabilityWarning):
            launch.warnings.append(w.message)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def declares_kernel(source: str) -> bool:
    """Whether ``source`` declares a kernel function (else it is an mx.fast.metal_kernel body)."""
    from ..msl.lexer import tokenize

    toks = [t for t in tokenize(source) if t.kind not in ("ws", "nl", "comment")]
    return any(t.kind == "id" and t.text == "kernel" for t in toks)


def generated_file(site_file: str) -> bool:
    return bool(re.search(r"/metal_kernel/[^/]+\.metal$", site_file))
