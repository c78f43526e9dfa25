"""``gemmglossary excerpts update``: re-anchor moved excerpts and rewrite the lock.

- An excerpt whose locked text now stands elsewhere in its file is re-anchored: the
  page's snippet line gets the new range, and its ``annotate``/``hl_lines`` numbers
  shift by the same offset.
- New excerpts are added to the lock; lock entries no page uses are dropped.
- Changed text is relocked only with ``accept_changes`` (and listed).

Pages and the lock are written atomically, and concurrent runs on one checkout are
serialized, so docs writers may run it while others edit pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import project_root
from .blocks import Block
from .check import Report, check, docs_pages, expected_title, span
from .lock import Entry, exclusive, lock_path, read_lock, write_lock, write_text_atomic


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
    snippet_line = lines[block.snippet_index]
    pattern = rf":{block.start}:{block.end}(?=[\"'][ \t]*$)"
    lines[block.snippet_index], n = re.subn(pattern, f":{new_start}:{new_end}", snippet_line, count=1)
    assert n == 1, snippet_line  # find_blocks parsed exactly this shape
    info = lines[block.open_index]
    for key in ("annotate", "hl_lines"):
        if (value := block.attr(key)) is not None:
            info = _replace_attr(info, key, _shift_numbers(value, offset))
    if block.attr("linenums") is not None:
        info = _replace_attr(info, "linenums", str(new_start))
    if block.attr("title") == expected_title(block.file, block.start, block.end):
        info = _replace_attr(info, "title", expected_title(block.file, new_start, new_end))
    lines[block.open_index] = info


def _reanchor_pages(root: Path, docs_dir: Path, entries: list[Entry],
                    result: UpdateResult) -> tuple[set, set]:
    """Rewrite pages whose excerpts moved; return the (new, old) keys of re-anchored excerpts."""
    moved_keys, old_keys = set(), set()
    for page, path in docs_pages(docs_dir).items():
        text = path.read_text(encoding="utf-8")
        report = check(root, docs_dir=docs_dir, pages={page: text}, entries=entries)
        moved = [ex for ex in report.excerpts if ex.new_range and ex.locked is not None]
        if not moved:
            continue
        lines = text.split("\n")
        new_keys, page_old_keys, page_actions = set(), set(), []
        for ex in moved:
            a, z = ex.new_range
            b = ex.block
            reanchor(lines, b, a, z)
            new_keys.add((page, b.file, a, z))
            page_old_keys.add(ex.key)
            page_actions.append(
                f"re-anchored docs/{page}:{b.page_line}: {b.file} {span(b.start, b.end)} → {span(a, z)}"
            )
        # The page may have been edited since we read it: only write over what we read.
        if path.read_text(encoding="utf-8") != text:
            result.refused.append(f"docs/{page}: changed while updating; run the update again")
            continue
        write_text_atomic(path, "\n".join(lines))
        moved_keys |= new_keys
        old_keys |= page_old_keys
        result.actions.extend(page_actions)
    return moved_keys, old_keys


def update(root: Path | None = None, *, accept_changes: bool = False,
           docs_dir: Path | None = None) -> UpdateResult:
    root = root or project_root()
    docs_dir = docs_dir or root / "docs"
    result = UpdateResult()
    with exclusive(root):
        path = lock_path(root)
        entries = read_lock(path)
        moved_keys, old_keys = _reanchor_pages(root, docs_dir, entries, result)
        report = check(root, docs_dir=docs_dir, entries=entries)
        locked = {e.key: e for e in entries}
        new_entries: dict[tuple, Entry] = {}
        for ex in report.excerpts:
            key = ex.key
            if key is None or key in new_entries:
                continue
            b = ex.block
            where = f"docs/{ex.page}:{b.page_line}: {b.file} {span(b.start, b.end)}"
            old = locked.get(key)
            if ex.sha256 is None:  # range or file invalid: keep what the lock had
                if old is not None:
                    new_entries[key] = old
                continue
            current = Entry(ex.page, b.file, b.start, b.end, ex.sha256)
            if old is None:
                new_entries[key] = current
                if key not in moved_keys:
                    result.actions.append(f"added {where}")
            elif old.sha256 == ex.sha256:
                new_entries[key] = old
            elif ex.new_range is not None:
                new_entries[key] = old  # moved, but the page could not be rewritten
            elif accept_changes:
                new_entries[key] = current
                result.actions.append(f"accepted changed text of {where}")
            else:
                new_entries[key] = old
                result.refused.append(
                    f"{where}: text changed; not relocked without --accept-changes "
                    "(review the page first)"
                )
        for e in sorted(set(entries)):
            if e.key not in new_entries and e.key not in old_keys:
                result.actions.append(f"dropped unused lock entry docs/{e.page}: {e.file} "
                                      f"{span(e.start, e.end)}")
        if write_lock(path, list(new_entries.values())):
            result.actions.append(f"wrote {path.name} ({len(new_entries)} excerpts)")
        result.report = check(root, docs_dir=docs_dir)
    return result

