"""Material's code block features work: annotations open on click, copy buttons exist."""

import pytest

from sitechecks import check_first_annotation

pytestmark = pytest.mark.browser


def test_code_blocks_have_copy_buttons(visits):
    total = sum(v.code_blocks for v in visits.values())
    problems = [p for v in visits.values() for p in v.copy_problems]
    assert total > 0, "no code blocks on any page"
    assert not problems, "\n".join(problems)


def test_code_annotations_open_on_click(page, visits):
    """On every page that has annotations, the first one opens when clicked."""
    annotated = [url for url, v in visits.items() if v.annotations]
    assert annotated, "no page has a code annotation"
    problems = []
    for url in annotated:
        page.goto(url, wait_until="load")
        problems += check_first_annotation(page, url)
    assert not problems, "\n".join(problems)
