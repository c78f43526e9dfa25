"""Light and dark screenshots of every glossary page, kept in .screenshots/ for review.

They are JPEG: a full page of a glossary entry is several thousand pixels tall, and
chromium encodes it as PNG in about twice the time (a fifth of a second more per shot)."""

from urllib.parse import urlsplit

import pytest

from sitechecks import set_color_scheme

pytestmark = pytest.mark.browser

MIN_BYTES = 10_000  # a blank or failed render of a full page is far smaller
QUALITY = 85  # JPEG quality: code and figure text stay legible


def _name(site, url: str) -> str:
    rel = urlsplit(url).path.strip("/") or "index"
    return rel.replace("/", "-")


def test_glossary_screenshots_light_and_dark(page, site, site_pages, screenshots_dir):
    glossary = [u for u in site_pages if urlsplit(u).path.startswith("/glossary/")]
    assert len(glossary) >= 2, f"glossary pages: {glossary}"
    for old in screenshots_dir.glob("glossary-*.png"):  # (they were PNG before)
        old.unlink()
    problems, written = [], []
    for url in glossary:
        page.goto(url, wait_until="load")  # once: the scheme changes in place
        for scheme, label in (("default", "light"), ("slate", "dark")):
            path = screenshots_dir / f"{_name(site, url)}-{label}.jpg"
            path.unlink(missing_ok=True)
            page.emulate_media(color_scheme=label)
            problem = set_color_scheme(page, scheme)
            if problem:
                problems.append(f"{url}: {problem}")
                continue
            page.screenshot(path=str(path), type="jpeg", quality=QUALITY, full_page=True)
            written.append(path)
    for path in written:
        if not path.exists() or path.stat().st_size < MIN_BYTES:
            size = path.stat().st_size if path.exists() else 0
            problems.append(f"{path}: missing or too small ({size} bytes)")
    for url in glossary:
        light = screenshots_dir / f"{_name(site, url)}-light.jpg"
        dark = screenshots_dir / f"{_name(site, url)}-dark.jpg"
        if light.exists() and dark.exists() and light.read_bytes() == dark.read_bytes():
            problems.append(f"{url}: light and dark screenshots are identical")
    assert not problems, "\n".join(problems)
    assert len(written) == 2 * len(glossary)
