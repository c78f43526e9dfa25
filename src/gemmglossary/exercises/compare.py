"""Outputs against the numpy reference: which elements are wrong, and who computed them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import expressions
from .launch import Launch
from .spec import Exercise

#: Side of the virtual output used to count how many elements a whole tile holds.
_PROBE = 1024


@dataclass
class Mismatch:
    buffer: str
    shape: tuple
    wrong: np.ndarray  # bool mask of wrong elements
    unwritten: np.ndarray  # bool mask of wrong elements still holding the fill value
    got: np.ndarray
    expected: np.ndarray
    atol: float
    rtol: float
    fill: str  # what unwritten elements hold: "NaN", or "initial" (the values the buffer was given)
    first: tuple  # index of the first wrong element, row-major
    owners: list | None  # threadgroup of the first wrong element, then of every wrong one (sorted)
    partial: set | None  # threadgroups whose tile is partial (hangs over an edge), None if unknown
    threadgroups: int | None  # how many threadgroups own elements of this output
    local: str | None = None  # where in their tiles the wrong elements are ("rows 16-31, all columns")


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element: whether `a` holds exactly the bytes of `b` (NaN payloads included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(np.asarray(b, dtype=a.dtype))
    n = a.dtype.itemsize
    return (a.view(np.uint8).reshape(*a.shape, n) == b.view(np.uint8).reshape(*b.shape, n)).all(axis=-1)


def reference(exercise: Exercise, launch: Launch) -> dict:
    scope = dict(launch.case.scope)
    scope.update(launch.originals)
    out = {}
    for name, text in exercise.reference.items():
        value = expressions.evaluate(text, scope, numpy_ok=True)
        out[name] = np.asarray(value, dtype=np.float64)
    return out


def _owner_ids(exercise: Exercise, scope: dict, shape: tuple):
    """(per-element threadgroup ids as a tuple of arrays) or None without an owner description."""
    if exercise.owner is None or len(shape) not in (1, 2):
        return None
    grids = np.indices(shape)
    names = {"i": grids[0]} if len(shape) == 1 else {"row": grids[0], "col": grids[1]}
    ids = []
    for text in exercise.owner:
        v = expressions.evaluate(text, {**scope, **names})
        ids.append(np.broadcast_to(np.asarray(v, dtype=np.int64), shape))
    return tuple(ids)


def _tile_capacity(exercise: Exercise, scope: dict, ndim: int) -> int:
    shape = (_PROBE * _PROBE,) if ndim == 1 else (_PROBE, _PROBE)
    ids = _owner_ids(exercise, scope, shape)
    first = np.ones(shape, bool)
    for a in ids:
        first &= a == 0
    return int(first.sum())


def _ranges(values) -> str:
    values = sorted(set(int(v) for v in values))
    out, start = [], values[0]
    for a, b in zip(values, values[1:] + [None]):
        if b != a + 1:
            out.append(f"{start}" if start == a else f"{start}-{a}")
            if b is not None:
                start = b
    return ", ".join(out)


def _local(ids, wrong: np.ndarray, capacity: int) -> str | None:
    """The rows and columns, counted inside each threadgroup's tile, that hold wrong elements."""
    rows, cols = np.indices(wrong.shape)
    keys = np.stack([a.ravel() for a in ids], axis=1)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    n = inverse.max() + 1
    row0 = np.full(n, np.iinfo(np.int64).max)
    col0 = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(row0, inverse, rows.ravel())
    np.minimum.at(col0, inverse, cols.ravel())
    flat = wrong.ravel()
    lr = (rows.ravel() - row0[inverse])[flat]
    lc = (cols.ravel() - col0[inverse])[flat]
    if lr.size == 0:
        return None
    return f"rows {_ranges(lr)} and columns {_ranges(lc)}"


def compare(exercise: Exercise, launch: Launch) -> list[Mismatch]:
    expected_all = reference(exercise, launch)
    scope = launch.case.scope
    atol = float(expressions.evaluate(exercise.atol, scope))
    rtol = float(expressions.evaluate(exercise.rtol, scope))
    found = []
    for name, expected in expected_all.items():
        buf = exercise.buffer(name)
        got_raw = launch.outputs[name]
        got = got_raw.astype(np.float64)
        if got.shape != expected.shape:
            raise ValueError(f"{exercise.name}: reference for {name} has shape {expected.shape}, "
                             f"the buffer {got.shape}")
        ok = np.abs(got - expected) <= atol + rtol * np.abs(expected)
        wrong = ~ok  # NaN compares false, so NaN is wrong
        if not wrong.any():
            continue
        if buf.kind == "output" and buf.init == "nan":
            # the NaN it started with, bit for bit: a NaN it computed (from threadgroup memory
            # it never wrote, which the emulator fills with another NaN) was written
            unwritten, fill = wrong & _same_bits(got_raw, launch.originals[name]), "NaN"
        else:  # a NaN it started with cannot be told from a NaN it computed: only equal values count
            unwritten, fill = wrong & (got == launch.originals[name]), "initial"
        first = tuple(int(i) for i in np.argwhere(wrong)[0])
        ids = _owner_ids(exercise, scope, got.shape)
        owners = partial = count = None
        if ids is not None:
            keys = np.stack([a.ravel() for a in ids], axis=1)
            wrong_keys = {tuple(int(v) for v in k) for k in keys[wrong.ravel()]}
            first_owner = tuple(int(a[first]) for a in ids)
            owners = [first_owner] + sorted(wrong_keys - {first_owner})
            uniq, counts = np.unique(keys, axis=0, return_counts=True)
            capacity = _tile_capacity(exercise, scope, got.ndim)
            partial = {tuple(int(v) for v in k) for k, c in zip(uniq, counts) if c < capacity}
            count = len(uniq)
            local = _local(ids, wrong, capacity) if got.ndim == 2 else None
        found.append(Mismatch(name, got.shape, wrong, unwritten, got, expected, atol, rtol, fill, first, owners,
                              partial, count, local if ids is not None else None))
    return found
