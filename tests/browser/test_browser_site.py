"""The real site as a reader's browser shows it, judged from one tour of its pages
(tour.py: each page is loaded once, about a minute for the whole site, and every check
below reads what that visit measured). One file, so that one process makes the tour.

- Every page: status 200, no console errors, no request leaving 127.0.0.1, one h1 and
  ordered headings, alt text on every image, internal links and anchors that resolve,
  Material's copy button on every code block, the first code annotation opening on click.
- Excerpt blocks show the kernel file's own line numbers, as the excerpt lock says, and
  their line coverage; a line marked unexecuted stands out in both schemes.
- Every glossary entry and case study shows its generated figures in both of Material's
  schemes and in a narrow window (figurechecks); the snippet pages show the figure drawn
  for the reader's scheme only.
- Light and dark screenshots of every glossary page, and of every figure, are left in
  .screenshots/ for review (glossary-*.jpg, figures-*.png).
- The sidebar is the learning path: each title once, the glossary entries and case studies
  in the order the glossary's index links them, the same on every page; the exercise and
  snippet pages are out of it, each linked from its index and from an entry (navchecks).
- No line of code is cut off at 1280 px or at a phone's 390 px unless its block scrolls
  with a scrollbar that can be seen, and every annotation marker shows (codechecks).
"""

import pytest

import codechecks
import figurechecks
import navchecks
import sitechecks
from sitechecks import check_links, coverage_problems, excerpt_problems, page_url
from tour import NARROW, VIEWPORT, is_glossary

pytestmark = pytest.mark.browser

# The nav lists nine pages (home, glossary index, six terms, two case studies...);
# an empty or half-built site must not pass by having nothing to check.
MIN_PAGES = 9
MIN_SCREENSHOT_BYTES = 10_000  # a blank or failed render of a screen is far smaller


def _joined(problems) -> str:
    return "\n".join(problems)


def test_pages_are_discovered(site_pages):
    assert len(site_pages) >= MIN_PAGES, f"only {len(site_pages)} pages found: {site_pages}"


def test_every_page_is_visited(tour, site_pages):
    assert list(tour.visits) == list(site_pages)
    loaded = [url for url, visit in tour.visits.items() if visit.status is not None]
    assert set(tour.looks) == set(loaded), "the tour measured pages it did not load, or skipped one"


def test_every_page_loads_clean(tour):
    """Status 200, no console errors, no request leaving 127.0.0.1, one h1 and
    ordered headings, alt text on every image."""
    assert len(tour.visits) >= MIN_PAGES
    problems = [p for visit in tour.visits.values() for p in visit.problems]
    assert not problems, _joined(problems)


def test_pages_only_request_the_local_server(tour, site):
    """Stated on its own so a stray font or script is named plainly in the report."""
    external = {url: v.external_requests for url, v in tour.visits.items() if v.external_requests}
    assert not external, external
    # The check is not vacuous: the pages did load their own assets.
    assert all(any(site.is_local(r) for r in v.requests) for v in tour.visits.values())


def test_internal_links_and_anchors_resolve(tour, site, context):
    links = {url: visit.links for url, visit in tour.visits.items()}
    assert sum(len(v) for v in links.values()) > 0, "no links collected"
    problems = check_links(context.request, links, site.netloc)
    assert not problems, _joined(problems)


def test_code_blocks_have_copy_buttons(tour):
    total = sum(v.code_blocks for v in tour.visits.values())
    problems = [p for v in tour.visits.values() for p in v.copy_problems]
    assert total > 0, "no code blocks on any page"
    assert not problems, _joined(problems)


def test_code_annotations_open_on_click(tour):
    """On every page that has annotations, the first one opens when clicked."""
    annotated = {url: v for url, v in tour.visits.items() if v.annotations}
    assert annotated, "no page has a code annotation"
    assert all(v.annotation_problems is not None for v in annotated.values())
    problems = [p for v in annotated.values() for p in v.annotation_problems]
    assert not problems, _joined(problems)


# --------------------------------------------------------------------------- excerpts


def test_excerpt_blocks_show_the_file_lines(tour, site, site_pages, lock_entries):
    if not lock_entries:
        pytest.fail("excerpts.lock.json lists no excerpts", pytrace=False)
    by_page: dict[str, list[dict]] = {}
    for entry in lock_entries:
        by_page.setdefault(page_url(site.base_url, entry["page"]), []).append(entry)
    # The excerpt hook lets a page excluded from the build keep its lock entries;
    # only pages the site actually has can be looked at.
    checked = {url: entries for url, entries in by_page.items() if url in site_pages}
    assert checked, f"no page of the site has a lock entry (lock pages: {sorted(by_page)})"
    problems = []
    for url, entries in sorted(checked.items()):
        blocks = tour.looks[url].excerpt_blocks
        assert blocks is not None, f"{url}: the tour did not read its code blocks"
        problems += excerpt_problems(url, blocks, entries)
    assert not problems, _joined(problems)


def test_excerpt_pages_show_their_coverage_in_both_schemes(tour):
    """Each excerpt page's coverage notes, and a line marked unexecuted (tour.py step 4), in
    the scheme the tour left it in: the tour alternates them, so both are seen."""
    measured = {url: look.coverage for url, look in tour.looks.items() if look.excerpt_blocks is not None}
    assert measured, "no excerpt page was measured"
    problems = [p for url, by_scheme in measured.items() for label, found in by_scheme.items()
                for p in coverage_problems(found, f"{url} ({label})")]
    assert not problems, _joined(problems)
    schemes = {label for by_scheme in measured.values() for label in by_scheme}
    assert schemes == {"light", "dark"}, f"coverage measured in {schemes} only"


# --------------------------------------------------------------------------- figures


def test_every_entry_shows_its_figures_in_both_schemes(tour, site_pages):
    pages = figurechecks.entries(site_pages)
    assert len(pages) >= 17 and any(p.rstrip("/").endswith(figurechecks.CASE_STUDIES) for p in pages), pages
    problems, fills = [], {}
    for url in pages:
        look = tour.looks[url]
        problems += look.scheme_problems
        for label, figs in look.figures.items():
            if not figs:
                problems.append(f"{url}: no generated figure on the page ({label})")
            for f in figs:
                problems += figurechecks.figure_problems(f, f"{url} {label} figure {f['id']}")
                fills.setdefault((url, f["id"]), {})[label] = tuple(f["fills"])
        if set(look.figures) != {"light", "dark"}:
            problems.append(f"{url}: figures measured in {sorted(look.figures)} only")
    for (url, fig), by_scheme in fills.items():
        if by_scheme.get("light") and by_scheme.get("light") == by_scheme.get("dark"):
            problems.append(f"{url} figure {fig}: text has the same colour in both schemes {by_scheme['light']}")
    assert not problems, _joined(problems)
    shots = [p for url in pages for p in tour.looks[url].figure_shots]
    assert len(shots) >= 2 * len(pages) and all(p.stat().st_size > 0 for p in shots)


def test_figures_stay_in_a_narrow_column(tour, site_pages):
    problems = []
    for url in figurechecks.entries(site_pages):
        narrow = tour.looks[url].narrow_figures
        if not narrow:
            problems.append(f"{url}: no figure measured in a narrow window")
            continue
        problems += figurechecks.narrow_problems(narrow, url)
    assert not problems, _joined(problems)


def test_snippet_figures_follow_the_scheme(tour, site_pages):
    snippets = [u for u in site_pages if figurechecks.is_snippet_figure_page(u)]
    assert len(snippets) == len(figurechecks.SNIPPET_FIGURE_PAGES), snippets
    problems, with_figures = [], 0
    for url in snippets:
        look = tour.looks[url]
        problems += look.scheme_problems
        for label, images in look.snippet_images.items():
            with_figures += bool(images)
            problems += figurechecks.snippet_image_problems(images, f"{url} ({label})", shown=label)
    assert not problems, _joined(problems)
    assert with_figures == 2 * len(snippets), f"snippet pages with scheme figures: {with_figures // 2}"


def test_the_checks_catch_a_broken_figure(page, site_pages):
    """The same measurements on a page whose figure is made too wide, its text too small and
    the colour of the background."""
    url = figurechecks.entries(site_pages)[0]
    page.goto(url, wait_until="load")
    page.add_style_tag(content=".md-typeset .gg-figure svg { max-width: none !important; width: 3000px !important; }"
                               ".gg-svg text { fill: var(--md-default-bg-color) !important; }")
    page.evaluate("() => document.querySelectorAll('figure.gg-figure svg title, figure.gg-figure figcaption')"
                  ".forEach(t => t.textContent = '')")
    f = page.evaluate(figurechecks.FIGURES_JS)[0]
    found = " ".join(figurechecks.figure_problems(f, "broken"))
    assert "overflows the content column" in found and "contrast" in found and "accessible name" in found
    assert "caption does not say" in found
    assert figurechecks.narrow_problems([f], url), "a figure wider than its column passes the narrow check"
    page.add_style_tag(content=".md-typeset .gg-figure svg { width: 200px !important; }")
    assert "text rendered at" in " ".join(figurechecks.figure_problems(page.evaluate(figurechecks.FIGURES_JS)[0], "small"))


def test_a_switch_of_scheme_is_measured_after_its_fades(page, site_pages):
    """Every look at a scheme's colours reads them once Material's fades have ended: the
    background of a code block, read just after set_color_scheme (a shown block) or after
    open_folded (a block folded through the switch), is the one it keeps."""
    url = next(u for u in figurechecks.entries(site_pages) if u.rstrip("/").endswith("epilogue-fusion"))
    page.emulate_media(reduced_motion="no-preference")  # (the suite's context asks for none)
    page.goto(url, wait_until="load")
    fades = page.evaluate("() => getComputedStyle(document.querySelector('.md-content pre > code')).transitionDuration")
    assert any(float(d.rstrip("ms")) > 0 for d in fades.split(",")), f"no fade on a code block to wait for: {fades}"
    backgrounds = """() => Array.from(document.querySelectorAll('.md-content pre > code'))
      .filter(c => c.closest('details') === null || c.closest('details').open)
      .map(c => getComputedStyle(c).backgroundColor)"""
    folded = page.evaluate("() => document.querySelectorAll('.md-content details:not([open]) pre > code').length")
    assert folded, f"{url} has no folded code block to test with"
    for scheme in ("slate", "default", "slate"):
        assert sitechecks.set_color_scheme(page, scheme) is None
        shown = page.evaluate(backgrounds)
        sitechecks.open_folded(page)
        now = page.evaluate(backgrounds)
        assert len(set(now)) == 1 and now[0] == shown[0], f"{scheme}: {now} (shown: {shown})"
        page.wait_for_timeout(400)  # (Material's longest fade is 250 ms)
        assert page.evaluate(backgrounds) == now, f"{scheme}: a code background was still changing"
        page.evaluate("() => document.querySelectorAll('.md-content details').forEach(d => { d.open = false; })")


# --------------------------------------------------------------------------- screenshots


def test_glossary_screenshots_light_and_dark(tour, site_pages):
    glossary = [u for u in site_pages if is_glossary(u)]
    assert len(glossary) >= 2, f"glossary pages: {glossary}"
    problems = []
    for url in glossary:
        look = tour.looks[url]
        problems += look.scheme_problems
        shots = look.screenshots
        if set(shots) != {"light", "dark"}:
            problems.append(f"{url}: screenshots taken in {sorted(shots)} only")
            continue
        for path in shots.values():
            size = path.stat().st_size if path.exists() else 0
            if size < MIN_SCREENSHOT_BYTES:
                problems.append(f"{path}: missing or too small ({size} bytes)")
        if all(p.exists() for p in shots.values()) and shots["light"].read_bytes() == shots["dark"].read_bytes():
            problems.append(f"{url}: light and dark screenshots are identical")
    assert not problems, _joined(problems)



# --------------------------------------------------------------------------- the learning path


def test_the_sidebar_is_the_learning_path(tour, site):
    home, index = site.url(""), site.url("glossary/")
    sidebar = tour.looks[home].sidebar
    problems = navchecks.sidebar_problems(sidebar, tour.looks[index].content_links, figurechecks.is_entry)
    for url, look in tour.looks.items():
        if look.sidebar != sidebar:
            problems.append(f"{url}: its sidebar differs from the home page's")
    assert not problems, _joined(problems)
    entries = [i for i in sidebar if i["href"] and figurechecks.is_entry(i["href"])]
    assert len(entries) >= 17, f"the sidebar lists {len(entries)} entries and case studies"


@pytest.mark.parametrize("folder", ["exercises", "snippets"])
def test_exercises_and_snippets_are_reached_from_their_entry_and_their_index(tour, site, site_pages, folder):
    index = site.url(f"{folder}/")
    pages = [u for u in site_pages if u.startswith(index) and u != index]
    links = {url: look.content_links for url, look in tour.looks.items()}
    problems = navchecks.reach_problems(pages, tour.looks[site.url("")].sidebar, links, index, figurechecks.is_entry)
    assert len(pages) >= 14, pages
    assert not problems, _joined(problems)


# --------------------------------------------------------------------------- code a reader can read


def test_no_code_is_cut_off_and_every_annotation_marker_shows(tour):
    """At the desktop width and a phone's, on every page with code (measured after its
    folded blocks are opened)."""
    widths = (VIEWPORT["width"], NARROW["width"])
    measured = {url: look.code_fit for url, look in tour.looks.items() if look.code_fit}
    assert measured, "no page with code was measured"
    problems, totals = [], {w: [0, 0, 0] for w in widths}
    for url, by_width in measured.items():
        if sorted(by_width) != sorted(widths):
            problems.append(f"{url}: code measured at {sorted(by_width)} px only")
        for width, blocks in by_width.items():
            problems += codechecks.code_fit_problems(blocks, f"{url} ({width} px)")
            totals[width] = [a + b for a, b in zip(totals[width], codechecks.count(blocks))]
    quoted, _, markers = totals[VIEWPORT["width"]]
    assert quoted > 1000 and markers > 50, f"only {quoted} quoted lines and {markers} markers measured"
    assert not problems, _joined(problems)
