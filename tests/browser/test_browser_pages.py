"""Every page of the built site, as a reader's browser loads it, and Material's code block
features on them (copy buttons exist, annotations open on click). One file, so that the
crawl of every page (the ``visits`` fixture, about a minute) is made by one process."""

import pytest

pytestmark = pytest.mark.browser

# The nav lists nine pages (home, glossary index, six terms, two case studies...);
# an empty or half-built site must not pass by having nothing to check.
MIN_PAGES = 9


def test_pages_are_discovered(site_pages):
    assert len(site_pages) >= MIN_PAGES, f"only {len(site_pages)} pages found: {site_pages}"


def test_every_page_loads_clean(visits):
    """Status 200, no console errors, no request leaving 127.0.0.1, one h1 and
    ordered headings, alt text on every image."""
    assert len(visits) >= MIN_PAGES
    problems = [p for visit in visits.values() for p in visit.problems]
    assert not problems, "\n".join(problems)


def test_pages_only_request_the_local_server(visits, site):
    """Stated on its own so a stray font or script is named plainly in the report."""
    external = {
        url: visit.external_requests for url, visit in visits.items() if visit.external_requests
    }
    assert not external, external
    # The check is not vacuous: the pages did load their own assets.
    assert all(any(site.is_local(r) for r in v.requests) for v in visits.values())


def test_internal_links_and_anchors_resolve(visits, site, context):
    from sitechecks import check_links

    links = {url: visit.links for url, visit in visits.items()}
    assert sum(len(v) for v in links.values()) > 0, "no links collected"
    problems = check_links(context.request, links, site.netloc)
    assert not problems, "\n".join(problems)


def test_code_blocks_have_copy_buttons(visits):
    total = sum(v.code_blocks for v in visits.values())
    problems = [p for v in visits.values() for p in v.copy_problems]
    assert total > 0, "no code blocks on any page"
    assert not problems, "\n".join(problems)


def test_code_annotations_open_on_click(visits):
    """On every page that has annotations, the first one opens when clicked (during the
    crawl, while the page is open: sitechecks.check_first_annotation)."""
    annotated = {url: v for url, v in visits.items() if v.annotations}
    assert annotated, "no page has a code annotation"
    assert all(v.annotation_problems is not None for v in annotated.values())
    problems = [p for v in annotated.values() for p in v.annotation_problems]
    assert not problems, "\n".join(problems)
