"""Line coverage of each excerpt the pages quote, from a coverage run's report.

For an excerpt (page, file, lines start..end of the lock), its *executable* lines are
those of the range on which the compiler put code in some instrumented build; the
*executed* ones ran at least once; the *missing* ones never ran and are not exempted.
Blank lines, comments and pure declarations carry no code and so never count. An
exempted line (:mod:`.exemptions`) is shown apart, with its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from ..excerpts.lock import lock_path
from . import exemptions as _exemptions


@dataclass(frozen=True)
class ExcerptCoverage:
    page: str
    file: str
    start: int
    end: int
    executed: tuple[int, ...]
    missing: tuple[int, ...]
    exempt: dict = field(default_factory=dict)  # line -> reason
    no_code: str = ""  # why the excerpt has no executable line (coverage-exemptions.toml), if listed
    unmeasured: str = ""  # why its code is not measured (coverage-exemptions.toml), if listed

    @property
    def executable(self) -> int:
        """Executable lines that count: executed or missing (exempted ones are apart)."""
        return len(self.executed) + len(self.missing)

    @property
    def summary(self) -> str:
        if self.executable == 0 and not self.exempt:
            return "line coverage not measured" if self.unmeasured else "no executable lines"
        s = f"{len(self.executed)} of {self.executable} {'line' if self.executable == 1 else 'lines'} executed"
        if self.exempt:
            s += f" ({len(self.exempt)} exempted)"
        return s


def lock_entries(root: Path | None = None) -> list[dict]:
    return json.loads(lock_path(root).read_text())["excerpts"]


def excerpt_coverage(entry: dict, lines: dict[str, int], exempt: dict[int, str], no_code: str = "",
                     unmeasured: str = "") -> ExcerptCoverage:
    """`lines`: {line (str): count} of the entry's file in the report."""
    executed, missing, ex = [], [], {}
    for n in range(entry["start"], entry["end"] + 1):
        count = lines.get(str(n))
        if count is None:
            continue
        if n in exempt:
            ex[n] = exempt[n]
        elif count > 0:
            executed.append(n)
        else:
            missing.append(n)
    return ExcerptCoverage(entry["page"], entry["file"], entry["start"], entry["end"], tuple(executed),
                           tuple(missing), ex, no_code, unmeasured)


def all_excerpts(report: dict, root: Path | None = None) -> list[ExcerptCoverage]:
    """Every excerpt of the lock, in the lock's order. Raises ExemptionError on a bad or
    stale exemption (see :func:`.exemptions.check`)."""
    root = root or paths.project_root()
    entries = lock_entries(root)
    table = _exemptions.load(root)
    _exemptions.check(table, entries, report)
    def key(e):
        return (e["file"], e["start"], e["end"])
    return [excerpt_coverage(e, report["lines"].get(e["file"], {}), table.lines.get(e["file"], {}),
                             table.no_code.get(key(e), ""), table.unmeasured.get(key(e), "")) for e in entries]
