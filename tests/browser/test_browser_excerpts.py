"""Excerpt blocks show the kernel file's own line numbers, as the excerpt lock says."""

from collections import defaultdict

import pytest

from sitechecks import check_excerpts, page_url

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
    assert not problems, "\n".join(problems)
