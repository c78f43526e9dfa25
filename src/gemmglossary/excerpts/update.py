"""``gemmglossary excerpts update``: re-anchor moved excerpts and rewrite the lock.

- An excerpt whose locked text now stands elsewhere in its file is re-anchored: the
  page's excerpt line gets the new range, and its ``annotate``/``hl_lines`` numbers
  shift by the same offset.
- An excerpt that moved *and* changed is found by its surviving lines and re-anchored
  there, but not relocked, even with ``accept_changes``: the run shows the new range,
  the writer reviews it, and a later ``--accept-changes`` relocks it.
- New excerpts are added to the lock; lock entries no page uses are dropped. An entry a
  page still quotes is kept, whatever is wrong with it now: its file missing, edited or
  unreadable, or a block of its page that cannot be parsed.
- Changed text is relocked only with ``accept_changes`` (and listed). Without a lock
  file every excerpt would be "new": then nothing is locked without ``accept_changes``.

The pages and the lock are written together or not at all (:mod:`.transaction`), a
page edited while the update ran is never overwritten, and concurrent runs on one
checkout are serialized, so docs writers may run it while others edit pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import project_root
from . import transaction
from .blocks import Block
from .check import Excerpt, Report, check, expected_title, read_pages, span
from .lock import LOCK_NAME, RESTORE, Entry, dumps, exclusive, line_hash, lock_path, read_lock


@dataclass
class UpdateResult:
    actions: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    report: Report | None = None  # the check after the update

    @property
    def ok(self) -> bool:
        return self.report is not None and self.report.ok


def _shift_numbers(value: str, offset: int) -> str:
    return re.sub(r"\d+", lambda m: str(int(m.group(0)) + offset), value)


def _replace_attr(info_line: str, key: str, new_value: str) -> str:
    pattern = re.compile(r"(?<![\w-])(" + re.escape(key) + r"""=)("[^"]*"|'[^']*'|[^\s"']+)""")
    return pattern.sub(lambda m: m.group(1) + '"' + new_value + '"', info_line, count=1)


def reanchor(lines: list[str], block: Block, new_start: int, new_end: int) -> None:
    """Rewrite one block of a page (in place) to quote ``new_start..new_end``."""
    offset = new_start - block.start
    excerpt_line = lines[block.line_index]
    pattern = rf":{block.start}:{block.end}(?=[\"'][ \t]*$)"
    lines[block.line_index], n = re.subn(pattern, f":{new_start}:{new_end}", excerpt_line, count=1)
    assert n == 1, excerpt_line  # find_blocks parsed exactly this shape
    info = lines[block.open_index]
    for key in ("annotate", "hl_lines"):
        if (value := block.attr(key)) is not None:
            info = _replace_attr(info, key, _shift_numbers(value, offset))
    if block.attr("linenums") is not None:
        info = _replace_attr(info, "linenums", str(new_start))
    if block.attr("title") == expected_title(block.file, block.start, block.end):
        info = _replace_attr(info, "title", expected_title(block.file, new_start, new_end))
    lines[block.open_index] = info


def _entry(ex: Excerpt, start: int, end: int, sha256: str, lines: tuple[str, ...]) -> Entry:
    return Entry(ex.page, ex.block.file, start, end, sha256, lines)


def _where(ex: Excerpt) -> str:
    b = ex.block
    return f"docs/{ex.page}:{b.page_line}: {b.file} {span(b.start, b.end)}"


def _plan(report: Report, entries: list[Entry], pages: dict[str, str], accept_changes: bool,
          result: UpdateResult) -> tuple[dict[str, list[str]], dict[tuple, Entry]]:
    """(new lines of each page to rewrite, new lock entries by key), actions in ``result``."""
    rewritten: dict[str, list[str]] = {}
    new_entries: dict[tuple, Entry] = {}
    moved_from: set[tuple] = set()
    # The check compares with the lock only what it could read; an excerpt whose file is
    # missing, edited or unreadable still uses its entry, which must survive until the file
    # is back (else the file's return, changed, would be locked as "added").
    locked = {e.key: e for e in entries}
    # A page with a block that cannot be parsed (or an excerpt line out of its fence) may
    # still quote any of its ranges: none of its entries is dropped until it is fixed.
    unsure = {ex.page for ex in report.excerpts if ex.key is None}
    unsure |= {q.page for q in report.problems if q.kind in ("stray", "malformed") and q.page is not None}
    for ex in report.excerpts:
        key, b = ex.key, ex.block
        if key is None:
            continue
        old = ex.locked or locked.get(key)
        if ex.new_range and old is not None:
            a, z = ex.new_range
            reanchor(rewritten.setdefault(ex.page, pages[ex.page].split("\n")), b, a, z)
            moved_from.add(key)
            # The old hashes go along: moving a block accepts none of its text.
            new_entries.setdefault((ex.page, b.file, a, z), _entry(ex, a, z, old.sha256, old.lines))
            if ex.moved_and_changed:
                result.actions.append(f"re-anchored {_where(ex)} → {span(a, z)}, where the block now "
                                      "seems to stand (moved and changed)")
                result.refused.append(f"docs/{ex.page}:{b.page_line}: {b.file} {span(a, z)}: moved and "
                                      "changed; re-anchored but not relocked: review the page, then "
                                      "`gemmglossary excerpts update --accept-changes`")
            else:
                result.actions.append(f"re-anchored {_where(ex)} → {span(a, z)}")
            continue
        if key in new_entries:
            continue
        if ex.sha256 is None:  # invalid range, missing or edited file: keep what the lock had
            if old is not None:
                new_entries[key] = old
            continue
        current = _entry(ex, b.start, b.end, ex.sha256, tuple(line_hash(t) for t in ex.lines))
        if old is None:
            new_entries[key] = current
            result.actions.append(f"added {_where(ex)}")
        elif old.sha256 == ex.sha256:
            new_entries[key] = current  # the same text (with per-line hashes, if the lock lacked them)
        elif accept_changes:
            new_entries[key] = current
            result.actions.append(f"accepted changed text of {_where(ex)}")
        else:
            new_entries[key] = old
            result.refused.append(f"{_where(ex)}: text changed; not relocked without --accept-changes "
                                  "(review the page first)")
    for e in sorted(set(entries)):
        if e.key in new_entries or e.key in moved_from:
            continue
        if e.page in unsure:
            new_entries[e.key] = e
            continue
        result.actions.append(f"dropped unused lock entry docs/{e.page}: {e.file} {span(e.start, e.end)}")
    return rewritten, new_entries


def update(root: Path | None = None, *, accept_changes: bool = False,
           docs_dir: Path | None = None) -> UpdateResult:
    root = root or project_root()
    docs_dir = docs_dir or root / "docs"
    result = UpdateResult()
    with exclusive(root):
        for target in transaction.recover(root):
            result.actions.append(f"finished an interrupted update: wrote {target}")
        path = lock_path(root)
        if not path.exists() and not accept_changes:
            result.refused.append(f"{LOCK_NAME}: missing, so every excerpt would be locked as it is now; "
                                  f"nothing written: {RESTORE}")
            result.report = check(root, docs_dir=docs_dir)
            return result
        entries = read_lock(path)
        pages, unreadable = read_pages(docs_dir)
        report = check(root, docs_dir=docs_dir, pages=pages, entries=entries)
        keep = [e for e in entries if any(q.page == e.page for q in unreadable)]
        rewritten, new_entries = _plan(report, [e for e in entries if e not in keep], pages,
                                       accept_changes, result)
        writes = {}
        for page, lines in rewritten.items():
            page_path = docs_dir / page
            # The page may have been edited since it was read: never write over an edit.
            if page_path.read_text(encoding="utf-8") != pages[page]:
                result.refused.append(f"docs/{page}: changed while updating; nothing written, "
                                      "run the update again")
                result.actions = [a for a in result.actions if a.startswith("finished an interrupted")]
                result.report = check(root, docs_dir=docs_dir)
                return result
            writes[page_path] = "\n".join(lines)
        final = list(new_entries.values()) + keep
        text = dumps(final)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            writes[path] = text
        transaction.commit(root, writes)
        if path in writes:
            result.actions.append(f"wrote {path.name} ({len(set(final))} excerpts)")
        result.report = check(root, docs_dir=docs_dir)
    return result
