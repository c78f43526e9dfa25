"""What an exercise is: ``exercises/<name>/exercise.toml`` read into one :class:`Exercise`.

The checker knows nothing about any particular exercise. Everything it needs is data in
the exercise's folder, so a new exercise is a new folder:

- ``exercise.toml``: the kernel's name, its buffers, the dispatch for a shape, the numpy
  reference, the awkward shapes ("cases"), the tolerance, and typical mistakes;
- a skeleton (the parts to write marked ``TODO(exercise)``) and a reference solution,
  named in the TOML (the solution may be a first-party kernel in ``kernels/``);
- its page, ``docs/exercises/<name>.md``, whose first section is the statement: what to
  compute, the dispatch, the shapes, hints (``gemmglossary exercise show`` prints it).

The keys are documented in ``exercises/README.md``. Every problem in a description is
raised as :class:`SpecError` naming the file and the key.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import paths
from . import expressions

BUFFER_KINDS = ("input", "output", "inout", "scalar", "struct")
PROBLEM_KINDS = ("compile", "race", "out-of-bounds", "barrier", "divergence", "timeout", "crash", "launch",
                 "wrong", "unwritten", "warning", "attribute")
#: The marker a skeleton puts on each part the learner writes.
TODO_MARK = "TODO(exercise)"


class SpecError(ValueError):
    """An exercise description is malformed: the message names the file and the key."""


def exercises_dir() -> Path:
    return paths.project_root() / "exercises"


@dataclass(frozen=True)
class Buffer:
    index: int
    name: str
    kind: str
    dtype: str = "float32"  # numpy dtype name; for a struct, "module:ATTRIBUTE" of a numpy dtype
    shape: tuple = ()  # size expressions, outermost first
    value: object = None  # scalar: an expression
    fields: dict = field(default_factory=dict)  # struct: field name -> expression
    init: str = "uniform(-1, 1)"  # "uniform(lo, hi)" | "integers(lo, hi)" | "zeros" | "ones" | "nan"
    guard: str | None = None  # the test an access to this buffer must sit behind (for hints)

    @property
    def is_array(self) -> bool:
        return self.kind in ("input", "output", "inout")

    def struct_dtype(self) -> np.dtype:
        module_name, _, attr = self.dtype.partition(":")
        import importlib

        return np.dtype(getattr(importlib.import_module(module_name), attr))


@dataclass(frozen=True)
class Dispatch:
    threadgroups: tuple | None  # dispatchThreadgroups, expressions
    threads: tuple | None  # dispatchThreads, expressions
    threads_per_threadgroup: tuple


@dataclass(frozen=True)
class Body:
    """The ``mx.fast.metal_kernel`` form: only the body is written; MLX writes the signature."""

    input_names: tuple
    output_names: tuple
    grid: tuple  # threads, expressions
    threadgroup: tuple
    skeleton: Path
    solution: Path


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer, made from a reference solution by text replacement."""

    title: str
    form: str  # "kernel" or "body": which reference solution it edits
    replace: tuple  # ((old, new), ...)
    expect: str  # the problem kind the checker must report
    hint: tuple  # substrings the report must contain


@dataclass(frozen=True)
class Exercise:
    name: str
    folder: Path
    title: str
    order: int
    entries: tuple  # glossary pages practised (docs/glossary/<entry>.md)
    kernel: str
    convention: str | None  # a kernel of gemmglossary.kernels.KERNELS whose binding and dispatch apply
    skeleton: Path
    solution: Path
    buffers: tuple
    dispatch: Dispatch | None  # None: the convention's
    cases: tuple  # dicts of variables
    variants: tuple  # dicts of -D defines
    constants: dict
    derived: dict
    reference: dict  # output buffer name -> numpy expression
    atol: object
    rtol: object
    owner: tuple | None  # threadgroup (x[, y[, z]]) that computes an output element
    max_total_threads: object  # the attribute value the kernel must declare, or None
    body: Body | None
    mistakes: tuple

    def statement(self) -> str:
        """The statement: the page's text between its title and its first ``##`` section."""
        lines = self.page.read_text(encoding="utf-8").splitlines()
        body = []
        for line in lines[1:] if lines and lines[0].startswith("# ") else lines:
            if line.startswith("## "):
                break
            body.append(line)
        return "\n".join(body).strip() + "\n"

    @property
    def page(self) -> Path:
        return paths.docs_dir() / "exercises" / f"{self.name}.md"

    @property
    def kernel_files(self) -> tuple:
        """Every kernel file of the exercise: skeleton and solution, and their body forms.
        tests/exercises/test_checker.py runs each through the checker."""
        files = (self.skeleton, self.solution)
        return files + ((self.body.skeleton, self.body.solution) if self.body else ())

    def buffer(self, name: str) -> Buffer | None:
        return next((b for b in self.buffers if b.name == name), None)

    def variables(self, case: dict, defines: dict) -> dict:
        """The convention kernel's constants (built with the defines), this description's
        constants, the variant's defines, the case, then the derived values."""
        scope = {}
        if self.convention is not None:
            from ..kernels import KERNELS

            scope.update(KERNELS[self.convention].constants(dict(defines)).values)
        scope.update({**self.constants, **{k: _number(v) for k, v in defines.items()}, **case})
        for key, text in self.derived.items():
            scope[key] = expressions.evaluate(text, scope)
        return scope


def _number(v):
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return v
    return v


class _Reader:
    def __init__(self, path: Path, data: dict):
        self.path = path
        self.data = data

    def fail(self, key: str, message: str) -> SpecError:
        return SpecError(f"{_shown(self.path)}: {key}: {message}")

    def get(self, table: dict, key: str, where: str, types, default=...):
        if key not in table:
            if default is ...:
                raise self.fail(where + key, "missing")
            return default
        value = table[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
            names = "/".join(t.__name__ for t in _as_tuple(types))
            raise self.fail(where + key, f"expected {names}, got {value!r}")
        return value

    def path_in(self, folder: Path, key: str, text: str) -> Path:
        p = (folder / text).resolve()
        if not p.is_file():
            raise self.fail(key, f"no such file: {text} (paths are relative to {_shown(folder)})")
        return p


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)


def _shown(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(paths.project_root()))
    except ValueError:
        return str(p)


def _expr_list(r: _Reader, value, key: str) -> tuple:
    if not isinstance(value, list) or not 1 <= len(value) <= 3 or not all(
            isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        raise r.fail(key, f"expected a list of 1 to 3 sizes (integers or expressions), got {value!r}")
    return tuple(value)


def _buffers(r: _Reader, items) -> tuple:
    if not isinstance(items, list) or not items:
        raise r.fail("buffers", "expected at least one [[buffers]] table")
    out, seen = [], set()
    for i, t in enumerate(items):
        w = f"buffers[{i}]."
        name = r.get(t, "name", w, str)
        kind = r.get(t, "kind", w, str)
        if kind not in BUFFER_KINDS:
            raise r.fail(w + "kind", f"expected one of {', '.join(BUFFER_KINDS)}, got {kind!r}")
        index = r.get(t, "index", w, int)
        if index in seen:
            raise r.fail(w + "index", f"buffer index {index} is used twice")
        seen.add(index)
        known = {"name", "kind", "index", "dtype", "shape", "value", "fields", "init"}
        extra = set(t) - known
        if extra:
            raise r.fail(w + sorted(extra)[0], f"unknown key (known: {', '.join(sorted(known))})")
        dtype = r.get(t, "dtype", w, str, "float32")
        if kind == "struct":
            b = Buffer(index, name, kind, dtype, fields=dict(r.get(t, "fields", w, dict)))
            try:
                b.struct_dtype()
            except Exception as exc:
                raise r.fail(w + "dtype", f"expected 'module:NAME' of a numpy dtype, got {dtype!r} ({exc})") from None
        else:
            try:
                np.dtype(dtype)
            except TypeError:
                raise r.fail(w + "dtype", f"not a numpy dtype: {dtype!r}") from None
            shape = tuple(r.get(t, "shape", w, list, []))
            if kind != "scalar" and not shape:
                raise r.fail(w + "shape", f"a buffer of kind {kind!r} needs a shape")
            value = t.get("value") if kind == "scalar" else None
            if kind == "scalar" and value is None:
                raise r.fail(w + "value", "a scalar needs a value (a number or an expression)")
            init = r.get(t, "init", w, str, "nan" if kind == "output" else "uniform(-1, 1)")
            b = Buffer(index, name, kind, dtype, shape, value, init=init)
        out.append(b)
    return tuple(out)


def _mistakes(r: _Reader, items, has_body: bool) -> tuple:
    out = []
    for i, t in enumerate(items or []):
        w = f"mistakes[{i}]."
        form = r.get(t, "form", w, str, "kernel")
        if form not in ("kernel", "body") or (form == "body" and not has_body):
            raise r.fail(w + "form", f"expected 'kernel'{' or body' if has_body else ''}, got {form!r}")
        reps = r.get(t, "replace", w, list)
        if not reps or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p)
                               for p in reps):
            raise r.fail(w + "replace", "expected a list of [old, new] string pairs")
        expect = r.get(t, "expect", w, str)
        if expect not in PROBLEM_KINDS:
            raise r.fail(w + "expect", f"expected one of {', '.join(PROBLEM_KINDS)}, got {expect!r}")
        hint = r.get(t, "hint", w, list, [])
        out.append(Mistake(r.get(t, "title", w, str), form, tuple(tuple(p) for p in reps), expect, tuple(hint)))
    return tuple(out)


def _convention_buffers(conv) -> tuple:
    """Names and shapes of A, B, C of a first-party GEMM kernel (its binding comes from kernels.py)."""
    return (Buffer(0, "A", "input", shape=("M", "K")), Buffer(1, "B", "input", shape=("K", "N")),
            Buffer(2, "C", "inout" if conv.alpha_beta else "output", shape=("M", "N"),
                   init="uniform(-1, 1)" if conv.alpha_beta else "nan"))


def load(folder: Path) -> Exercise:
    """Read ``folder/exercise.toml``; raise :class:`SpecError` on any problem."""
    from ..kernels import KERNELS

    folder = Path(folder).resolve()
    path = folder / "exercise.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{_shown(path)}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{_shown(path)}: {exc}") from None
    r = _Reader(path, data)
    known = {"title", "order", "entries", "kernel", "convention", "skeleton", "solution", "constants", "derived",
             "variants", "cases", "buffers", "dispatch", "reference", "guards", "check", "body", "mistakes"}
    extra = set(data) - known
    if extra:
        raise r.fail(sorted(extra)[0], f"unknown key (known: {', '.join(sorted(known))})")

    constants = dict(r.get(data, "constants", "", dict, {}))
    for key, value in constants.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise r.fail(f"constants.{key}", f"expected a number, got {value!r} (top-level keys such as "
                         "`cases` must come before the first [table])")

    convention = r.get(data, "convention", "", str, None)
    if convention is not None:
        if convention not in KERNELS:
            raise r.fail("convention", f"expected a first-party kernel of gemmglossary.kernels "
                         f"({', '.join(KERNELS)}), got {convention!r}")
        for key in ("buffers", "dispatch"):
            if key in data:
                raise r.fail(key, f"comes from the convention {convention!r}; give one or the other")
        conv = KERNELS[convention]
        buffers = _convention_buffers(conv)
        constants = {"alpha": 1.0, "beta": 0.0, **constants}
        dispatch = None
        default_reference = {"C": "alpha * (A @ B) + (beta * C if beta != 0 else 0)" if conv.alpha_beta
                             else "A @ B"}
        default_atol = "gemm_tolerance(K)"
    else:
        buffers = _buffers(r, data.get("buffers"))
        d = r.get(data, "dispatch", "", dict)
        if ("threadgroups" in d) == ("threads" in d):
            raise r.fail("dispatch", "give exactly one of threadgroups (dispatchThreadgroups) or threads "
                         "(dispatchThreads)")
        dispatch = Dispatch(
            _expr_list(r, d["threadgroups"], "dispatch.threadgroups") if "threadgroups" in d else None,
            _expr_list(r, d["threads"], "dispatch.threads") if "threads" in d else None,
            _expr_list(r, r.get(d, "threads_per_threadgroup", "dispatch.", list), "dispatch.threads_per_threadgroup"),
        )
        default_reference, default_atol = {}, 1e-5
    names = {b.name for b in buffers}

    guards = dict(r.get(data, "guards", "", dict, {}))
    for key, text in guards.items():
        if key not in names or not isinstance(text, str):
            raise r.fail(f"guards.{key}", f"expected buffer name = \"test\" (buffers: {', '.join(sorted(names))})")
    buffers = tuple(Buffer(b.index, b.name, b.kind, b.dtype, b.shape, b.value, b.fields, b.init, guards.get(b.name))
                    for b in buffers)

    reference = dict(r.get(data, "reference", "", dict, default_reference))
    for out_name, expr in reference.items():
        b = next((b for b in buffers if b.name == out_name), None)
        if b is None or b.kind not in ("output", "inout"):
            raise r.fail(f"reference.{out_name}", "names no output or inout buffer")
        if not isinstance(expr, str):
            raise r.fail(f"reference.{out_name}", "expected a numpy expression (a string)")
    if not reference:
        raise r.fail("reference", "no output has a reference")

    cases = r.get(data, "cases", "", list)
    if not cases or not all(isinstance(c, dict) for c in cases):
        raise r.fail("cases", "expected a list of tables of variables, e.g. [{M = 33, N = 20, K = 48}]")
    variants = r.get(data, "variants", "", list, [{}])
    if not variants or not all(isinstance(v, dict) for v in variants):
        raise r.fail("variants", "expected a list of tables of -D defines (use [{}] for none)")

    check = r.get(data, "check", "", dict, {})
    unknown = set(check) - {"atol", "rtol", "owner", "max_total_threads"}
    if unknown:
        raise r.fail("check." + sorted(unknown)[0], "unknown key (known: atol, rtol, owner, max_total_threads)")
    owner = check.get("owner")
    if owner is not None:
        owner = _expr_list(r, owner, "check.owner")

    body = None
    if "body" in data:
        bt = r.get(data, "body", "", dict)
        w = "body."
        inputs = tuple(r.get(bt, "input_names", w, list))
        outputs = tuple(r.get(bt, "output_names", w, list))
        for n in inputs + outputs:
            if n not in names:
                raise r.fail(w + "input_names/output_names",
                             f"{n!r} is not one of the buffers ({', '.join(sorted(names))})")
        body = Body(inputs, outputs, _expr_list(r, r.get(bt, "grid", w, list), w + "grid"),
                    _expr_list(r, r.get(bt, "threadgroup", w, list), w + "threadgroup"),
                    r.path_in(folder, w + "skeleton", r.get(bt, "skeleton", w, str)),
                    r.path_in(folder, w + "solution", r.get(bt, "solution", w, str)))

    page = paths.docs_dir() / "exercises" / f"{folder.name}.md"
    if not page.is_file():
        raise r.fail("(page)", f"no page {_shown(page)}: its first section is the exercise's statement")
    return Exercise(
        name=folder.name, folder=folder, title=r.get(data, "title", "", str), order=r.get(data, "order", "", int),
        entries=tuple(r.get(data, "entries", "", list, [])), kernel=r.get(data, "kernel", "", str),
        convention=convention,
        skeleton=r.path_in(folder, "skeleton", r.get(data, "skeleton", "", str)),
        solution=r.path_in(folder, "solution", r.get(data, "solution", "", str)),
        buffers=buffers, dispatch=dispatch, cases=tuple(cases), variants=tuple(variants),
        constants=constants, derived=dict(r.get(data, "derived", "", dict, {})),
        reference=reference, atol=check.get("atol", default_atol), rtol=check.get("rtol", 0.0), owner=owner,
        max_total_threads=check.get("max_total_threads"), body=body,
        mistakes=_mistakes(r, data.get("mistakes"), body is not None),
    )


def all_exercises(root: Path | None = None) -> list[Exercise]:
    """Every exercise under ``exercises/`` (a folder with an exercise.toml), in order."""
    base = root or exercises_dir()
    found = [load(p.parent) for p in sorted(base.glob("*/exercise.toml"))]
    return sorted(found, key=lambda e: (e.order, e.name))


#: How a page names an exercise's place in the sequence: {{fact exercise name=NAME [field=F]}}.
PLACE_FACT = re.compile(r"\{\{fact exercise name=(?P<name>\w+)(?: field=(?P<field>\w+))?\}\}")


def place(name: str, field: str = "position", root: Path | None = None) -> str:
    """Where exercise ``name`` stands among all of them, in order: "Exercise 3 of 14"
    (``position``), its number (``number``) or how many there are (``count``). The pages say
    it with the ``exercise`` fact; ``gemmglossary exercise show`` with :func:`with_places`."""
    names = [e.name for e in all_exercises(root)]
    if name not in names:
        raise SpecError(f"no exercise {name!r}; there are {', '.join(names)}")
    number = names.index(name) + 1
    values = {"position": f"Exercise {number} of {len(names)}", "number": str(number), "count": str(len(names))}
    if field not in values:
        raise SpecError(f"field must be one of {', '.join(values)}, got {field!r}")
    return values[field]


def with_places(text: str, root: Path | None = None) -> str:
    """``text`` with every exercise-place fact replaced by its value (for a terminal)."""
    return PLACE_FACT.sub(lambda m: place(m["name"], m["field"] or "position", root), text)


def find(name: str, root: Path | None = None) -> Exercise:
    base = root or exercises_dir()
    folder = base / name
    if not (folder / "exercise.toml").is_file():
        known = ", ".join(e.name for e in all_exercises(base)) or "none"
        raise SpecError(f"no exercise named {name!r} (exercises: {known})")
    return load(folder)
