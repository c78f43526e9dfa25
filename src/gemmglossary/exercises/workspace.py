"""The learner's side: their copies of the skeletons, and which exercises they solved.

Nothing a learner writes goes into the repository. ``gemmglossary exercise start NAME``
copies the skeleton to ``~/gemmglossary-exercises/NAME.metal`` (``NAME.body.metal`` for
the ``mx.fast.metal_kernel`` form; ``$GEMMGLOSSARY_EXERCISES_DIR`` moves the folder), and
every check records its outcome in that folder's ``status.json`` with the sha256 of the
file it checked. An exercise counts as solved while the file that passed is unchanged.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..file_lock import atomic_write, exclusive
from .spec import Exercise

ENV_VAR = "GEMMGLOSSARY_EXERCISES_DIR"
STATUS_FILE = "status.json"


class WorkspaceError(ValueError):
    """The workspace cannot be used as asked (inside the repository, a copy already there...)."""


def folder() -> Path:
    override = os.environ.get(ENV_VAR)
    base = Path(override).expanduser() if override else Path.home() / "gemmglossary-exercises"
    base = base.resolve()
    root = paths.project_root().resolve()
    if base == root or root in base.parents:
        raise WorkspaceError(f"the exercises folder {base} is inside the repository {root}: a learner's work and "
                             f"what they solved never go into it; set {ENV_VAR} to a folder outside it")
    return base


def copy_path(exercise: Exercise, body: bool = False) -> Path:
    return folder() / f"{exercise.name}{'.body' if body else ''}.metal"


def start(exercise: Exercise, *, body: bool = False, force: bool = False) -> Path:
    """Copy the skeleton into the workspace; never overwrite a learner's file unless told to."""
    if body and exercise.body is None:
        raise WorkspaceError(f"exercise {exercise.name} has no mx.fast.metal_kernel form; start it without --body")
    target = copy_path(exercise, body)
    if target.exists() and not force:
        raise WorkspaceError(f"{target} already exists (your work); pass --force to start over from the skeleton")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(exercise.body.skeleton if body else exercise.skeleton, target)
    return target


def learner_file(exercise: Exercise) -> Path | None:
    """The learner's copy to check by default: the kernel form, else the body form, else None."""
    for body in (False, True):
        p = copy_path(exercise, body)
        if p.is_file():
            return p
    return None


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load() -> dict:
    p = folder() / STATUS_FILE
    if not p.is_file():
        return {}
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WorkspaceError(f"{p}: not valid JSON ({exc}); delete it to forget what was checked") from None
    return data if isinstance(data, dict) else {}


def record(exercise: Exercise, path: Path, passed: bool, backend: str) -> bool:
    """Remember the outcome of a check; files inside the repository (the reference solutions,
    the skeletons) are not the learner's work and are not recorded. Returns whether it was."""
    root = paths.project_root().resolve()
    if root in Path(path).resolve().parents:
        return False
    target = folder() / STATUS_FILE
    outcome = {
        "file": str(Path(path).resolve()), "sha256": _digest(Path(path)), "passed": bool(passed),
        "backend": backend, "checked": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    # pytest may check several exercises at once (the test extra's xdist, -n): one process
    # at a time reads, adds its outcome and writes, so none is lost
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(target.with_name(STATUS_FILE + ".lock")):
        data = _load()
        data[exercise.name] = outcome
        atomic_write(target, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return True


@dataclass
class Status:
    state: str  # "solved" | "failing" | "changed" | "unchecked" | "not started"
    file: Path | None
    detail: str = ""


def status(exercise: Exercise) -> Status:
    entry = _load().get(exercise.name)
    mine = learner_file(exercise)
    if entry:
        checked = Path(entry.get("file", ""))
        if not checked.is_file():
            return Status("unchecked" if mine else "not started", mine, f"{checked} is gone")
        if _digest(checked) != entry.get("sha256"):
            return Status("changed", checked, "changed since its last check")
        when = entry.get("checked", "")
        on = entry.get("backend", "")
        return Status("solved" if entry.get("passed") else "failing", checked, f"{when} on the {on}")
    if mine is not None:
        return Status("unchecked", mine)
    return Status("not started", None)
