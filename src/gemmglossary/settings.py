"""Every ``GEMMGLOSSARY_*`` environment variable, declared once and read through one parser.

:data:`VARIABLES` says, for each variable, what it accepts and what it does; :func:`value`
reads one and converts it. A value the variable does not accept is a :class:`SettingError`
naming the variable, the value and what it accepts: never a silent default (a strict mode
that is ``banana`` is not quietly lax) and never a bare ``int()`` traceback. The commands
print it as one line and exit 2 (:mod:`gemmglossary.cli`). Unset or empty is the default.

Nothing else in the package reads a ``GEMMGLOSSARY_*`` variable from ``os.environ``
(tests/test_settings.py holds the package to it), so a new variable is declared here, with
its parser, or it cannot be read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


class SettingError(ValueError):
    """An environment variable holds a value it does not accept: the user's input, one line."""


@dataclass(frozen=True)
class Variable:
    name: str
    accepts: str      # what a value must be, in words (messages and the docs' table)
    meaning: str      # what it does
    parse: Callable[[str], object]  # the text (stripped, not empty) to its value; ValueError if refused
    default: object = None
    internal: bool = False  # set by the project for its own child processes, not by a user


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _boolean(text: str) -> bool:
    t = text.lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise ValueError


def _positive_int(text: str) -> int:
    if not re.fullmatch(r"\+?\d+", text) or int(text) < 1:
        raise ValueError
    return int(text)


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.lower() not in choices:
            raise ValueError
        return text.lower()
    return parse


def _existing_folder(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise ValueError("no such folder" if not path.exists() else "not a folder")
    return path.resolve()


def _folder(text: str) -> Path:
    """A folder that exists or can be made: not an existing file."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError("a file, not a folder")
    return path


def _text(text: str) -> str:
    return text


_BOOLEAN = f"{', '.join(_TRUE)} or {', '.join(_FALSE)}"

VARIABLES = {v.name: v for v in (
    Variable("GEMMGLOSSARY_BACKEND", "one of metal, emulator or auto",
             "which backend runs kernels (default: auto, the Apple GPU where it has what the kernels need)",
             _choice("metal", "emulator", "auto"), "auto"),
    Variable("GEMMGLOSSARY_ROOT", "an existing folder (a checkout of the project)",
             "the project the tooling works on (default: the checkout the package is installed from)",
             _existing_folder),
    Variable("GEMMGLOSSARY_CACHE_DIR", "a folder you can write (made if missing)",
             "the per-user cache of compiled kernels (default: $XDG_CACHE_HOME/gemmglossary or "
             "~/.cache/gemmglossary)", _folder),
    Variable("GEMMGLOSSARY_EXERCISES_DIR", "a folder (made if missing)",
             "your copies of the exercises and status.json (default: ~/gemmglossary-exercises)", _folder),
    Variable("GEMMGLOSSARY_EMULATOR_WORKERS", "a positive integer",
             "how many processes share a launch's threadgroups (default: up to 2 CPUs)", _positive_int),
    Variable("GEMMGLOSSARY_EMULATOR_STRICT", _BOOLEAN,
             "every PortabilityWarning is a PortabilityError (default: off)", _boolean, False),
    Variable("GEMMGLOSSARY_EMULATOR_DEVICE_RACES", _BOOLEAN,
             "every launch also checks device memory for races, on an instrumented build in one worker "
             "(device_races=; default: off)", _boolean, False),
    Variable("GEMMGLOSSARY_EMULATOR_INPROCESS", _BOOLEAN,
             "run kernels inside the calling process, to debug the emulator under gdb (default: off)",
             _boolean, False),
    Variable("GEMMGLOSSARY_EMULATOR_START", "fork or spawn",
             "how the emulator starts its workers (default: spawn)",
             _choice("fork", "spawn")),
    Variable("GEMMGLOSSARY_EMULATOR_SYMBOLIZER", "addr2line or dwarf",
             "what turns a kernel's code addresses into lines (default: addr2line where installed)",
             _choice("addr2line", "dwarf")),
    Variable("GEMMGLOSSARY_EMULATOR_CXXFLAGS", "compiler flags, separated by spaces",
             "extra flags of every kernel compile, e.g. -march=native (part of the cache key)", _text, ""),
    Variable("GEMMGLOSSARY_SITE_COVERAGE", "on or off",
             "off builds the site without line coverage (default: on)", _choice("on", "off"), "on"),
    Variable("GEMMGLOSSARY_FIGURES", "a folder (made if missing)",
             "where a snippet run (as a script or a notebook) also saves its figures as PNG files", _folder),
    Variable("GEMMGLOSSARY_COVERAGE", "a folder",
             "the data folder of a coverage run (set by the coverage run)", _folder, internal=True),
    Variable("GEMMGLOSSARY_COVERAGE_SESSION", "a folder",
             "the test session that measures coverage (set by it)", _folder, internal=True),
    Variable("GEMMGLOSSARY_FULL_PAGE_SCREENSHOTS", _BOOLEAN,
             "the browser tests' light and dark screenshots of each glossary page (.screenshots/) show "
             "the whole page, not its first screen (default: off)", _boolean, False, internal=True),
    Variable("GEMMGLOSSARY_BENCH_TIMELINE", "a folder",
             "where `bench suite` has its test run record each test's times (set by it)", _folder,
             internal=True),
)}


def value(name: str):
    """The value of variable ``name``: its default when unset or empty, else its parsed text."""
    var = VARIABLES[name]
    raw = os.environ.get(name, "")
    text = raw.strip()
    if not text:
        return var.default
    try:
        return var.parse(text)
    except ValueError as exc:
        why = f" ({exc})" if str(exc) else ""
        raise SettingError(f"{name}={raw!r}{why}: expected {var.accepts}") from None


def describe() -> str:
    """A Markdown table of the variables a user may set (what docs/emulator.md shows)."""
    rows = ["| Variable | Accepts | What it does |", "| --- | --- | --- |"]
    for v in VARIABLES.values():
        if not v.internal:
            rows.append(f"| `{v.name}` | {v.accepts} | {v.meaning} |")
    return "\n".join(rows)
