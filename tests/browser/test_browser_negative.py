"""The checks can fail: run them on a small site built broken on purpose.

The site is built without --strict (a strict build would already refuse the broken
link), served like the real one, and every check used on the real site must name
the fault planted for it — while a clean page of the same site reports nothing.
"""

import textwrap

import pytest

import codechecks
import navchecks
from sitechecks import (
    SiteServer,
    build_site,
    check_excerpts,
    check_first_annotation,
    check_links,
    discover_pages,
    visit_page,
    visit_pages,
)

pytestmark = pytest.mark.browser

FONT_URL = "https://fonts.googleapis.com/css2?family=Roboto&display=swap"

FILES = {
    "mkdocs.yml": """\
        site_name: Broken on purpose
        theme:
          name: material
          font: false
          features: [content.code.annotate, content.code.copy]
        plugins: [search]
        markdown_extensions:
          - attr_list
          - md_in_html
          - toc: {permalink: true}
          - pymdownx.highlight: {line_spans: __span, anchor_linenums: true}
          - pymdownx.superfences
        """,
    "docs/index.md": """\
        # Broken on purpose

        A [good link](good.md), a [good anchor](good.md#section),
        a [broken link](missing.md) and a [broken anchor](good.md#no-such-heading).
        """,
    "docs/good.md": """\
        # Good

        ## Section

        ``` cpp linenums="11" title="kernels/k.metal · lines 10–12"
        int a = 1; // (1)!
        int b = 2;
        int c = 3;
        ```

        1.  Annotated.
        """,
    "docs/font.md": f"""\
        # Font

        <link rel="stylesheet" href="{FONT_URL}">

        A page that asks for a web font.
        """,
    "docs/code.md": f"""\
        # Code

        ``` cpp linenums="7" title="kernels/long.metal · lines 7–8"
        auto tA = tensor<device const half, extents_t, tensor_inline>(A, extents_t(K, M)); {"/* padding */ " * 8}// (1)!
        int b = 2;
        ```

        1.  Hidden at the end of a long line.

        ```text
        {"a text diagram wider than any window " * 6}
        ```
        """,
    "docs/outline.md": """\
        # Outline

        ### Skips a level

        <img src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7">

        # A second h1
        """,
}


@pytest.fixture(scope="module")
def bad_site(tmp_path_factory, chromium_executable):
    root = tmp_path_factory.mktemp("bad-site")
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    build_site(root / "mkdocs.yml", root / "site", strict=False)
    with SiteServer(root / "site") as server:
        yield server


def _joined(problems):
    return "\n".join(problems)


def test_discovery_finds_the_bad_pages(bad_site, context):
    pages = discover_pages(context.request, bad_site.base_url)
    assert sorted(pages) == sorted(
        bad_site.url(p) for p in ("", "good/", "font/", "code/", "outline/")
    )


def test_clean_page_reports_nothing(page, bad_site):
    visit = visit_page(page, bad_site.url("good/"), bad_site.netloc)
    assert visit.problems == []


def test_external_font_request_is_reported(page, bad_site):
    visit = visit_page(page, bad_site.url("font/"), bad_site.netloc)
    assert FONT_URL in visit.external_requests
    assert any("request to another host" in p and "fonts.googleapis.com" in p for p in visit.problems), _joined(
        visit.problems
    )


def test_pages_visited_side_by_side_keep_their_own_problems(bad_site, context):
    # the crawl of the real site opens several pages at once, and loads one page after
    # another in each tab: each visit must get the requests and problems of its own page,
    # whichever page made them (outline/ loads in the tab that font/ requested a font in)
    urls = [bad_site.url(p) for p in ("font/", "good/", "outline/")]
    visits = visit_pages(context, urls, bad_site.netloc, at_once=2)
    assert list(visits) == urls
    assert visits[urls[1]].problems == []
    assert FONT_URL in visits[urls[0]].external_requests and not visits[urls[2]].external_requests
    alone = context.new_page()
    try:
        assert visits[urls[2]].problems == visit_page(alone, urls[2], bad_site.netloc).problems != []
    finally:
        alone.close()


def test_broken_link_and_anchor_are_reported(page, bad_site, context):
    visit = visit_page(page, bad_site.url(""), bad_site.netloc)
    problems = check_links(context.request, {visit.url: visit.links}, bad_site.netloc)
    text = _joined(problems)
    assert any("missing.md" in p and "HTTP 404" in p for p in problems), text
    assert any("no-such-heading" in p for p in problems), text
    # ...and only those: the good link and good anchor pass.
    assert len(problems) == 2, text


def test_heading_and_alt_problems_are_reported(page, bad_site):
    visit = visit_page(page, bad_site.url("outline/"), bad_site.netloc)
    text = _joined(visit.problems)
    assert any("exactly one h1, found 2" in p for p in visit.problems), text
    assert any("heading level skipped: h1 -> h3" in p for p in visit.problems), text
    assert any("image without alt text" in p for p in visit.problems), text


def test_wrong_excerpt_line_numbers_are_reported(page, bad_site):
    url = bad_site.url("good/")
    right = [{"page": "good.md", "file": "kernels/k.metal", "start": 10, "end": 12}]
    problems = check_excerpts(page, url, right)
    text = _joined(problems)
    # The block is titled 10–12 but numbered from 11.
    assert any("first line number shown is 11, expected 10" in p for p in problems), text
    assert any("last line number shown is 13, expected 12" in p for p in problems), text
    # A lock entry with no block on the page is reported, and so is the block it misses.
    absent = [{"page": "good.md", "file": "kernels/k.metal", "start": 40, "end": 44}]
    problems = check_excerpts(page, url, absent)
    assert any("no code block titled with kernels/k.metal lines 40–44" in p for p in problems), _joined(problems)
    assert any("has no entry in the excerpt lock" in p for p in problems), _joined(problems)


def test_annotation_check_reports_a_page_without_one(page, bad_site):
    page.goto(bad_site.url("font/"), wait_until="load")
    assert check_first_annotation(page, bad_site.url("font/")) == [
        f"{bad_site.url('font/')}: no code annotation marker on the page"
    ]
    page.goto(bad_site.url("good/"), wait_until="load")
    assert check_first_annotation(page, bad_site.url("good/")) == []


def test_a_response_the_browser_drops_prints_nothing(tmp_path, capfd):
    """A reader's browser drops responses half sent (it navigated away): the server says
    nothing, where socketserver would print a traceback under a line of dashes into
    pytest's progress. (No browser needed: a socket that resets mid-download.)"""
    import socket
    import struct

    (tmp_path / "big.bin").write_bytes(b"\0" * (8 << 20))  # more than a socket buffers
    with SiteServer(tmp_path) as server:
        host, port = server.netloc.split(":")
        for _ in range(3):
            s = socket.create_connection((host, int(port)))
            s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(1024)  # the server is writing the body now
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # a reset, as a tab that navigates away sends
        # and the server still answers
        with socket.create_connection((host, int(port))) as s:
            s.sendall(b"HEAD /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(1024).startswith(b"HTTP/1.0 200")
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "-" * 40 not in out, (out, err)


def test_cut_off_code_and_hidden_markers_are_reported(page, bad_site):
    """Material's defaults (the broken site has neither the site's line-number style nor
    docs/stylesheets/code.css): a long line runs past the block's edge with a scrollbar too
    faint to see, and the marker at its end is out of sight; the short page reports nothing."""
    page.goto(bad_site.url("code/"), wait_until="load")
    page.wait_for_selector(".md-annotation__index")
    blocks = page.evaluate(codechecks.CODE_FIT_JS)
    found = codechecks.code_fit_problems(blocks, "code")
    text = _joined(found)
    assert "'kernels/long.metal · lines 7–8': 1 of 2 lines cut off" in text and "has contrast" in text, text
    assert "'a text diagram wider than any window" in text, text
    assert "annotation markers outside the visible block: ['1']" in text, text
    assert codechecks.count(blocks) == (2, 1, 1), "quoted lines, of them cut off, markers"
    # a scrollbar that can be seen lets a line scroll; a hidden marker stays a problem
    page.add_style_tag(content=".md-typeset pre > code { scrollbar-color: #222 #ddd !important; }")
    found = codechecks.code_fit_problems(page.evaluate(codechecks.CODE_FIT_JS), "code")
    assert len(found) == 1 and "annotation markers outside" in found[0], found
    page.add_style_tag(content=".md-typeset pre > code { overflow-x: hidden !important; }")
    assert "overflow-x is hidden" in _joined(codechecks.code_fit_problems(page.evaluate(codechecks.CODE_FIT_JS), "c"))
    page.goto(bad_site.url("good/"), wait_until="load")
    assert codechecks.code_fit_problems(page.evaluate(codechecks.CODE_FIT_JS), "good") == []


def _nav(*titles_and_paths):
    return [{"title": t, "href": f"http://h/{p}" if p else None, "depth": 0} for t, p in titles_and_paths]


def test_the_sidebar_checks_name_a_repeated_title_and_the_wrong_order():
    entry = lambda url: "/glossary/" in url  # noqa: E731
    index = ["http://h/glossary/a/", "http://h/glossary/b/#x", "http://h/glossary/a/#again", "http://h/other/"]
    good = _nav(("Home", ""), ("Glossary", None), ("A", "glossary/a/"), ("B", "glossary/b/"))
    assert navchecks.sidebar_problems(good, index, entry) == []
    twice = good + _nav(("A", "glossary/a/"))
    found = _joined(navchecks.sidebar_problems(twice, index, entry))
    assert "'A' is listed 2 times" in found and "http://h/glossary/a/ is listed 2 times" in found
    swapped = _nav(("B", "glossary/b/"), ("A", "glossary/a/"))
    assert "not in the order of the glossary's index" in _joined(navchecks.sidebar_problems(swapped, index, entry))
    extra = good + _nav(("C", "glossary/c/"))
    assert "links no ['http://h/glossary/c/']" in _joined(navchecks.sidebar_problems(extra, index, entry))
    short = _nav(("A", "glossary/a/"))
    assert "which the sidebar does not list" in _joined(navchecks.sidebar_problems(short, index, entry))


def test_the_reach_check_names_a_page_listed_or_linked_from_nowhere():
    entry = lambda url: "/glossary/" in url  # noqa: E731
    pages = ["http://h/ex/one/", "http://h/ex/two/"]
    links = {"http://h/ex/": ["http://h/ex/one/", "http://h/ex/two/#top"],
             "http://h/glossary/a/": ["http://h/ex/one/"], "http://h/other/": ["http://h/ex/two/"]}
    sidebar = _nav(("Home", ""), ("Two", "ex/two/"))
    found = navchecks.reach_problems(pages, sidebar, links, "http://h/ex/", entry)
    assert found == ["http://h/ex/two/: listed in the sidebar",
                     "http://h/ex/two/: no glossary entry or case study links it"], found
    assert navchecks.reach_problems(pages, sidebar, {}, "http://h/ex/", entry)[0] == \
        "http://h/ex/one/: not linked from its index http://h/ex/"
