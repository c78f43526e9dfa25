"""Material's search works offline (its index and worker are served by the site)."""

from urllib.parse import urlsplit

import pytest

from sitechecks import is_external_request, search_results

pytestmark = pytest.mark.browser

CASES = [
    ("simdgroup_matrix", "glossary/simdgroup-matrix/"),
    ("threadgroup_barrier", "glossary/barriers/"),
    ("register blocking", "glossary/register-blocking/"),
]


@pytest.fixture(scope="module")
def search_page(context):
    """One tab for the module's searches, which share its load of the home page
    (sitechecks.search_results), with every request it made since it opened."""
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    try:
        yield page, requests
    finally:
        page.close()


@pytest.mark.parametrize("query, expected", CASES, ids=[q for q, _ in CASES])
def test_search_returns_the_expected_page_first(search_page, site, query, expected):
    page, requests = search_page
    results = search_results(page, site.base_url, query)
    external = [u for u in requests if is_external_request(u, site.netloc)]
    assert not external, f"searching {query!r} requested other hosts: {external}"
    assert results, f"no search results for {query!r}"
    first = urlsplit(results[0]).path
    want = urlsplit(site.url(expected)).path
    assert first == want, f"first result for {query!r} is {results[0]}; results: {results[:5]}"
