"""One tour of the built site: every page is loaded once, and everything the browser
suite measures on it is measured during that one visit.

Loading a page is most of what a browser check costs (a third to half a second each
here, about half a minute for the whole site), so the crawl, the excerpt blocks, the
figures in both schemes and a narrow window, the screenshots and the first annotation
all share the visit: the four files that made their own visits took about two minutes
together, the tour about seventy seconds measured alone (its tabs reused, the search
index served empty: below). The tour only records (PageLook); tests/browser/test_browser_site.py
judges the records with sitechecks' and figurechecks' functions, which the negative tests
run on a site broken on purpose.

What one visit does, in this order (each step may change what the next one sees):
1. sitechecks' inspection (status, console, requests, headings, links, copy buttons), the
   sidebar and the content's links (navchecks);
2. in each scheme, the current one first (the toggle is remembered from page to page, so
   starting with it saves a click): the figures' measurements and their screenshots, the
   snippet page's scheme images, and the screenshot of a glossary page;
3. the folded blocks opened, and the code blocks measured (codechecks) in the desktop
   window, then, in a phone's width, again, with the figures;
4. the excerpt blocks read, and the line coverage measured, which marks one line as
   unexecuted (after the screenshots, which must not show it);
5. the first code annotation clicked.

Material's search builds its index in a web worker on every page it loads: for this site's
800 KB index that is 0.7 s of CPU a page, as much as the rest of the load. The tour serves
the pages an index with the site's own search configuration and no documents, so the
worker starts as it does for a reader and has nothing to build. The real index is loaded
and searched by tests/browser/test_browser_search.py.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import codechecks
import figurechecks
import navchecks
import sitechecks
from gemmglossary import settings

SCHEMES = {"default": "light", "slate": "dark"}  # Material's palette scheme -> the shot's label
JPEG_QUALITY = 85  # code and figure text stay legible
#: A glossary page's screenshots show its first screen, which is enough to tell the schemes
#: apart (whole pages, 30 of them, took 11 s of the tour on 7 December). Set
#: GEMMGLOSSARY_FULL_PAGE_SCREENSHOTS=1 for whole pages to look through in .screenshots/.
FULL_PAGE_SHOTS = settings.value("GEMMGLOSSARY_FULL_PAGE_SCREENSHOTS")
NARROW = {"width": 390, "height": 900}  # a phone's width
VIEWPORT = {"width": 1280, "height": 900}  # the desktop window of the whole suite: both sidebars show
SEARCH_INDEX = "search/search_index.json"  # Material's, relative to the site's root


@dataclass
class PageLook:
    """What the tour measured on one page, beyond sitechecks.PageVisit."""

    url: str
    figures: dict[str, list[dict]] = field(default_factory=dict)  # scheme label -> FIGURES_JS
    narrow_figures: list[dict] | None = None
    figure_shots: list[Path] = field(default_factory=list)
    screenshots: dict[str, Path] = field(default_factory=dict)  # scheme label -> its screenshot (FULL_PAGE_SHOTS)
    snippet_images: dict[str, list[dict]] = field(default_factory=dict)  # label -> SNIPPET_IMAGES_JS
    excerpt_blocks: list[dict] | None = None  # sitechecks.code_blocks, folded blocks open
    coverage: dict[str, dict] = field(default_factory=dict)  # label -> COVERAGE_JS
    scheme_problems: list[str] = field(default_factory=list)
    sidebar: list[dict] = field(default_factory=list)  # navchecks.NAV_JS
    content_links: list[str] = field(default_factory=list)  # navchecks.CONTENT_LINKS_JS
    code_fit: dict[int, list[dict]] = field(default_factory=dict)  # window width -> codechecks.CODE_FIT_JS


def page_name(url: str) -> str:
    return urlsplit(url).path.strip("/").replace("/", "-") or "index"


def is_glossary(url: str) -> bool:
    return urlsplit(url).path.startswith("/glossary/")


@dataclass
class Tour:
    visits: dict[str, sitechecks.PageVisit]
    looks: dict[str, PageLook]


def tour_site(context, site, urls, *, excerpt_pages: set[str], unexecuted_class: str,
              screenshots_dir: Path, viewport: dict) -> Tour:
    """Visit every url once (sitechecks.visit_pages) and measure it (PageLook).
    `excerpt_pages`: the urls whose excerpt blocks are read; `viewport`: the context's."""
    for old in [*screenshots_dir.glob("figures-*.png"), *screenshots_dir.glob("glossary-*.*")]:
        old.unlink()
    looks: dict[str, PageLook] = {}

    def look(page, visit):
        looks[visit.url] = _look(page, visit, excerpt=visit.url in excerpt_pages,
                                 unexecuted_class=unexecuted_class, screenshots_dir=screenshots_dir,
                                 viewport=viewport)

    index = site.root / SEARCH_INDEX
    if index.is_file():  # (without one, the crawl reports the page that asks for it)
        empty = json.dumps({"config": json.loads(index.read_text(encoding="utf-8"))["config"], "docs": []})
        serving = site.serving(SEARCH_INDEX, empty.encode(), "application/json")
    else:
        serving = contextlib.nullcontext()
    with serving:
        visits = sitechecks.visit_pages(context, urls, site.netloc, look=look)
    return Tour(visits, looks)


def _look(page, visit, *, excerpt: bool, unexecuted_class: str, screenshots_dir: Path, viewport: dict) -> PageLook:
    url = visit.url
    out = PageLook(url, sidebar=page.evaluate(navchecks.NAV_JS), content_links=page.evaluate(navchecks.CONTENT_LINKS_JS))
    entry, glossary, snippet = figurechecks.is_entry(url), is_glossary(url), figurechecks.is_snippet_figure_page(url)
    if entry or glossary or snippet:
        current = sitechecks.color_scheme(page)
        for scheme in sorted(SCHEMES, key=lambda s: s != current):
            label = SCHEMES[scheme]
            page.emulate_media(color_scheme=label)
            problem = sitechecks.set_color_scheme(page, scheme)
            if problem:
                out.scheme_problems.append(f"{url}: {problem}")
                continue
            if entry:
                out.figures[label] = page.evaluate(figurechecks.FIGURES_JS)
                for k, f in enumerate(out.figures[label]):
                    if f["hasSvg"] and f["width"] > 0 and f["height"] > 0:
                        path = screenshots_dir / f"figures-{page_name(url)}-{k + 1}-{label}.png"
                        page.locator(f"figure#{f['id']}").screenshot(path=str(path))
                        out.figure_shots.append(path)
            if snippet:
                out.snippet_images[label] = page.evaluate(figurechecks.SNIPPET_IMAGES_JS)
            if glossary:
                path = screenshots_dir / f"{page_name(url)}-{label}.jpg"
                page.screenshot(path=str(path), type="jpeg", quality=JPEG_QUALITY, full_page=FULL_PAGE_SHOTS)
                out.screenshots[label] = path
    code = visit.code_blocks > 0
    if code:
        sitechecks.open_folded(page)
        out.code_fit[viewport["width"]] = page.evaluate(codechecks.CODE_FIT_JS)
    if entry or code:
        page.set_viewport_size(NARROW)
        if entry:
            out.narrow_figures = page.evaluate(figurechecks.FIGURES_JS)
        if code:
            out.code_fit[NARROW["width"]] = page.evaluate(codechecks.CODE_FIT_JS)
        page.set_viewport_size(viewport)
    if excerpt:
        sitechecks.open_folded(page)
        out.excerpt_blocks = sitechecks.code_blocks(page)
        scheme = sitechecks.color_scheme(page)
        out.coverage[SCHEMES.get(scheme, str(scheme))] = page.evaluate(sitechecks.COVERAGE_JS, unexecuted_class)
    if visit.annotations:
        visit.annotation_problems = sitechecks.check_first_annotation(page, url)
    return out
