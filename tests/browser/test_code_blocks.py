"""Material's code block features work: annotations open on click, copy buttons exist."""

import pytest

from sitechecks import check_copy_buttons, check_first_annotation, count_annotations

pytestmark = pytest.mark.browser


def test_code_blocks_have_copy_buttons(page, site_pages):
    total, problems = 0, []
    for url in site_pages:
        page.goto(url, wait_until="load")
        count, missing = check_copy_buttons(page, url)
        total += count
        problems += missing
    assert total > 0, "no code blocks on any page"
    assert not problems, "\n".join(problems)


def test_code_annotations_open_on_click(page, site_pages):
    """On every page that has annotations, the first one opens when clicked."""
    annotated, problems = [], []
    for url in site_pages:
        page.goto(url, wait_until="load")
        if count_annotations(page):
            annotated.append(url)
            problems += check_first_annotation(page, url)
    assert annotated, "no page has a code annotation"
    assert not problems, "\n".join(problems)
