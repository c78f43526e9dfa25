"""The lines of excerpts that the coverage check does not require to run, each with why.

They live in one file, ``coverage-exemptions.toml`` at the repository root::

    [[exempt]]
    file = "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h"
    lines = "120-124"          # one line, a range, or several: "7 9-11"
    reason = "the Apple-only branch: the emulator defines no __METAL_VERSION__ >= 400"

    [[no_code]]
    file = "kernels/tiled_gemm.metal"
    lines = "1-36"             # exactly an excerpt's range
    reason = "the file's header comment, its -D defaults and constants"

    [[unmeasured]]
    file = "kernels/vendor/mlx/backend/metal/kernels/reduction/ops.h"
    lines = "8-20"
    reason = "a #define: gcc counts a macro's code on the line that expands it"

``[[exempt]]`` lines may stay unexecuted; a ``[[no_code]]`` excerpt may have no executable
line at all, and an ``[[unmeasured]]`` one holds code that no coverage build attributes to
its lines (any other excerpt without executable lines fails the check: nothing would be
proved about it; the site says "not measured" for an unmeasured one).
An exemption must still be needed: every exempted line must be inside an excerpt of its
file and executable and unexecuted in the current coverage run, and every ``no_code``
range an excerpt's with no executable line; otherwise the check reports it as stale, so
that the file never holds a reason that is no longer true.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths

FILE_NAME = "coverage-exemptions.toml"


class ExemptionError(ValueError):
    pass


@dataclass
class Exemptions:
    lines: dict[str, dict[int, str]] = field(default_factory=dict)  # file -> line -> reason
    no_code: dict[tuple[str, int, int], str] = field(default_factory=dict)  # (file, start, end) -> reason
    unmeasured: dict[tuple[str, int, int], str] = field(default_factory=dict)  # (file, start, end) -> reason


def path(root: Path | None = None) -> Path:
    return (root or paths.project_root()) / FILE_NAME


def _numbers(text: str, where: str) -> list[int]:
    out = []
    for part in str(text).split():
        lo, _, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            raise ExemptionError(f"{where}: lines must be numbers or ranges like \"7 9-11\", not {text!r}") from None
        if a < 1 or b < a:
            raise ExemptionError(f"{where}: {part!r} is not a range of line numbers")
        out += range(a, b + 1)
    if not out:
        raise ExemptionError(f"{where}: no lines given")
    return out


def load(root: Path | None = None) -> Exemptions:
    """The exemptions file, read and checked for form; empty when there is none."""
    p = path(root)
    out = Exemptions()
    if not p.is_file():
        return out
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ExemptionError(f"{p.name}: {exc}") from None
    unknown = set(data) - {"exempt", "no_code", "unmeasured"}
    if unknown:
        raise ExemptionError(f"{p.name}: unknown table(s) {sorted(unknown)}; expected [[exempt]], [[no_code]] "
                             "and [[unmeasured]]")
    for kind in ("exempt", "no_code", "unmeasured"):
        for i, item in enumerate(data.get(kind, []), 1):
            where = f"{p.name}, [[{kind}]] {i}"
            if not isinstance(item, dict) or set(item) != {"file", "lines", "reason"}:
                raise ExemptionError(f"{where}: needs exactly the keys file, lines and reason")
            reason = str(item["reason"]).strip()
            if not reason:
                raise ExemptionError(f"{where}: the reason is empty")
            numbers = _numbers(item["lines"], where)
            if kind != "exempt":
                if len(str(item["lines"]).split()) != 1:
                    raise ExemptionError(f"{where}: give one range, an excerpt's (start-end)")
                key = (item["file"], numbers[0], numbers[-1])
                if key in out.no_code or key in out.unmeasured:
                    raise ExemptionError(f"{where}: {item['file']}:{item['lines']} is listed twice")
                getattr(out, kind)[key] = reason
                continue
            for n in numbers:
                if n in out.lines.setdefault(item["file"], {}):
                    raise ExemptionError(f"{where}: {item['file']}:{n} is exempted twice")
                out.lines[item["file"]][n] = reason
    return out


def check(table: Exemptions, entries: list[dict], report: dict) -> None:
    """Every exempted line is in an excerpt of its file and is executable and not executed
    in `report`, every no_code range an excerpt's without executable lines; else
    ExemptionError naming the stale ones."""
    stale = []
    for kind in ("no_code", "unmeasured"):
        for file, start, end in sorted(getattr(table, kind)):
            counts = report["lines"].get(file, {})
            code = [n for n in range(start, end + 1) if str(n) in counts]
            if not any(e["file"] == file and (e["start"], e["end"]) == (start, end) for e in entries):
                stale.append(f"{file}:{start}-{end}: {kind}, but no excerpt has this range")
            elif code:
                stale.append(f"{file}:{start}-{end}: {kind}, but lines {code} are executable")
    for file, lines in sorted(table.lines.items()):
        ranges = [(e["start"], e["end"]) for e in entries if e["file"] == file]
        counts = report["lines"].get(file, {})
        for n in sorted(lines):
            if not any(a <= n <= b for a, b in ranges):
                stale.append(f"{file}:{n}: in no excerpt")
            elif str(n) not in counts:
                stale.append(f"{file}:{n}: not an executable line")
            elif counts[str(n)] > 0:
                stale.append(f"{file}:{n}: executed ({counts[str(n)]} times)")
    if stale:
        raise ExemptionError(f"{FILE_NAME}: stale exemption(s), remove them:\n  " + "\n  ".join(stale))
