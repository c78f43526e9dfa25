"""Fixtures for the browser suite: the built site, served locally, seen by chromium.

The site is built once per session with ``mkdocs build --strict`` into a temporary
folder and served by a threaded http.server on 127.0.0.1 and a free port. The browser
is Debian's Chromium headless shell (``/usr/bin/chromium-headless-shell``) driven by Playwright for Python; one
browser and one context are shared by every test.

Set BROWSER_SITE_DIR to test an already built site instead of building one.

Without chromium the tests skip, except under CI (``CI=true``), where they fail:
a CI run must never pass by skipping the browser.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import sitechecks  # noqa: E402
import tour as tour_module  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "excerpts.lock.json"
SCREENSHOTS = ROOT / ".screenshots"
VIEWPORT = tour_module.VIEWPORT


def _unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the browser suite may not be skipped)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    if not os.path.exists(sitechecks.CHROMIUM):
        _unavailable(sitechecks.CHROMIUM_MISSING)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright Python package is not installed (pip install playwright)")
    return sitechecks.CHROMIUM


@pytest.fixture(scope="session")
def browser(chromium_executable):
    from playwright.sync_api import sync_playwright

    with sitechecks.refusing_port() as port, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium_executable, args=[*sitechecks.CHROMIUM_ARGS, *sitechecks.proxy_args(port)]
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def context(browser):
    """One browser context for the whole run, with its HTTP cache.

    Requests to any host but 127.0.0.1 fail at once: the browser sends them to a proxy port
    that refuses every connection (sitechecks.proxy_args). They are still seen (and
    reported) by the checks, which record every request as it is attempted. (Not a route:
    Playwright turns the HTTP cache off while any route is set, and then every page loads
    and compiles Material's scripts again.)

    The context prefers reduced motion, as a reader may: Material then switches palettes
    and opens blocks without CSS transitions (``@media (prefers-reduced-motion)``) and the
    page scrolls without animating, so none of those animations' frames is drawn. What the
    checks measure is the end state, the same either way; those frames were 7 to 12% of
    the browser's CPU on the glossary pages (8 December, 15 pages, three alternating pairs:
    42.5, 38.0, 33.8 CPU-s with motion, 39.4, 33.4, 30.3 without). The fades themselves are
    tested by test_browser_site.py's
    test_a_switch_of_scheme_is_measured_after_its_fades, on a page that asks for motion.
    """
    ctx = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    ctx.set_default_timeout(15_000)
    ctx.set_default_navigation_timeout(30_000)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(context):
    pg = context.new_page()
    try:
        yield pg
    finally:
        pg.close()


@pytest.fixture(scope="session")
def built_site(request, chromium_executable) -> Path:
    """The real site, built strictly: the session's build (tests/conftest.py's
    ``mkdocs_site``, shared with the other suites). Depends on chromium so a skip costs
    no build.

    BROWSER_SITE_DIR may name a site already built from this tree with
    ``mkdocs build --strict`` (say, by an earlier CI step) to save the build.
    """
    prebuilt = os.environ.get("BROWSER_SITE_DIR")
    if prebuilt:
        site_dir = Path(prebuilt)
        if not (site_dir / "index.html").is_file():
            pytest.fail(f"BROWSER_SITE_DIR={prebuilt} holds no built site", pytrace=False)
        return site_dir
    build = request.getfixturevalue("mkdocs_site")
    if build.run.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{build.log}", pytrace=False)
    return build.site


@pytest.fixture(scope="session")
def site(built_site):
    with sitechecks.SiteServer(built_site) as server:
        yield server


@pytest.fixture(scope="session")
def site_pages(site, context) -> list[str]:
    return sitechecks.discover_pages(context.request, site.base_url)


@pytest.fixture(scope="session")
def tour(site, site_pages, context, lock_entries, screenshots_dir) -> "tour_module.Tour":
    """Every page visited once, and measured for all the checks of test_browser_site.py."""
    from gemmglossary.coverage.site import UNEXECUTED_CLASS

    excerpt_pages = {sitechecks.page_url(site.base_url, e["page"]) for e in lock_entries}
    return tour_module.tour_site(context, site, site_pages, excerpt_pages=excerpt_pages,
                                 unexecuted_class=UNEXECUTED_CLASS, screenshots_dir=screenshots_dir,
                                 viewport=VIEWPORT)


@pytest.fixture(scope="session")
def lock_entries() -> list[dict]:
    if not LOCK.exists():
        return []
    return json.loads(LOCK.read_text(encoding="utf-8")).get("excerpts", [])


@pytest.fixture(scope="session")
def screenshots_dir() -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS
