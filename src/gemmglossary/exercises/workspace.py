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
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from .. import settings
from ..file_lock import atomic_write, exclusive
from .spec import Exercise

ENV_VAR = "GEMMGLOSSARY_EXERCISES_DIR"
STATUS_FILE = "status.json"


class WorkspaceError(ValueError):
    """The workspace cannot be used as asked (inside the repository, a copy already there...)."""


def folder() -> Path:
    override = settings.value(ENV_VAR)
    base = override if override is not None else Path.home() / "gemmglossary-exercises"
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
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(exercise.body.skeleton if body else exercise.skeleton, target)
    except OSError as exc:
        raise WorkspaceError(f"cannot copy the skeleton to {target} ({exc.strerror}); set {ENV_VAR} to a folder "
                             "you can write") from None
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


#: What each exercise's entry of status.json holds, and the type of each.
ENTRY_KEYS = {"file": str, "sha256": str, "passed": bool, "backend": str, "checked": str}


def _load() -> dict:
    """status.json, checked: a wrong shape is an error, never read as "nothing checked" (the
    next record would write over what it held)."""
    p = folder() / STATUS_FILE
    if not p.exists():
        return {}
    forget = "delete it to forget what was checked"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WorkspaceError(f"{p}: not valid JSON ({exc}); {forget}") from None
    except UnicodeDecodeError as exc:
        raise WorkspaceError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start}); {forget}") from None
    except OSError as exc:
        raise WorkspaceError(f"{p}: cannot be read ({exc.strerror}); {forget}") from None
    expected = ("expected {\"EXERCISE\": {" + ", ".join(f'"{k}": {v.__name__}' for k, v in ENTRY_KEYS.items())
                + "}, ...}")
    if not isinstance(data, dict):
        raise WorkspaceError(f"{p}: {expected}, but it holds a {type(data).__name__}; {forget}")
    for name, entry in data.items():
        if not isinstance(entry, dict) or any(not isinstance(entry.get(k), v) for k, v in ENTRY_KEYS.items()):
            raise WorkspaceError(f"{p}: the entry of {name!r} is {json.dumps(entry)[:80]}; {expected}; {forget}")
    return data


class NotRecorded(WorkspaceError):
    """A check whose outcome is not recorded, and why (said to the learner, not an error)."""


def record(exercise: Exercise, path: Path, passed: bool, backend: str) -> bool:
    """Remember the outcome of a check (True). Not recorded, with the reason (:class:`NotRecorded`):
    a file inside the repository (the reference solutions, the skeletons: not the learner's
    work), and a failing check of another file than the one that solved the exercise (a
    scratch copy does not undo a solution). A folder that cannot be written is a
    WorkspaceError."""
    root = paths.project_root().resolve()
    if root in Path(path).resolve().parents:
        raise NotRecorded(f"{path} is inside the repository {root}: only your own copies are recorded")
    target = folder() / STATUS_FILE
    outcome = {
        "file": str(Path(path).resolve()), "sha256": _digest(Path(path)), "passed": bool(passed),
        "backend": backend, "checked": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    # pytest may check several exercises at once (the test extra's xdist, -n): one process
    # at a time reads, adds its outcome and writes, so none is lost
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with exclusive(target.with_name(STATUS_FILE + ".lock")):
            data = _load()
            solved = status_of(exercise, data.get(exercise.name))
            if not passed and solved.state == "solved" and solved.file != Path(outcome["file"]):
                raise NotRecorded(f"{exercise.name} stays solved by {solved.file}; a failing check of another file "
                                  "does not undo that")
            data[exercise.name] = outcome
            atomic_write(target, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    except OSError as exc:
        raise WorkspaceError(f"cannot write {target} ({exc.strerror}); set {ENV_VAR} to a folder you can "
                             "write") from None
    return True


@dataclass
class Status:
    state: str  # "solved" | "failing" | "changed" | "unchecked" | "not started"
    file: Path | None
    detail: str = ""


def status(exercise: Exercise) -> Status:
    return status_of(exercise, _load().get(exercise.name))


def status_of(exercise: Exercise, entry: dict | None) -> Status:
    """The state of an exercise whose status.json entry is ``entry`` (None: never checked)."""
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
