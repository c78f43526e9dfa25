"""From what went wrong to what to do: a :class:`Problem` with the lines that matter.

Each diagnostic is read into :class:`~.facts.Facts` first; the hint logic uses only those
facts, the exercise's description (buffer shapes and guards, who owns which element) and
the learner's own source lines, which it quotes.
"""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import expressions, facts as facts_mod, structure
from .compare import Mismatch
from .launch import Launch, generated_file
from .spec import Exercise

BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup)"

#: Reports are wrapped for a terminal (and for the site's transcripts).
WIDTH = 76


def wrap(line: str, width: int = WIDTH) -> str:
    """One report line wrapped at ``width``, continuation lines indented under their first."""
    indent = len(line) - len(line.lstrip(" "))
    more = " " * (indent + 2)
    return textwrap.fill(line, width, subsequent_indent=more, break_long_words=False, break_on_hyphens=False)


@dataclass
class Problem:
    kind: str  # one of spec.PROBLEM_KINDS
    title: str  # one line
    lines: list = field(default_factory=list)  # what happened, then what to do

    def text(self, width: int = WIDTH) -> str:
        return "\n".join(wrap(line, width) for line in [self.title, *self.lines])


def shown(path: str | Path) -> str:
    """A path as the learner would type it: relative to the current folder when inside it."""
    text = str(path)
    cwd = str(Path.cwd())
    if text.startswith(cwd + os.sep):
        return text[len(cwd) + 1:]
    home = str(Path.home())
    if text.startswith(home + os.sep):
        return "~" + text[len(home):]
    return text


class Source:
    """The learner's file: its lines, and how diagnostics name it."""

    def __init__(self, path: Path, text: str, form: str, offset: int = 0):
        self.path = Path(path).resolve()
        self.lines = text.splitlines()
        self.form = form
        self.offset = offset

    def line_of(self, site) -> int | None:
        """The learner's line number for a diagnostic's site, None if the site is elsewhere."""
        if site is None:
            return None
        if self.form == "body" and generated_file(site.file):
            n = site.line - self.offset
        elif Path(site.file).resolve() == self.path:
            n = site.line
        else:
            return None
        return n if 1 <= n <= len(self.lines) else None

    def text(self, line: int) -> str:
        return self.lines[line - 1].strip()

    def where(self, site) -> str:
        n = self.line_of(site)
        if n is not None:
            return f"line {n} (`{self.text(n)}`)"
        if site is None:
            return "an unknown line"
        return f"{shown(site.file)}:{site.line}"

    def relabel(self, message: str) -> str:
        """The message with the generated body file (body form) named as the learner's file."""
        if self.form != "body":
            return message.replace(str(self.path), shown(self.path))

        def fix(m):
            return f"{shown(self.path)}:{int(m.group(2)) - self.offset}"

        return re.sub(r"(\S*/metal_kernel/[^\s:]+\.metal):(\d+)", fix, message)


def _tuple(t) -> str:
    return "(" + ",".join(str(v) for v in t) + ")"


def _message(diagnostic, source: Source) -> str:
    text = str(diagnostic)
    text = re.sub(r"\n\(if the kernel only reads out of bounds.*?\)", "", text, flags=re.S)
    return source.relabel(text)


# ---------------------------------------------------------------------------- races

def _barrier_lines(source: Source, lo: int, hi: int) -> list[int]:
    """Lines strictly between ``lo`` and ``hi`` that call threadgroup_barrier (in code, not comments)."""
    return [n for n in structure.call_lines("\n".join(source.lines), "threadgroup_barrier") if lo < n < hi]


def race(f: facts_mod.Facts, source: Source, diagnostic) -> Problem:
    now, before = source.line_of(f.site), source.line_of(f.other_site)
    element = f"'{f.element}'" if f.element else "threadgroup memory"
    who_now = str(f.thread) if f.thread else "a thread"
    who_before = str(f.other_thread) if f.other_thread else "another thread"
    verb = {"read": "reads", "write": "writes"}
    past = {"read": "read", "write": "wrote"}
    facts_lines = [f"  {who_before} {past.get(f.other_access, 'touched')} it at {source.where(f.other_site)},",
                   f"  then {who_now} {verb.get(f.access, 'touches')} it at {source.where(f.site)},",
                   "  with no barrier between the two, so on a GPU the order of the two accesses is luck."]
    tg = _tuple(f.threadgroup or ())
    if now is None or before is None:
        return Problem("race", f"Data race on {element} in threadgroup {tg}", facts_lines + [
            f"Hint: put a {BARRIER}; between the two accesses, where every thread of the threadgroup reaches it."])
    lo, hi = min(now, before), max(now, before)
    fence = [n for n in _barrier_lines(source, lo, hi) if "mem_none" not in source.lines[n - 1]]
    weak = [n for n in _barrier_lines(source, lo, hi) if "mem_none" in source.lines[n - 1]]
    lines_of = {f.other_access: before, f.access: now}
    wl, rl = lines_of.get("write", now), lines_of.get("read", before)
    at = structure.placement("\n".join(source.lines), lo, hi)
    text = "\n".join(source.lines)
    if now != before and structure.outermost(text, now) != structure.outermost(text, before):
        # The two lines are in different functions (one is called from the other's body): the
        # lines between them say nothing about the order they run in, nor do barriers there.
        hazard = "accesses in two functions"
        hint = (f"Hint: line {lo} and line {hi} are in different functions, so what stands between them in "
                f"the file says nothing about the order they run in. Follow the call: no {BARRIER} that every "
                f"thread reaches runs between the write at line {wl} and the read at line {rl}. Either one is "
                "missing there, or the two accesses should not touch the same memory (a write into a tile, or "
                "a copy of it, that another thread is still reading?).")
    elif now == before:
        hazard, hint = "two threads, one element", (
            f"Hint: both accesses are at line {now}: two threads use the same element where each should have "
            f"its own. A barrier cannot fix this; check the index at line {now} (does it depend on the thread's "
            "position the way it should?).")
    elif not fence:
        # Nothing between the two lines orders them, whichever thread got there first.
        if f.access == f.other_access or wl < rl:
            # Writes first: the barrier goes as late as it can, just before the statement that reads,
            # so that it also covers the other writes of the same step above it.
            hazard = "two writes" if f.access == f.other_access else "read after write"
            why = ("the tile must be complete before anyone reads it" if hazard == "read after write" else
                   f"every thread must have finished line {lo} before any thread runs line {hi}")
            where = (f"just before line {at.second} (`{source.text(at.second)}`), after the writes above it "
                     f"(line {lo} is one)")
        else:
            hazard, why = "write after read", "every thread must be done reading before anyone overwrites"
            where = f"right after line {at.first_last}, where the reads end, and before line {hi}"
        hint = (f"Hint: add {BARRIER}; {where}: {why}. Nothing between line {lo} and line {hi} makes one "
                "thread wait for another. Put it where every thread of the threadgroup reaches it, not inside "
                "an `if`.")
    elif at.loop is not None:
        # The two lines are already separated within one step: the race spans two trips round the loop.
        hazard = "write after read, across two steps of the loop"
        hint = (f"Hint: the barrier at line {fence[0]} already separates line {lo} from line {hi} within one "
                f"step, so the race is between two steps of the loop at line {at.loop.head_line} "
                f"(`{source.text(at.loop.head_line)}`): nothing stops a thread that is done with this step from "
                f"going round the loop and writing the tile at line {wl} while another thread is still reading "
                f"it at line {rl}. Add {BARRIER}; at the end of the loop's body, after line {at.second_last}, "
                f"before its closing brace at line {at.loop.close_line}, so no thread starts the next step's "
                "loads before every thread has finished reading this step's tiles.")
    else:
        hazard = "a barrier that does not order them"
        hint = (f"Hint: the barrier at line {fence[0]} stands between line {lo} and line {hi}, yet it did not "
                "order them: every thread of the threadgroup must reach that same barrier (not inside an `if`, "
                "no early `return` before it).")
    p = Problem("race", f"Data race on {element} ({hazard}) in threadgroup {tg}", facts_lines + [hint])
    for n in weak:
        p.lines.append(f"  The barrier at line {n} has mem_flags::mem_none: it waits, but orders no threadgroup "
                       "memory; use mem_flags::mem_threadgroup.")
    return p


# -------------------------------------------------------------------- out of bounds

def _access(f: facts_mod.Facts, exercise: Exercise, source: Source) -> str:
    if f.access in ("read", "write"):
        return f.access
    buf = exercise.buffer(f.memory or "")
    if buf is not None and buf.kind == "input":
        return "read"
    if buf is not None and buf.kind == "output":
        return "write"
    n = source.line_of(f.site)
    if n is not None and f.memory:
        if re.search(rf"\b{re.escape(f.memory)}\s*\[[^\]]*\]\s*(?:[-+*/]?=)(?!=)", source.text(n)):
            return "write"
        return "read"
    return "access"


def out_of_bounds(f: facts_mod.Facts, exercise: Exercise, launch: Launch, source: Source) -> Problem:
    access = _access(f, exercise, source)
    name = f.memory or "a buffer"
    p = Problem("out-of-bounds", f"Out-of-bounds {access} of '{name}' at {source.where(f.site)}")
    who = f"{f.thread}" if f.thread else "a thread"
    tg = f" of threadgroup {_tuple(f.threadgroup)}" if f.threadgroup else ""
    buf = exercise.buffer(f.memory or "")
    position = ""
    if buf is not None and buf.is_array and f.index is not None:
        dims = [expressions.integer(s, launch.case.scope) for s in buf.shape]
        if len(dims) == 2 and f.index >= 0:
            row, col = divmod(f.index, dims[1])
            position = (f" = {name}[{row}][{col}]; {name} is {dims[0]} x {dims[1]} "
                        f"({' x '.join(str(s) for s in buf.shape)}), so row {row} is past its last row {dims[0] - 1}")
        elif f.index >= 0:
            position = f"; {name} has {int(np.prod(dims))} elements"
    if f.index is not None:
        p.lines.append(f"  {who}{tg} {'reads' if access == 'read' else 'writes' if access == 'write' else 'uses'} "
                       f"element {f.index}{position}.")
    if buf is not None and buf.guard:
        p.lines.append(f"Hint: the guard `{buf.guard}` is missing on this {access}, or the index at that line is "
                       "not the element this thread should touch (check the row stride). The grid is made of "
                       "whole threadgroups, so threads outside the matrix exist: they may not touch "
                       f"{name}" + (f"; a load into a tile writes 0 for them instead: "
                                    f"`({buf.guard}) ? {name}[...] : 0.0f`." if buf.kind == "input" else
                                    ". They must still run to the end (they share the loads and barriers), "
                                    "only their store is skipped."))
    elif buf is None:
        p.lines.append(f"Hint: '{name}' is not one of the exercise's buffers, so this is threadgroup memory (or a "
                       "local array): the index computed at that line runs past the end of the array.")
    else:
        p.lines.append(f"Hint: the index into {name} at that line runs past its end; compare it with the "
                       "buffer's shape above.")
    return p


# ------------------------------------------------------------------------ warnings

def warning(f: facts_mod.Facts, source: Source, diagnostic) -> Problem:
    if f.warning == "uninitialized-read":
        p = Problem("warning", f"'{f.element}' is read at {source.where(f.site)} before any thread of "
                               f"threadgroup {_tuple(f.threadgroup or ())} wrote it")
        p.lines.append("  On a GPU threadgroup memory starts with whatever was there; the emulator fills it with "
                       "NaN, so what is computed from the unwritten elements is NaN.")
        p.lines.append(f"Hint: the cooperative load leaves part of '{f.memory}' unwritten. Every element of the "
                       "tile must be written on every step, by some thread: check the loop's start, bound and "
                       "stride (the stride is the number of threads), and write 0 where the matrix ends instead "
                       "of skipping the element.")
        return p
    if f.warning == "returned-before-barrier":
        p = Problem("warning", f"Threads returned before the barrier at {source.where(f.site)}")
        p.lines.append("  " + _message(diagnostic, source).split(": ", 1)[-1])
        p.lines.append("Hint: a thread that returns early stops loading its share of the tiles, and the "
                       "Metal specification requires every thread to reach every barrier. Keep every thread "
                       "running to the end and put the bounds test on the store instead.")
        return p
    if f.warning == "oob-read":
        p = Problem("warning", f"Read outside '{f.memory}' at {source.where(f.site)}")
        p.lines.append("  " + _message(diagnostic, source))
        return p
    return Problem("warning", _message(diagnostic, source))


# --------------------------------------------------------------------- the others

def diagnostic_problem(diagnostic, exercise: Exercise, launch: Launch | None, source: Source) -> Problem:
    f = facts_mod.of(diagnostic)
    if f.kind == "race":
        return race(f, source, diagnostic)
    if f.kind == "out-of-bounds" and launch is not None:
        return out_of_bounds(f, exercise, launch, source)
    if f.kind == "warning":
        return warning(f, source, diagnostic)
    message = _message(diagnostic, source)
    if f.kind == "compile":
        hint = ("Hint: fix the first error first; the later ones often follow from it." if "no kernel named"
                not in message else f"Hint: the checker runs the kernel `{exercise.kernel}`; keep the name (and "
                "the signature) of the skeleton.")
        return Problem("compile", "The kernel does not compile", [
            "  " + line for line in message.splitlines()[:12]] + [hint])
    if f.kind == "barrier":
        where = ", ".join(source.where(s) for s in f.sites) or "the barrier"
        return Problem("barrier", f"Barrier misuse at {where}", ["  " + message, (
            "Hint: every thread of the threadgroup must reach the same barriers, the same number of times. "
            "A barrier inside an `if` on the thread's position (or after an early `return`) breaks that: "
            "move the barrier out of the condition and put the condition on the memory access instead.")])
    if f.kind == "divergence":
        where = ", ".join(source.where(s) for s in f.sites) or "a simdgroup operation"
        return Problem("divergence", f"A simdgroup operation reached by part of a simdgroup, at {where}", [
            "  " + message,
            "Hint: simdgroup_load, simdgroup_store and simdgroup_multiply_accumulate are executed by all 32 "
            "lanes together. Do not put them under a per-thread condition: mask the data (zero-filled tiles, "
            "a masked store), not the operation."])
    if f.kind == "timeout":
        return Problem("timeout", "The kernel did not finish", [
            "  " + message,
            "Hint: a loop whose counter never reaches its bound (a stride of 0, a wrong increment)?"])
    if f.kind == "launch":
        return Problem("launch", "The launch was refused", ["  " + message, (
            f"Hint: the checker dispatches {launch.dispatch if launch else 'as the statement says'} and binds "
            "the buffers of the skeleton's signature; the kernel must accept exactly that.")])
    return Problem("crash", "The kernel crashed", ["  " + message])


def _element(index: tuple) -> str:
    return "".join(f"[{i}]" for i in index)


def mismatch_problem(m: Mismatch, exercise: Exercise, launch: Launch) -> Problem:
    total, bad = m.wrong.size, int(m.wrong.sum())
    unwritten = int(m.unwritten.sum())
    first = m.first
    owner = f", computed by threadgroup {_tuple(m.owners[0])}" if m.owners else ""
    if unwritten == total:
        fill = m.fill if m.fill == "NaN" else ("its initial value" if total == 1 else "their initial values")
        p = Problem("unwritten", f"No element of {m.buffer} was written: "
                                 + (f"it still holds {fill}" if total == 1 else f"all {total} still hold {fill}"))
        p.lines.append(f"Hint: the kernel never stores {m.buffer} (or the test in front of the store is never "
                       "true). Each output element must be written by exactly one thread.")
        return p
    where = "row {} column {}".format(*first) if len(first) == 2 else f"index {first[0]}"
    if m.unwritten[first]:
        fill = m.fill if m.fill == "NaN" else "its initial value"
        head = f"{m.buffer}{_element(first)} ({where}) was never written: it still holds {fill}{owner}"
        kind = "unwritten"
    else:
        err = abs(m.got[first] - m.expected[first])
        head = (f"{m.buffer}{_element(first)} ({where}) is {m.got[first]:.6g}, numpy says "
                f"{m.expected[first]:.6g} (error {err:.3g}, tolerance {m.atol + m.rtol * abs(m.expected[first]):.3g})"
                f"{owner}")
        kind = "wrong"
    p = Problem(kind, head)
    line = f"  {bad} of {total} elements of {m.buffer} are wrong"
    if unwritten and kind == "wrong":
        line += f" ({unwritten} never written)"
    if m.owners is not None:
        tgs = m.owners
        shown_tgs = ", ".join(_tuple(t) for t in tgs[:6]) + (", ..." if len(tgs) > 6 else "")
        line += f", in {len(tgs)} of {m.threadgroups} threadgroups: {shown_tgs}"
    p.lines.append(line + ".")
    if m.local is not None:
        p.lines.append(f"  Within their threadgroups' tiles, the wrong elements are in {m.local}.")
    if m.owners is not None and m.partial is not None:
        wrong_tgs = set(m.owners)
        whole = m.threadgroups - len(m.partial)  # threadgroups whose tile lies inside the matrix
        if whole and m.partial and wrong_tgs <= m.partial:
            p.lines.append("Hint: only threadgroups whose tile hangs over the edge of the matrix are wrong; the "
                           "ones inside it are right. Look at what the kernel does where the matrix ends "
                           "(zero-filled loads outside it, a masked store).")
        elif len(wrong_tgs) == m.threadgroups and (whole or m.threadgroups > 1):
            p.lines.append("Hint: every threadgroup is wrong, not only the edge ones: the mistake is in the main "
                           "computation (an index, a stride, an origin), not in the edge handling.")
    if kind == "wrong" and np.isnan(m.got[first]) and not np.isnan(m.expected[first]):
        sources = [n for n, a in launch.originals.items() if a.dtype.kind == "f" and np.isnan(a).any()]
        if sources:
            p.lines.append(f"Hint: {m.buffer} is NaN where numpy's value is a number. Here {' and '.join(sources)} "
                           f"{'holds' if len(sources) == 1 else 'hold'} NaN, and any arithmetic with NaN gives NaN, "
                           f"even 0 * NaN: the kernel reads {' or '.join(sources)} where it must not (or never writes these "
                           "elements).")
    if kind == "unwritten":
        p.lines.append("Hint: some elements are never stored: is the store's test too strict, or does the loop "
                       "that writes the output cover only part of the tile?")
    return p
