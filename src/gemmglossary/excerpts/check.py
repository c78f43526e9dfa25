"""Compare pages, kernel files and the lock; report each problem precisely.

Every problem names the page line of the excerpt line (``docs/<page>:<line>``), the file
and the range, and says what to do. :func:`check` is what ``gemmglossary excerpts check``,
the tests and the mkdocs hook run.

A quoted upstream file (MLX, llama.cpp: ``kernels/vendor/...``) is first checked against
its pin in ``kernels/vendor.toml``: an edited
copy is reported as such (``gemmglossary vendor`` restores it), never as an excerpt whose
text changed, which would invite locking the edit.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import vendor
from ..paths import project_root
from . import transaction
from .blocks import Block, StrayLine, parse_numbers, scan
from .lock import LOCK_NAME, RESTORE, Entry, file_lines, hash_lines, line_hash, lock_path, read_lock

VENDOR_PREFIX = vendor.VENDOR_PREFIX
UPDATE = "run `gemmglossary excerpts update`"
ACCEPT = "review the page, then `gemmglossary excerpts update --accept-changes`"


def span(start: int, end: int) -> str:
    return f"line {start}" if start == end else f"lines {start}–{end}"


def display_path(file: str) -> str:
    """How a title names the file: vendored files by their path under kernels/vendor/
    (``mlx/backend/metal/kernels/...``, ``llama.cpp/ggml/src/...``)."""
    return file[len(VENDOR_PREFIX):] if file.startswith(VENDOR_PREFIX) else file


def expected_title(file: str, start: int, end: int) -> str:
    return f"{display_path(file)} · {span(start, end)}"


@dataclass(frozen=True)
class Problem:
    # malformed, stray, missing-file, vendored, range, attrs, unlocked, moved,
    # moved-changed, changed, unused, no-lock, interrupted
    kind: str
    message: str
    page: str | None = None  # relative to docs/; None: a problem of the lock itself
    line: int | None = None  # page line of the excerpt line
    file: str | None = None
    start: int | None = None
    end: int | None = None
    new_range: tuple[int, int] | None = None

    def __str__(self) -> str:
        if self.page is None:
            return f"{LOCK_NAME}: {self.message}"
        if self.kind == "unused":
            where = f"{LOCK_NAME}: docs/{self.page}"
        else:
            where = f"docs/{self.page}:{self.line}"
        what = ""
        if self.file is not None:
            what = f" {self.file}"
            if self.start is not None and self.end is not None:
                what += f" lines {self.start}–{self.end}"
            what += ":"
        return f"{where}:{what} {self.message}"


@dataclass
class Excerpt:
    """One excerpt block of one page, checked against its file and the lock."""

    page: str
    block: Block
    problems: list[Problem] = field(default_factory=list)
    lines: list[str] | None = None  # the quoted lines, when the range is valid
    sha256: str | None = None  # of the quoted lines
    locked: Entry | None = None
    new_range: tuple[int, int] | None = None  # where the locked lines stand now
    moved_and_changed: bool = False  # new_range found by the surviving lines only

    @property
    def key(self) -> tuple[str, str, int, int] | None:
        b = self.block
        if b.file is None or b.start is None or b.end is None:
            return None
        return (self.page, b.file, b.start, b.end)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class Report:
    excerpts: list[Excerpt]
    problems: list[Problem]
    pages: int

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        files = {e.block.file for e in self.excerpts}
        return (f"{len(self.excerpts)} excerpts of {len(files)} files on {self.pages} pages "
                f"match {LOCK_NAME}")


class FileCache:
    """Reads each quoted file once per check (a vendored one after checking its pin)."""

    def __init__(self, root: Path):
        self.root = root
        self._cache: dict[str, tuple[list[str] | None, tuple[str, str] | None]] = {}

    def lines(self, file: str) -> tuple[list[str] | None, tuple[str, str] | None]:
        """(lines, None) or (None, (problem kind, why the file cannot be quoted))."""
        if file not in self._cache:
            self._cache[file] = self._read(file)
        return self._cache[file]

    def _read(self, file: str) -> tuple[list[str] | None, tuple[str, str] | None]:
        pure = PurePosixPath(file)
        if pure.is_absolute() or ".." in pure.parts or "\\" in file:
            return None, ("missing-file", "the path must be relative to the repository root, without `..`")
        path = self.root / file
        if not path.is_file():
            hint = ""
            if file.startswith(VENDOR_PREFIX):
                hint = (" (upstream files are materialized by `gemmglossary vendor`; is the file pinned in "
                        "kernels/vendor.toml?)")
            return None, ("missing-file", f"missing file: no {file} in the repository{hint}")
        if file.startswith(VENDOR_PREFIX):
            try:
                why = vendor.check_file(path)
            except vendor.VendorError as exc:
                why = str(exc)
            if why is not None:
                return None, ("vendored", why)
        try:
            return file_lines(path.read_text(encoding="utf-8")), None
        except UnicodeDecodeError as exc:
            return None, ("missing-file", f"{file} is not UTF-8 text ({exc})")


def find_moved(lines: list[str], sha256: str, length: int, near: int) -> tuple[int, int] | None:
    """Where ``length`` lines hashing to ``sha256`` stand now (the occurrence nearest ``near``)."""
    hits = [
        s for s in range(1, len(lines) - length + 2)
        if hash_lines(lines[s - 1 : s - 1 + length]) == sha256
    ]
    if not hits:
        return None
    best = min(hits, key=lambda s: (abs(s - near), s))
    return best, best + length - 1


def _distinctive(line: str) -> bool:
    """A line that can anchor a block: not blank, not only braces and punctuation."""
    return any(c.isalnum() for c in line)


def find_moved_and_changed(lines: list[str], entry: Entry) -> tuple[int, int, int] | None:
    """Where the locked block stands now when it moved *and* changed: found by the
    lines that survived (the lock's per-line hashes). (start, end, unchanged lines), or
    None when fewer than half of its lines, or none that is distinctive, survive."""
    old = list(entry.lines)
    n = len(old)
    if not n or n != entry.end - entry.start + 1:
        return None
    now = [line_hash(t) for t in lines]
    where: dict[str, list[int]] = {}
    for j, h in enumerate(now):
        where.setdefault(h, []).append(j)
    votes: Counter[int] = Counter()
    for i, h in enumerate(old):
        for j in where.get(h, ()):
            votes[j - i] += 1.0 / len(where[h])  # a line found once votes with full weight
    if not votes:
        return None
    offset = min(votes, key=lambda d: (-votes[d], abs(d - (entry.start - 1))))
    kept = [i for i, h in enumerate(old) if 0 <= i + offset < len(now) and now[i + offset] == h]
    if 2 * len(kept) < n or not any(_distinctive(lines[i + offset]) for i in kept):
        return None
    # Lines added or removed inside the block: align the two versions around the offset.
    lo, hi = max(0, offset - n), min(len(now), offset + 2 * n)
    blocks = [b for b in difflib.SequenceMatcher(None, old, now[lo:hi], autojunk=False).get_matching_blocks()
              if b.size]
    first, last = blocks[0], blocks[-1]
    start = lo + first.b - first.a
    end = lo + last.b + last.size - 1 + (n - last.a - last.size)
    start, end = max(0, start), min(len(now) - 1, end)
    unchanged = sum(b.size for b in blocks)
    return start + 1, end + 1, unchanged


def _attr_problems(ex: Excerpt, p) -> None:
    b = ex.block
    start, end = b.start, b.end
    linenums = b.attr("linenums")
    if linenums is not None and linenums.strip() != str(start):
        ex.problems.append(p("attrs", f'linenums="{linenums}" disagrees with the range, which '
                                      f"starts at {start}; drop it (the hook sets it)"))
    title = b.attr("title")
    if title is not None and title != expected_title(b.file, start, end):
        ex.problems.append(p("attrs", f'title="{title}" disagrees with the range; drop it '
                                      f'(the hook sets title="{expected_title(b.file, start, end)}")'))
    annotate = parse_numbers(b.attr("annotate"), ranges=False)
    for name, numbers in (("annotate", annotate), ("hl_lines", parse_numbers(b.attr("hl_lines"), ranges=True))):
        if numbers.error:
            ex.problems.append(p("attrs", f'{name}="{b.attr(name)}": {numbers.error}'))
            continue
        outside = [n for n in numbers.numbers if not start <= n <= end]
        if outside:
            ex.problems.append(p("attrs", f"{name} line{'s' if len(outside) > 1 else ''} "
                                          f"{', '.join(map(str, outside))} outside the quoted range "
                                          f"{start}–{end} (use the file's own line numbers)"))
    if annotate.numbers and not annotate.error and b.list_items != len(annotate.numbers):
        found = b.list_items or 0
        ex.problems.append(p("attrs", f"annotate marks {len(annotate.numbers)} line(s) but the "
                                      f"ordered list right after the block has {found} item(s)"))


def check_excerpt(page: str, block: Block, files: FileCache, lock: dict | None) -> Excerpt:
    """Check one block; ``lock`` maps keys to entries (None: skip the lock comparison)."""
    ex = Excerpt(page, block)
    b = block

    def p(kind: str, message: str, new_range=None) -> Problem:
        return Problem(kind, message, page, b.page_line, b.file, b.start, b.end, new_range)

    if b.error:
        ex.problems.append(p("malformed", b.error))
        return ex
    lines, why = files.lines(b.file)
    if lines is None:
        ex.problems.append(p(*why))
        return ex
    range_ok = False
    if b.start < 1 or b.end < 1:
        ex.problems.append(p("range", "empty range: line numbers start at 1"))
    elif b.end < b.start:
        ex.problems.append(p("range", f"reversed range: {b.end} comes before {b.start}"))
    elif b.end > len(lines):
        ex.problems.append(p("range", f"range past the end of the file, which has {len(lines)} lines"))
    else:
        range_ok = True
        ex.lines = lines[b.start - 1 : b.end]
        # The highlighter of either engine drops leading and trailing blank lines, so the
        # block would be titled with lines it does not show. (Not said of lines that drifted
        # from their lock entry: the drift is the problem there.)
        entry = None if lock is None else lock.get(ex.key)
        for where, number in (("starts", b.start), ("ends", b.end)):
            if (entry is None or entry.sha256 == ex.sha256) and not lines[number - 1].strip():
                ex.problems.append(p("range", f"the range {where} on a blank line ({number}), which the "
                                              "page would not show under its title: leave it out"))
                break
        ex.sha256 = hash_lines(ex.lines)
        _attr_problems(ex, p)
    if lock is None or b.start < 1 or b.end < b.start:
        return ex
    ex.locked = lock.get(ex.key)
    if ex.locked is None:
        if range_ok:
            ex.problems.append(p("unlocked", f"excerpt missing from {LOCK_NAME}; {UPDATE}"))
        return ex
    if ex.locked.sha256 == ex.sha256:
        return ex
    ex.new_range = find_moved(lines, ex.locked.sha256, b.end - b.start + 1, b.start)
    if ex.new_range:
        a, z = ex.new_range
        if not range_ok:  # past the end: say where the lines went instead
            ex.problems = [q for q in ex.problems if q.kind != "range"]
        ex.problems.append(p("moved", f"moved: now at lines {a}–{z}; {UPDATE}",
                             ex.new_range))
        return ex
    found = find_moved_and_changed(lines, ex.locked)
    if found and (found[0], found[1]) != (b.start, b.end):
        a, z, kept = found
        ex.new_range = (a, z)
        ex.moved_and_changed = True
        ex.problems = [q for q in ex.problems if q.kind != "range"]
        ex.problems.append(p("moved-changed", f"moved and changed: the block now seems to stand at "
                             f"{span(a, z)} ({kept} of {len(ex.locked.lines)} lines unchanged); "
                             f"{UPDATE} to re-anchor the page there, review it, then relock with "
                             "`--accept-changes`", ex.new_range))
    elif range_ok:
        ex.problems.append(p("changed", f"text changed; {ACCEPT}"))
    return ex


def docs_pages(docs_dir: Path) -> dict[str, Path]:
    """Markdown pages under docs/ (skipping dot-folders such as .hooks), by docs-relative path."""
    pages = {}
    for path in sorted(docs_dir.rglob("*.md")):
        rel = path.relative_to(docs_dir)
        if any(part.startswith(".") for part in rel.parts):
            continue
        pages[rel.as_posix()] = path
    return pages


def read_pages(docs_dir: Path) -> tuple[dict[str, str], list[Problem]]:
    """The text of every page under docs/, and a problem for each that cannot be read."""
    pages, problems = {}, []
    for rel, path in docs_pages(docs_dir).items():
        try:
            pages[rel] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem("malformed", f"not UTF-8 text ({exc.reason} at byte {exc.start})", rel, 1))
    return pages, problems


def _stray_problem(page: str, stray: StrayLine) -> Problem:
    return Problem("stray", f"excerpt line {stray.text!r} {stray.where} is not quoted: nothing expands "
                            "it there. An excerpt is a ```metal fenced block holding only this line "
                            "(a ```markdown or ```text fence shows the syntax)", page, stray.page_line)


def load_lock(root: Path) -> dict | None:
    """The lock's entries by key; None when there is no lock file (not an empty lock)."""
    path = lock_path(root)
    if not path.exists():
        return None
    return {e.key: e for e in read_lock(path)}


def check_page(page: str, text: str, files: FileCache, lock: dict | None,
               scanned: tuple[list[Block], list[StrayLine]] | None = None) -> tuple[list[Excerpt], list[Problem]]:
    """Every excerpt and stray excerpt line of one page, checked (``lock`` None: no lock
    file), plus the lock entries of this page that none of its excerpts uses.

    ``scanned`` is ``scan(text)`` when the caller has it (with page lines of its own).
    """
    blocks, strays = scanned if scanned is not None else scan(text)
    excerpts = [check_excerpt(page, block, files, lock) for block in blocks]
    problems = [_stray_problem(page, stray) for stray in strays]
    problems += [q for ex in excerpts for q in ex.problems]
    if lock is None and excerpts:
        problems.append(Problem("no-lock", f"missing: nothing to check the {len(excerpts)} excerpts of "
                                           f"docs/{page} against; {RESTORE}"))
    used = {ex.key for ex in excerpts}
    for e in sorted(set((lock or {}).values())):
        if e.page == page and e.key not in used:
            problems.append(_unused(e, "the page no longer quotes this range"))
    return excerpts, problems


def _unused(e: Entry, why: str) -> Problem:
    return Problem("unused", f"lock entry that no page uses ({why}); {UPDATE}",
                   e.page, None, e.file, e.start, e.end)


def interrupted(root: Path) -> list[Problem]:
    if transaction.pending(root):
        return [Problem("interrupted", "an `excerpts update` was interrupted while writing the pages "
                        "and the lock; run `gemmglossary excerpts update` to finish it")]
    return []


def check(
    root: Path | None = None,
    *,
    docs_dir: Path | None = None,
    pages: dict[str, str] | None = None,
    entries: list[Entry] | None = None,
) -> Report:
    """Check every excerpt of ``pages`` (page → markdown; default: all of docs/) against
    ``entries`` (default: the lock file)."""
    root = root or project_root()
    docs_dir = docs_dir or root / "docs"
    problems: list[Problem] = interrupted(root)
    if pages is None:
        pages, unreadable = read_pages(docs_dir)
        problems += unreadable
    lock = load_lock(root) if entries is None else {e.key: e for e in entries}
    files = FileCache(root)
    excerpts = []
    for page, text in sorted(pages.items()):
        found, page_problems = check_page(page, text, files, lock)
        excerpts += found
        problems += [q for q in page_problems if q.kind == "stray"]
    problems += [q for ex in excerpts for q in ex.problems]
    if lock is None and excerpts:
        problems.append(Problem("no-lock", f"missing: nothing to check the {len(excerpts)} excerpts against; "
                                           f"{RESTORE}"))
    used = {ex.key for ex in excerpts}
    for e in sorted(set((lock or {}).values())):
        if e.key not in used:
            problems.append(_unused(e, "the page no longer quotes this range" if e.page in pages else "no such page"))
    return Report(excerpts, problems, len(pages))
