"""Excerpt blocks show the kernel file's own line numbers, as the excerpt lock says, and
their line coverage."""

import re
from collections import defaultdict

import pytest

from gemmglossary.coverage.site import UNEXECUTED_CLASS
from sitechecks import check_excerpts, page_url, set_color_scheme

pytestmark = pytest.mark.browser


def test_excerpt_blocks_show_the_file_lines(page, site, site_pages, lock_entries):
    if not lock_entries:
        pytest.fail("excerpts.lock.json lists no excerpts", pytrace=False)
    by_page = defaultdict(list)
    for entry in lock_entries:
        by_page[page_url(site.base_url, entry["page"])].append(entry)
    # The excerpt hook lets a page excluded from the build keep its lock entries;
    # only pages the site actually has can be looked at.
    checked = {url: entries for url, entries in by_page.items() if url in site_pages}
    assert checked, f"no page of the site has a lock entry (lock pages: {sorted(by_page)})"
    problems = []
    for url, entries in sorted(checked.items()):
        problems += check_excerpts(page, url, entries)
        problems += coverage_problems(page, url, "default")  # the page is still open
    assert not problems, "\n".join(problems)


# What a reader's browser makes of the line coverage (gemmglossary.coverage.site and
# docs/stylesheets/coverage.css): the note beside each excerpt's source link, and the tint
# and margin bar on a line the tests never executed, in both schemes. The real site has
# no such line (tests/coverage fails if one appears), so the mark is given to the first
# line of the page's first excerpt here, exactly as coverage.site.mark_unexecuted writes it
# (its HTML is checked in tests/coverage/test_site_marks.py).
_COVERAGE_JS = """(cls) => {
  const notes = Array.from(document.querySelectorAll('a.excerpt-coverage')).map(a => {
    const r = a.getBoundingClientRect();
    return {text: a.textContent.trim(), visible: r.width > 0 && r.height > 0};
  });
  const lines = Array.from(document.querySelectorAll('.highlight code span[id^="__span-"]'));
  if (lines.length < 2) return {notes, mark: null};
  const [marked, plain] = lines;
  marked.classList.add(cls);
  const style = getComputedStyle(marked);
  const code = marked.closest('code');
  return {notes, mark: {background: style.backgroundColor, shadow: style.boxShadow,
                        plain: getComputedStyle(plain).backgroundColor,
                        width: marked.getBoundingClientRect().width,
                        codeWidth: code.getBoundingClientRect().width}};
}"""
NOTE_TEXT = re.compile(r"^(\d+ of \d+ lines? executed( \(\d+ exempted\))?|no executable lines|line coverage .+)$")


def coverage_problems(page, url: str, scheme: str) -> list[str]:
    """What is wrong with the coverage notes and an unexecuted line's mark on the open page."""
    found = page.evaluate(_COVERAGE_JS, UNEXECUTED_CLASS)
    problems = [f"{url} ({scheme}): coverage note {note}" for note in found["notes"]
                if not note["visible"] or not NOTE_TEXT.match(note["text"])]
    if not found["notes"]:
        problems.append(f"{url} ({scheme}): no coverage note beside its excerpts")
    mark = found["mark"]
    if mark is None:
        problems.append(f"{url} ({scheme}): no code block with two lines to mark one in")
    elif (mark["background"] == mark["plain"] or mark["shadow"] in ("", "none")
            or mark["width"] < 0.9 * mark["codeWidth"]):
        problems.append(f"{url} ({scheme}): an unexecuted line does not stand out: {mark}")
    return problems


def test_unexecuted_lines_stand_out_in_the_dark_scheme_too(page, site, site_pages, lock_entries):
    # (the light scheme is checked on every excerpt page by the test above)
    pages = sorted({page_url(site.base_url, e["page"]) for e in lock_entries} & set(site_pages))[:2]
    assert pages, "no page of the site has an excerpt"
    problems = []
    for url in pages:
        page.goto(url, wait_until="load")
        problem = set_color_scheme(page, "slate")
        problems += [f"{url}: {problem}"] if problem else coverage_problems(page, url, "slate")
    assert not problems, "\n".join(problems)
