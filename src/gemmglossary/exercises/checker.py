"""Check a learner's file against an exercise: every variant, every case, the first problem.

``check(exercise, path)`` compiles the file (a whole kernel through ``gg.load_kernel``, or
an ``mx.fast.metal_kernel`` body through ``gg.metal_kernel``) on the active backend, runs
it on each case of the description in order, compares with numpy, and stops at the first
problem, which :mod:`.hints` turns into text with the lines that matter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import vendor
from ..emulator import errors as emu_errors
from . import expressions, hints, launch as launch_mod
from .compare import compare
from .hints import Problem, Source
from .spec import TODO_MARK, Exercise


class CheckError(ValueError):
    """The check cannot start (no such file, an unusable backend): bad input, not a wrong kernel."""


@dataclass
class Run:
    label: str
    dispatch: str
    ok: bool


@dataclass
class Report:
    exercise: Exercise
    path: Path
    form: str  # "kernel" or "body"
    backend: str
    runs: list = field(default_factory=list)
    problem: Problem | None = None
    todo_lines: list = field(default_factory=list)
    cases_total: int = 0

    @property
    def passed(self) -> bool:
        return self.problem is None and len(self.runs) == self.cases_total

    def text(self) -> str:
        form = "an mx.fast.metal_kernel body" if self.form == "body" else "a kernel"
        out = [hints.wrap(f"Exercise {self.exercise.name} ({self.exercise.title}): checking "
                          f"{hints.shown(self.path)} as {form} on the {self.backend}")]
        width = max((len(r.label) for r in self.runs), default=0)
        for r in self.runs:
            out.append(f"  {'ok  ' if r.ok else 'FAIL'}  {r.label:<{width}}  {r.dispatch}")
        if self.problem is not None:
            out += ["", self.problem.text()]
        if self.todo_lines:
            shown = ", ".join(str(n) for n in self.todo_lines)
            out += ["", hints.wrap(f"Still marked {TODO_MARK} in {hints.shown(self.path)}: "
                                   f"line{'s' if len(self.todo_lines) > 1 else ''} {shown}.")]
        passed = sum(r.ok for r in self.runs)
        out.append("")
        if self.passed:
            out.append(f"PASS: all {self.cases_total} cases match numpy. Solved.")
            if self.backend == "metal":
                out.append("(The GPU checks neither races nor bounds: `--backend emulator` does.)")
        else:
            out.append(f"FAIL: {passed} of {self.cases_total} cases passed before the first problem.")
        return "\n".join(out)


def _problem_for_launch(exercise: Exercise, run: launch_mod.Launch, source: Source) -> Problem | None:
    if run.error is not None:
        if isinstance(run.error, expressions.ExpressionError):
            raise run.error
        return hints.diagnostic_problem(run.error, exercise, run, source)
    mismatches = compare(exercise, run)
    if run.warnings:
        p = hints.diagnostic_problem(run.warnings[0], exercise, run, source)
        if mismatches:
            p.lines.append("  The result is wrong too: " + hints.mismatch_problem(mismatches[0], exercise, run).title)
        return p
    if mismatches:
        return hints.mismatch_problem(mismatches[0], exercise, run)
    return None


def _attribute_problem(exercise: Exercise, kernel, defines: dict, backend: str) -> Problem | None:
    if exercise.max_total_threads is None:
        return None
    expected = expressions.integer(exercise.max_total_threads, exercise.variables({}, defines))
    actual = int(getattr(kernel, "max_total_threads_per_threadgroup", 1024))
    ok = actual <= expected if backend == "metal" else actual == expected
    if ok:
        return None
    where = " (" + " ".join(f"-D{k}={v}" for k, v in defines.items()) + ")" if defines else ""
    if actual >= 1024:
        title = f"The kernel does not declare max_total_threads_per_threadgroup{where}"
        detail = (f"  Its pipeline accepts up to {actual} threads per threadgroup, so the compiler must budget "
                  f"registers for {actual} co-resident threads; the kernel is dispatched with {expected}.")
    else:
        title = f"max_total_threads_per_threadgroup is {actual}, but the kernel is dispatched with {expected}{where}"
        detail = ("  The attribute must be the thread count every cooperative loop of the kernel is divided by, "
                  "and the one the host dispatches.")
    return Problem("attribute", title, [detail, (
        "Hint: declare `[[kernel, max_total_threads_per_threadgroup(N)]]` with N the number of threads the "
        "kernel is written for, as an expression of the same compile-time constants that number comes from, "
        "so the two cannot drift apart.")])


def _read(path: Path) -> str:
    """The learner's file as text; what it cannot be read as is bad input, one line."""
    if path.is_dir():
        raise CheckError(f"{path} is a folder; give the kernel file to check")
    if not path.is_file():
        raise CheckError(f"no such file: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CheckError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise CheckError(f"{path}: cannot be read ({exc.strerror})") from None
    if not text.strip():
        raise CheckError(f"{path} is empty: nothing to check (`gemmglossary exercise start NAME` copies the "
                         "skeleton to start from)")
    return text


def check(exercise: Exercise, path, *, backend_name: str | None = None) -> Report:
    from ..runtime import BackendUnavailable, backend

    path = Path(path)
    text = _read(path)
    try:
        chosen = backend(backend_name)
    except BackendUnavailable as exc:
        raise CheckError(str(exc)) from None
    form = "kernel" if launch_mod.declares_kernel(text) else "body"
    report = Report(exercise, path, form, chosen)
    report.todo_lines = [i for i, line in enumerate(text.splitlines(), 1) if TODO_MARK in line]
    source = Source(path, text, form)

    if form == "body" and exercise.body is None:
        report.cases_total = len(exercise.cases) * len(exercise.variants)
        report.problem = Problem("compile", f"{hints.shown(path)} declares no kernel function", [
            f"Hint: this exercise takes a whole kernel file declaring `kernel void {exercise.kernel}(...)`; "
            f"start from {hints.shown(exercise.skeleton)}."])
        return report

    if form == "body":
        vendor.ensure()  # MLX's utils.h, which metal_kernel sources include
        kernel = launch_mod.make_body_kernel(exercise, text)
        report.cases_total = len(exercise.cases)
        for case in launch_mod.cases(exercise, {}):
            run = launch_mod.run_body(kernel, exercise, case, text)
            source.offset = run.body_offset
            problem = _problem_for_launch(exercise, run, source)
            report.runs.append(Run(case.label, run.dispatch, problem is None))
            if problem is not None:
                report.problem = problem
                return report
        return report

    report.cases_total = len(exercise.cases) * len(exercise.variants)
    for defines in exercise.variants:
        try:
            kernel = launch_mod.load_kernel(exercise, path, defines, chosen)
        except emu_errors.EmulatorError as exc:
            report.problem = hints.diagnostic_problem(exc, exercise, None, source)
            return report
        except Exception as exc:  # the Metal compiler's error on a Mac
            if type(exc).__name__ != "MetalError":
                raise
            report.problem = Problem("compile", "The kernel does not compile", ["  " + str(exc)])
            return report
        problem = _attribute_problem(exercise, kernel, defines, chosen)
        if problem is not None:
            report.problem = problem
            return report
        for case in launch_mod.cases(exercise, defines):
            run = launch_mod.run_kernel(kernel, exercise, case)
            problem = _problem_for_launch(exercise, run, source)
            report.runs.append(Run(case.label, run.dispatch, problem is None))
            if problem is not None:
                report.problem = problem
                return report
    return report
