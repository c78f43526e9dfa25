"""Checks run against a built site in a real browser.

Every check returns a list of problems (human-readable strings naming the page and
what is wrong) instead of asserting, so that the same functions are exercised both on
the real site (expecting no problems) and on a deliberately broken site (expecting the
problems to be reported). The tests in this folder only assert on these lists.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import socket
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mkdocs_cli  # noqa: E402 - MkDocs' command in this process (tests/mkdocs_cli.py)

#: Debian's build of Chromium's headless shell: the same Blink and V8 as its `chromium`,
#: without the desktop browser around them (what Playwright itself runs for headless
#: Chromium). The browser suite took 124 CPU-seconds of `chromium --headless` and 93 of the
#: shell on 7 December, its page loads 43 and 28.
CHROMIUM = "/usr/bin/chromium-headless-shell"
CHROMIUM_MISSING = "Debian's chromium-headless-shell not installed (apt-get install chromium-headless-shell)"

# The network here is closed: without the background-networking switches chromium
# keeps trying to reach Google services and fills the logs with noise.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Schemes that never leave the page.
_INERT_SCHEMES = {"data", "blob", "about"}

# Material for MkDocs marks the copy button in one of two ways depending on its version.
COPY_BUTTON = "button.md-clipboard, button.md-code__button[data-md-type='copy']"


# --------------------------------------------------------------------------- build/serve


def build_site(config_file: Path, site_dir: Path, *, strict: bool = True) -> str:
    """Run ``mkdocs build`` for *config_file* into *site_dir*; return its log.

    Raises RuntimeError with the full log when the build fails. MkDocs' command runs in
    this process (tests/mkdocs_cli.py: the subprocess's start-up is most of a small build).
    """
    args = ["-f", str(config_file), "-d", str(site_dir)]
    if strict:
        args.append("--strict")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = mkdocs_cli.build(args, cwd=config_file.parent, env=env)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"mkdocs build failed ({' '.join(proc.args)}):\n{log}")
    return log


#: Where Material keeps its scripts, style sheets and images: their names carry a hash of
#: their content, so the browser may keep them (as a reader's does, from page to page)
ASSETS = "/assets/"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass

    def end_headers(self):
        # the rest is asked again each time (a 304 when unchanged): a page or the search
        # index served in place of the file (SiteServer.serving) is never kept
        cache = "max-age=3600" if urlsplit(self.path).path.startswith(ASSETS) else "no-cache"
        self.send_header("Cache-Control", cache)
        super().end_headers()

    def do_GET(self):
        served = self.server.overrides.get(unquote(urlsplit(self.path).path))
        if served is None:
            return super().do_GET()
        body, content_type = served
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(http.server.ThreadingHTTPServer):
    overrides: dict[str, tuple[bytes, str]]  # url path -> (body, content type), in place of the file

    def handle_error(self, request, client_address):
        # A browser that drops a response half sent (it navigated away, or cancelled a
        # download it no longer needs) is not the server's error; socketserver would print
        # a traceback under a line of dashes into pytest's progress output. Others are.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class SiteServer:
    """A built site served by a threaded http.server on 127.0.0.1 and a free port."""

    def __init__(self, site_dir: Path):
        self.root = Path(site_dir)
        handler = functools.partial(_QuietHandler, directory=str(site_dir))
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.overrides = {}
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        host, port = self._httpd.server_address[:2]
        self.netloc = f"{host}:{port}"
        self.base_url = f"http://{self.netloc}/"

    def __enter__(self) -> "SiteServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def url(self, path: str) -> str:
        return urljoin(self.base_url, path)

    @contextlib.contextmanager
    def serving(self, path: str, body: bytes, content_type: str):
        """Within the block, GET of `path` (relative to the site) answers `body` instead of the file."""
        key = urlsplit(self.url(path)).path
        self._httpd.overrides[key] = (body, content_type)
        try:
            yield
        finally:
            del self._httpd.overrides[key]

    def is_local(self, url: str) -> bool:
        return urlsplit(url).netloc == self.netloc


def page_url(base_url: str, docs_path: str) -> str:
    """URL of the page built from *docs_path* (relative to docs/), with directory URLs."""
    stem = docs_path[: -len(".md")] if docs_path.endswith(".md") else docs_path
    if stem == "index":
        rel = ""
    elif stem.endswith("/index"):
        rel = stem[: -len("index")]
    else:
        rel = stem + "/"
    return urljoin(base_url, rel)


@contextlib.contextmanager
def refusing_port():
    """A port of 127.0.0.1 that refuses every connection for as long as it is held: bound,
    so nothing else can take it, and never listening, so a connection is reset at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def proxy_args(port: int) -> list[str]:
    """Chromium's switches that send every request for another host through a proxy at
    `port` (refusing_port), so that it fails at once; 127.0.0.1 is reached directly."""
    return [f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=127.0.0.1"]


def is_external_request(url: str, netloc: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in _INERT_SCHEMES:
        return False
    return parts.netloc != netloc


# --------------------------------------------------------------------------- discovery


def discover_pages(request, base_url: str) -> list[str]:
    """Every page of the site, from its search index and its sitemap (never hard-coded).

    *request* is a Playwright APIRequestContext. The search index lists each page once
    without a fragment (its sections carry ``#anchor``); the sitemap only has entries
    when ``site_url`` is set, so both are read and merged.
    """
    pages: list[str] = []

    def add(url: str) -> None:
        url = urlunsplit(urlsplit(url)._replace(fragment=""))
        if url not in pages:
            pages.append(url)

    resp = request.get(urljoin(base_url, "search/search_index.json"))
    if resp.ok:
        for doc in json.loads(resp.text()).get("docs", []):
            location = doc.get("location", "")
            if "#" not in location:
                add(urljoin(base_url, location))
    resp = request.get(urljoin(base_url, "sitemap.xml"))
    if resp.ok and resp.text().strip():
        ns = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}
        for loc in ET.fromstring(resp.text()).findall("sm:url/sm:loc", ns):
            if loc.text:
                # The sitemap holds canonical URLs (site_url); map them onto this server.
                add(urljoin(base_url, urlsplit(loc.text.strip()).path.lstrip("/")))
    return pages


# --------------------------------------------------------------------------- page visit


@dataclass
class PageVisit:
    url: str
    status: int | None = None
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)
    images_without_alt: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    code_blocks: int = 0
    copy_problems: list[str] = field(default_factory=list)
    annotations: int = 0
    annotation_problems: list[str] | None = None  # None: the first annotation was not clicked
    problems: list[str] = field(default_factory=list)


_HEADINGS_JS = """() => Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6'))
    .map(h => [Number(h.tagName.substring(1)), h.textContent.replace('¶', '').trim().slice(0, 80)])"""

_IMAGES_JS = """() => Array.from(document.querySelectorAll('img'))
    .filter(img => !(img.getAttribute('alt') || '').trim())
    .map(img => img.getAttribute('src') || '(no src)')"""

# Links a reader can follow. Material's annotation markers point at tooltips that only
# exist while open (the id is created on click), so they are left to the annotation test.
_LINKS_JS = """() => Array.from(document.querySelectorAll('a[href]'))
    .filter(a => !a.classList.contains('md-annotation__index'))
    .map(a => a.href)"""


def heading_problems(headings: list[tuple[int, str]]) -> list[str]:
    """One h1, first heading is the h1, and no level is skipped going down."""
    problems = []
    h1s = [text for level, text in headings if level == 1]
    if len(h1s) != 1:
        problems.append(f"expected exactly one h1, found {len(h1s)}: {h1s}")
    if headings and headings[0][0] != 1:
        problems.append(f"first heading is h{headings[0][0]} {headings[0][1]!r}, not h1")
    for (prev, _), (level, text) in zip(headings, headings[1:]):
        if level > prev + 1:
            problems.append(f"heading level skipped: h{prev} -> h{level} {text!r}")
    return problems


def visit_page(page, url: str, netloc: str, *, idle_timeout_ms: int = 5000) -> PageVisit:
    """Load *url* in *page* and check what a reader's browser sees.

    Problems: HTTP status other than 200, console errors and uncaught exceptions,
    any request to a host other than *netloc* (recorded when attempted, whether or
    not it could complete), headings out of order, images without alt text.
    """
    return _inspect(*_open(page, url), netloc, idle_timeout_ms)


def visit_pages(context, urls, netloc: str, *, at_once: int = 4, idle_timeout_ms: int = 5000,
                look=None) -> dict:
    """visit_page for every url, `at_once` pages open side by side: each is loaded while the
    ones before it wait for their network to fall idle (half a second at least, on every
    page), so those waits overlap. `look(page, visit)`, if given, is called for each page
    once it is inspected and while it is still open (the site tour's further checks).
    {url: PageVisit}, in the order of `urls`.

    The `at_once` tabs are opened once and each loads one url after another: a new tab
    costs chromium a quarter of a second of CPU more than a navigation does. Between two
    visits a tab goes to about:blank, so the page before is unloaded (nothing it does can
    reach the next visit's records), and what a look changed on the tab (the viewport, an
    emulated colour scheme) is set back."""
    out = {}
    tabs: list = []
    try:
        for first in range(0, len(urls := list(urls)), at_once):
            batch = urls[first:first + at_once]
            while len(tabs) < len(batch):
                tabs.append(context.new_page())
            opened = [_open(_blank(tab) if first else tab, url) for tab, url in zip(tabs, batch)]
            for page, visit, detach in opened:
                out[visit.url] = _inspect(page, visit, detach, netloc, idle_timeout_ms)
                if look is not None and visit.status is not None:  # (None: the navigation failed)
                    viewport = page.viewport_size
                    page.bring_to_front()  # clicks and screenshots go to the page a reader is looking at
                    look(page, visit)
                    page.emulate_media(color_scheme="null")  # (null: no emulation, as on a new tab)
                    if page.viewport_size != viewport:
                        page.set_viewport_size(viewport)
    finally:
        for tab in tabs:
            tab.close()
    return out


def _blank(page):
    """`page`, its document unloaded: on about:blank."""
    page.goto("about:blank")
    return page


def _open(page, url: str):
    """Start watching *page* and load *url*: (page, the visit so far, the listeners' remover)."""
    visit = PageVisit(url)

    def on_console(msg):
        if msg.type == "error":
            where = msg.location.get("url") if msg.location else ""
            visit.console_errors.append(f"{msg.text}" + (f" [{where}]" if where else ""))

    def on_pageerror(error):
        visit.console_errors.append(f"uncaught exception: {error}")

    def on_request(req):
        visit.requests.append(req.url)

    listeners = (("console", on_console), ("pageerror", on_pageerror), ("request", on_request))
    for event, fn in listeners:
        page.on(event, fn)

    def detach():
        for event, fn in listeners:
            page.remove_listener(event, fn)
    try:
        response = page.goto(url, wait_until="load")
        visit.status = response.status if response else None
    except Exception as exc:  # navigation itself failed
        visit.problems.append(f"{url}: navigation failed: {exc}")
    return page, visit, detach


def _inspect(page, visit: PageVisit, detach, netloc: str, idle_timeout_ms: int) -> PageVisit:
    url = visit.url
    try:
        if visit.problems:  # the navigation failed: nothing to look at
            return visit
        try:
            page.wait_for_load_state("networkidle", timeout=idle_timeout_ms)
        except Exception:
            pass  # a hanging request is still reported below as attempted
        visit.headings = [tuple(h) for h in page.evaluate(_HEADINGS_JS)]
        visit.images_without_alt = page.evaluate(_IMAGES_JS)
        visit.links = page.evaluate(_LINKS_JS)
        visit.code_blocks, visit.copy_problems = check_copy_buttons(page, url)
        visit.annotations = count_annotations(page)
    finally:
        detach()

    visit.external_requests = sorted(
        {u for u in visit.requests if is_external_request(u, netloc)}
    )
    if visit.status != 200:
        visit.problems.append(f"{url}: HTTP status {visit.status}")
    for text in visit.console_errors:
        visit.problems.append(f"{url}: console error: {text}")
    for ext in visit.external_requests:
        visit.problems.append(f"{url}: request to another host: {ext}")
    for problem in heading_problems(visit.headings):
        visit.problems.append(f"{url}: {problem}")
    for src in visit.images_without_alt:
        visit.problems.append(f"{url}: image without alt text: {src}")
    return visit


# --------------------------------------------------------------------------- links


class _IdCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (name == "name" and tag == "a"):
                self.ids.add(value)


def html_ids(html: str) -> set[str]:
    parser = _IdCollector()
    parser.feed(html)
    return parser.ids


def check_links(request, links_by_page: dict[str, list[str]], netloc: str) -> list[str]:
    """Every link to *netloc* answers 200 and its #fragment is an id on the target.

    *request* is a Playwright APIRequestContext (the page's ``page.request``).
    Links to other hosts are not followed (the site must not need them); links with
    non-http schemes (mailto:, javascript:) are ignored.
    """
    problems = []
    fetched: dict[str, tuple[int, set[str] | None]] = {}

    def fetch(url: str) -> tuple[int, set[str] | None]:
        if url not in fetched:
            try:
                resp = request.get(url)
                status = resp.status
                ctype = resp.headers.get("content-type", "")
                ids = html_ids(resp.text()) if resp.ok and "html" in ctype else None
            except Exception as exc:  # connection-level failure
                status, ids = -1, None
                problems.append(f"{url}: request failed: {exc}")
            fetched[url] = (status, ids)
        return fetched[url]

    for source, links in links_by_page.items():
        for link in sorted(set(links)):
            parts = urlsplit(link)
            if parts.scheme not in ("http", "https") or parts.netloc != netloc:
                continue
            target = urlunsplit(parts._replace(fragment=""))
            status, ids = fetch(target)
            if status != 200:
                problems.append(f"{source}: link {link} -> HTTP {status}")
                continue
            if parts.fragment:
                fragment = unquote(parts.fragment)
                if ids is None:
                    problems.append(f"{source}: link {link} has a fragment but the target is not HTML")
                elif fragment not in ids:
                    problems.append(f"{source}: link {link} -> no element with id {fragment!r} on {target}")
    return problems


# --------------------------------------------------------------------------- code blocks

_CODE_BLOCKS_JS = """() => Array.from(document.querySelectorAll('.md-content .highlight')).map(hl => {
    const title = hl.querySelector('.filename');
    let numbers = [];
    const table = hl.querySelector('td.linenos');
    if (table) {
        numbers = table.innerText.split('\\n').map(s => s.trim()).filter(s => s.length);
    } else {
        numbers = Array.from(hl.querySelectorAll('code .linenos')).map(
            e => (e.getAttribute('data-linenos') || e.textContent).trim());
    }
    const code = hl.querySelector('pre > code');
    let lines = 0;
    if (code) {
        const spans = code.querySelectorAll(':scope > span[id^="__span-"]');
        if (spans.length) {
            lines = spans.length;
        } else {
            const text = code.textContent.replace(/\\n$/, '');
            lines = text.length ? text.split('\\n').length : 0;
        }
    }
    return {title: title ? title.textContent.trim() : null, numbers: numbers, lines: lines};
})"""

#: "lines 10–12", or "line 7" for a one-line excerpt.
_TITLE_RANGE = re.compile(r"lines\s+(\d+)\s*[–-]\s*(\d+)|\bline\s+(\d+)\b")


def code_blocks(page) -> list[dict]:
    """Title, displayed line numbers and line count of every code block on the page."""
    return page.evaluate(_CODE_BLOCKS_JS)


def _title_matches(title: str | None, file: str, start: int, end: int) -> bool:
    if not title:
        return False
    m = _TITLE_RANGE.search(title)
    if not m:
        return False
    shown = (int(m.group(1)), int(m.group(2))) if m.group(1) else (int(m.group(3)),) * 2
    if shown != (start, end):
        return False
    return file in title or Path(file).name in title


def excerpt_problems(url: str, blocks: list[dict], entries: list[dict]) -> list[str]:
    """Each lock entry of the page has a block showing exactly lines start..end.

    A block whose title names a line range but matches no lock entry is reported too:
    every excerpt on a page must be one the lock vouches for.
    """
    problems = []
    matched: set[int] = set()
    for entry in entries:
        file, start, end = entry["file"], int(entry["start"]), int(entry["end"])
        label = f"{file} lines {start}–{end}"
        found = [
            (i, b) for i, b in enumerate(blocks) if _title_matches(b["title"], file, start, end)
        ]
        if not found:
            titles = [b["title"] for b in blocks if b["title"]]
            problems.append(f"{url}: no code block titled with {label} (titles: {titles})")
            continue
        for i, block in found:
            matched.add(i)
            numbers = block["numbers"]
            expected = [str(n) for n in range(start, end + 1)]
            if not numbers:
                problems.append(f"{url}: {label}: block shows no line numbers")
                continue
            if numbers[0] != str(start):
                problems.append(f"{url}: {label}: first line number shown is {numbers[0]}, expected {start}")
            if numbers[-1] != str(end):
                problems.append(f"{url}: {label}: last line number shown is {numbers[-1]}, expected {end}")
            if numbers != expected and numbers[0] == str(start) and numbers[-1] == str(end):
                problems.append(f"{url}: {label}: line numbers are not consecutive: {numbers}")
            if block["lines"] != end - start + 1:
                problems.append(
                    f"{url}: {label}: block has {block['lines']} lines, expected {end - start + 1}"
                )
    for i, block in enumerate(blocks):
        if i not in matched and block["title"] and _TITLE_RANGE.search(block["title"]):
            problems.append(f"{url}: excerpt block {block['title']!r} has no entry in the excerpt lock")
    return problems


def check_excerpts(page, url: str, entries: list[dict]) -> list[str]:
    """Load *url* and compare its excerpt blocks with the lock *entries* of that page."""
    page.goto(url, wait_until="load")
    open_folded(page)
    return excerpt_problems(url, code_blocks(page), entries)


def open_folded(page) -> None:
    """Open the folded blocks (pymdownx.details, e.g. the exercises' reference solutions), as
    a reader would click them open: a closed block renders no line numbers."""
    opened = page.evaluate("() => Array.from(document.querySelectorAll('.md-content details:not([open])'))"
                           ".map(d => { d.open = true; }).length")
    if opened:
        settle_transitions(page)  # (a block kept folded through a change of scheme fades once shown)


# What a reader's browser makes of the line coverage (gemmglossary.coverage.site and
# docs/stylesheets/coverage.css): the note beside each excerpt's source link, and the tint
# and margin bar on a line the tests never executed, in both schemes. The real site has
# no such line (tests/coverage fails if one appears), so the mark is given to the first
# line of the page's first excerpt here, exactly as coverage.site.mark_unexecuted writes it
# (its HTML is checked in tests/coverage/test_site_marks.py). COVERAGE_JS leaves the
# mark on: measure a page's coverage after its screenshots.
COVERAGE_JS = """(cls) => {
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


def coverage_problems(found: dict, where: str) -> list[str]:
    """What is wrong with the coverage notes and the marked line of a page, as COVERAGE_JS
    measured them (with the class that marks a line unexecuted as its argument)."""
    problems = [f"{where}: coverage note {note}" for note in found["notes"]
                if not note["visible"] or not NOTE_TEXT.match(note["text"])]
    if not found["notes"]:
        problems.append(f"{where}: no coverage note beside its excerpts")
    mark = found["mark"]
    if mark is None:
        problems.append(f"{where}: no code block with two lines to mark one in")
    elif (mark["background"] == mark["plain"] or mark["shadow"] in ("", "none")
            or mark["width"] < 0.9 * mark["codeWidth"]):
        problems.append(f"{where}: an unexecuted line does not stand out: {mark}")
    return problems


def check_copy_buttons(page, url: str) -> tuple[int, list[str]]:
    """(number of code blocks, problems): every code block has Material's copy button:
    each ``pre > code`` and each notebook code cell (``.highlight-ipynb pre``) of the
    snippet pages.

    Expects *page* to show *url* already, with Material's JavaScript run.
    """
    missing = page.evaluate(
        """(sel) => {
            const pres = Array.from(document.querySelectorAll('.md-content pre'))
                .filter(pre => pre.querySelector(':scope > code') || pre.closest('.highlight-ipynb'));
            return [pres.length, pres.filter(pre => !pre.querySelector(sel))
                .map(pre => pre.textContent.trim().split('\\n')[0].slice(0, 60))];
        }""",
        COPY_BUTTON,
    )
    count, without = missing
    return count, [f"{url}: code block without copy button: {first!r}" for first in without]


def count_annotations(page) -> int:
    # (an evaluate is one round trip; a locator's count costs three times as long)
    return page.evaluate("() => document.querySelectorAll('.md-annotation__index').length")


def check_first_annotation(page, url: str, *, timeout_ms: int = 5000) -> list[str]:
    """Click the first annotation marker like a reader would; its tooltip must show.

    Expects *page* to show *url* already. The marker pulses (a CSS animation), so the
    click goes to the centre of its box with the mouse instead of waiting for it to
    be still.
    """
    marker = page.locator(".md-annotation__index").first
    if marker.count() == 0:
        return [f"{url}: no code annotation marker on the page"]
    tooltip = page.locator(".md-annotation .md-tooltip").first
    # Material mounts the annotations after load; let it settle before judging.
    try:
        page.wait_for_load_state("networkidle", timeout=timeout_ms)
    except Exception:
        pass
    try:
        tooltip.wait_for(state="hidden", timeout=2000)
    except Exception:
        return [f"{url}: annotation tooltip is open before any click"]
    marker.evaluate("el => el.scrollIntoView({block: 'center'})")
    box = marker.bounding_box()
    if not box:
        return [f"{url}: first annotation marker has no box (not rendered)"]
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    try:
        tooltip.wait_for(state="visible", timeout=timeout_ms)
    except Exception:
        return [f"{url}: annotation tooltip did not open on click"]
    text = tooltip.inner_text().strip()
    if not text:
        return [f"{url}: annotation tooltip opened empty"]
    return []


# --------------------------------------------------------------------------- search

SEARCH_INPUT = "input[data-md-component='search-query']"
SEARCH_RESULT_LINK = ".md-search-result__item a.md-search-result__link"


def search_results(page, base_url: str, query: str, *, timeout_s: float = 15.0) -> list[str]:
    """Type *query* into Material's search on the home page; return result links in order.

    The home page is loaded unless *page* shows it already, from an earlier search: a load
    is most of a search's cost, its worker building the site's whole index (0.7 s of CPU);
    the earlier query's results are then cleared first, so that they cannot be taken for
    this query's. Waits until the first result has settled (the same for ~0.6 s).
    """
    box = page.locator(SEARCH_INPUT)
    if page.url != base_url or not _search_cleared(page, box):
        page.goto(base_url, wait_until="load")
    if not box.is_visible():  # narrow layouts hide the input behind the search icon
        page.locator("label[for='__search']").first.click()
    box.click()
    # Fill the whole query at once (then a key release, which Material listens for)
    # so no result list for a half-typed query can be mistaken for the final one.
    box.fill(query)
    box.press("End")
    deadline = time.monotonic() + timeout_s
    last, stable = None, 0
    while time.monotonic() < deadline:
        links = page.locator(SEARCH_RESULT_LINK)
        first = links.first.get_attribute("href") if links.count() else None
        if first is not None and first == last:
            stable += 1
            if stable >= 3:
                return links.evaluate_all("els => els.map(e => e.href)")
        else:
            stable = 0
        last = first
        page.wait_for_timeout(200)  # not time.sleep: Playwright events keep flowing
    return []


def _search_cleared(page, box, timeout_s: float = 5.0) -> bool:
    """Empty the search box of a page that searched already; whether its results went."""
    if not box.is_visible():
        return False
    box.fill("")
    box.press("End")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if page.locator(SEARCH_RESULT_LINK).count() == 0:
            return True
        page.wait_for_timeout(100)
    return False


# --------------------------------------------------------------------------- palette


def color_scheme(page) -> str | None:
    """The scheme of Material's palette the page shows ('default', 'slate'), or None."""
    return page.evaluate("document.body.getAttribute('data-md-color-scheme')")


def set_color_scheme(page, scheme: str, *, timeout_ms: int = 10_000) -> str | None:
    """Switch Material's palette to *scheme* ('default' or 'slate') with the toggle.

    Returns None on success, or the problem. The toggle is the header button a reader
    clicks; the chosen palette is remembered by Material for the next pages.
    """
    # The toggle works once Material's JavaScript has mounted it, which it does when the
    # document is ready (its bundle is a plain script): the load event. (Not networkidle,
    # which waits half a second more on every page for nothing the toggle needs.)
    try:
        page.wait_for_load_state("load", timeout=timeout_ms)
    except Exception:
        pass
    current = color_scheme(page)
    for _ in range(4):  # at most one click per palette entry
        if current == scheme:
            return None
        toggle = page.locator("form[data-md-component='palette'] label:visible").first
        if toggle.count() == 0:
            return f"no palette toggle found (scheme is {current!r})"
        toggle.click()
        try:
            page.wait_for_function(
                "(prev) => document.body.getAttribute('data-md-color-scheme') !== prev",
                arg=current,
                timeout=timeout_ms,
            )
        except Exception:
            return f"palette toggle did not change the scheme from {current!r}"
        current = color_scheme(page)
        settle_transitions(page)
    return None if current == scheme else f"could not reach scheme {scheme!r} (at {current!r})"


#: Waits, frame by frame, until Material has finished switching the palette (it marks the
#: body while it switches) and no CSS transition runs: a transition starts at the first
#: style update after a change, so it is looked for again on the frame after one ends.
SETTLE_TRANSITIONS_JS = """async () => {
  const frame = () => new Promise(resolve => requestAnimationFrame(resolve));
  for (let quiet = 0, frames = 0; quiet < 2 && frames < 300; frames++) {  // (5 s at most)
    await frame();
    getComputedStyle(document.body).backgroundColor;  // (a style update: pending transitions start)
    const running = document.getAnimations().filter(a => a instanceof CSSTransition);
    if (document.body.hasAttribute('data-md-color-switching') || running.length) {
      quiet = 0;
      await Promise.all(running.map(a => a.finished.catch(() => null)));
    } else {
      quiet += 1;
    }
  }
}"""


def settle_transitions(page) -> None:
    """Let the transitions a change of palette started run to their end.

    Material fades the background of code blocks (and of other parts) over 125 to 250 ms,
    while a custom property such as a scrollbar's colour changes at once: a style read in
    between pairs the new scheme's colours with the old scheme's background (a stop's CI
    failed so, measuring a scrollbar's contrast as 1.3 on a code block still half dark).
    A block inside a closed <details> is not restyled while it is folded: it starts its
    fade when it is opened, so open_folded settles too."""
    page.evaluate(SETTLE_TRANSITIONS_JS)
