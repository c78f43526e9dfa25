"""The generated figures in a real browser, in both of Material's schemes.

Every glossary entry (docs/glossary/*.md but the index) and case study (docs/case-studies/*.md
and How MLX picks a GEMM) shows at least one
figure; each is visible, stays inside the content column (also in a narrow window), has an
accessible name and description, text of a readable size whose colour follows the scheme
with enough contrast against the page. A screenshot of every figure in both schemes is left
in .screenshots/ (figures-<page>-<n>-<light|dark>.png). The snippet pages show the figure
drawn for the reader's scheme only.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from sitechecks import set_color_scheme

pytestmark = pytest.mark.browser

#: Case studies outside docs/case-studies/ (the site's paths).
CASE_STUDIES = ("/how-mlx-picks-a-gemm",)
MIN_TEXT_PX = 11.5   # smallest rendered label at a desktop width
MIN_CONTRAST = 4.5   # WCAG AA for text

_FIGURES_JS = """() => {
  const column = document.querySelector('.md-content__inner').getBoundingClientRect();
  const bg = getComputedStyle(document.body).backgroundColor;
  return Array.from(document.querySelectorAll('figure.gg-figure')).map(fig => {
    const svg = fig.querySelector('svg');
    const r = svg ? svg.getBoundingClientRect() : null;
    const vb = svg ? svg.viewBox.baseVal : null;
    const scale = r && vb && vb.width ? r.width / vb.width : 0;
    const texts = svg ? Array.from(svg.querySelectorAll('text')) : [];
    const sizes = texts.map(t => parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize) * scale);
    const fills = [...new Set(texts.filter(t => !t.classList.contains('muted')).map(t => getComputedStyle(t).fill))];
    const ids = svg ? (svg.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean) : [];
    return {
      id: fig.id, name: fig.dataset.figure, hasSvg: !!svg, width: r ? r.width : 0, height: r ? r.height : 0,
      left: r ? r.left : 0, right: r ? r.right : 0, columnLeft: column.left, columnRight: column.right,
      minText: sizes.length ? Math.min(...sizes) : 0, textCount: texts.length, fills, bg,
      labels: ids.map(i => (document.getElementById(i) || {}).textContent || ''),
      caption: (fig.querySelector('figcaption') || {}).textContent || '',
    };
  });
}"""


def _rgb(css: str) -> tuple[float, float, float, float]:
    nums = [float(v) for v in re.findall(r"[\d.]+", css)]
    return (nums + [1.0])[:4] if len(nums) >= 3 else (0, 0, 0, 1)


def _luminance(rgb) -> float:
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(v) for v in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: str, bg: str) -> float:
    f, b = _rgb(fg), _rgb(bg)
    a = f[3]
    mixed = tuple(a * f[i] + (1 - a) * b[i] for i in range(3))  # the text's colour over the page
    hi, lo = sorted((_luminance(mixed), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def entries(site_pages) -> list[str]:
    out = []
    for url in site_pages:
        path = urlsplit(url).path
        if ((path.startswith("/glossary/") and path.rstrip("/") != "/glossary") or path.startswith("/case-studies/")
                or path.rstrip("/") in CASE_STUDIES):
            out.append(url)
    return out


def _name(url: str) -> str:
    return urlsplit(url).path.strip("/").replace("/", "-")


def figure_problems(f: dict, where: str) -> list[str]:
    """What is wrong with one figure as _FIGURES_JS measured it."""
    if not f["hasSvg"] or f["width"] < 100 or f["height"] < 50:
        return [f"{where}: not shown ({f['width']:.0f}×{f['height']:.0f} px)"]
    out = []
    if f["left"] < f["columnLeft"] - 1 or f["right"] > f["columnRight"] + 1:
        out.append(f"{where}: overflows the content column ({f['left']:.0f}–{f['right']:.0f} "
                   f"outside {f['columnLeft']:.0f}–{f['columnRight']:.0f})")
    if f["minText"] < MIN_TEXT_PX:
        out.append(f"{where}: text rendered at {f['minText']:.1f} px (< {MIN_TEXT_PX})")
    if len(f["labels"]) != 2 or not all(s.strip() for s in f["labels"]):
        out.append(f"{where}: no accessible name and description ({f['labels']})")
    if "computed" not in f["caption"].lower() and "drawn" not in f["caption"].lower():
        out.append(f"{where}: the caption does not say what the figure was computed from")
    for fill in f["fills"]:
        c = contrast(fill, f["bg"])
        if c < MIN_CONTRAST:
            out.append(f"{where}: text colour {fill} on {f['bg']} has contrast {c:.1f}")
    return out


def test_every_entry_shows_its_figures_in_both_schemes(page, site_pages, screenshots_dir):
    pages = entries(site_pages)
    assert len(pages) >= 17 and any(p.rstrip("/").endswith(CASE_STUDIES) for p in pages), pages
    for old in screenshots_dir.glob("figures-*.png"):
        old.unlink()
    problems, shots, seen_fills = [], 0, {}
    for url in pages:
        page.goto(url, wait_until="load")  # once: the toggle switches the scheme in place
        for scheme, label in (("default", "light"), ("slate", "dark")):
            problem = set_color_scheme(page, scheme)
            if problem:
                problems.append(f"{url}: {problem}")
                continue
            figs = page.evaluate(_FIGURES_JS)
            if not figs:
                problems.append(f"{url}: no generated figure on the page")
            for k, f in enumerate(figs):
                found = figure_problems(f, f"{url} {label} figure {f['id']}")
                problems += found
                if found or not f["hasSvg"]:
                    continue
                seen_fills.setdefault(f["id"] + url, {})[label] = tuple(f["fills"])
                path = screenshots_dir / f"figures-{_name(url)}-{k + 1}-{label}.png"
                page.locator(f"figure#{f['id']}").screenshot(path=str(path))
                shots += 1
    for key, by_scheme in seen_fills.items():
        if by_scheme.get("light") and by_scheme.get("light") == by_scheme.get("dark"):
            problems.append(f"{key}: text has the same colour in both schemes {by_scheme['light']}")
    assert not problems, "\n".join(problems)
    assert shots >= 2 * len(pages)


def test_figures_stay_in_a_narrow_column(browser, site_pages):
    ctx = browser.new_context(viewport={"width": 420, "height": 900})
    try:
        pg = ctx.new_page()
        problems = []
        for url in entries(site_pages):
            pg.goto(url, wait_until="load")
            for f in pg.evaluate(_FIGURES_JS):
                if f["right"] > f["columnRight"] + 1 or f["width"] < 100:
                    problems.append(f"{url} figure {f['id']}: {f['left']:.0f}–{f['right']:.0f} in a column "
                                    f"{f['columnLeft']:.0f}–{f['columnRight']:.0f}")
        assert not problems, "\n".join(problems)
    finally:
        ctx.close()


def test_snippet_figures_follow_the_scheme(page, site_pages):
    # three snippet pages with figures are enough: they all come from the same show_figure
    wanted = ("simdgroup_matrix", "register_blocking", "epilogue_fusion")
    snippets = [u for u in site_pages if any(f"/snippets/{w}/" in urlsplit(u).path for w in wanted)]
    assert len(snippets) == len(wanted), snippets
    with_figures = 0
    problems = []
    for url in snippets:
        page.goto(url, wait_until="load")
        for scheme, shown, hidden in (("default", "light", "dark"), ("slate", "dark", "light")):
            problem = set_color_scheme(page, scheme)
            if problem:
                problems.append(f"{url}: {problem}")
                continue
            state = page.evaluate("""() => Array.from(document.querySelectorAll('img[src*="#only-"]')).map(i => ({
                scheme: i.getAttribute('src').split('#only-').pop(), visible: i.getBoundingClientRect().height > 0,
                alt: i.getAttribute('alt') || '', width: i.getBoundingClientRect().width,
                column: document.querySelector('.md-content__inner').getBoundingClientRect().width}))""")
            if state:
                with_figures += 1
            for img in state:
                if img["scheme"] == shown and not img["visible"]:
                    problems.append(f"{url} ({scheme}): the {shown} figure is hidden")
                if img["scheme"] == hidden and img["visible"]:
                    problems.append(f"{url} ({scheme}): the {hidden} figure shows too")
                if not img["alt"].strip() or img["width"] > img["column"] + 1:
                    problems.append(f"{url} ({scheme}): a figure without alt text or wider than the column")
    assert not problems, "\n".join(problems)
    assert with_figures == 2 * len(wanted), f"snippet pages with scheme figures: {with_figures // 2}"


def test_the_checks_catch_a_broken_figure(page, site_pages):
    """The same measurements on a page whose figure is made too wide, its text too small and
    the colour of the background."""
    url = entries(site_pages)[0]
    page.goto(url, wait_until="load")
    page.add_style_tag(content=".md-typeset .gg-figure svg { max-width: none !important; width: 3000px !important; }"
                               ".gg-svg text { fill: var(--md-default-bg-color) !important; }")
    page.evaluate("() => document.querySelectorAll('figure.gg-figure svg title, figure.gg-figure figcaption')"
                  ".forEach(t => t.textContent = '')")
    f = page.evaluate(_FIGURES_JS)[0]
    found = " ".join(figure_problems(f, "broken"))
    assert "overflows the content column" in found and "contrast" in found and "accessible name" in found
    assert "caption does not say" in found
    page.add_style_tag(content=".md-typeset .gg-figure svg { width: 200px !important; }")
    assert "text rendered at" in " ".join(figure_problems(page.evaluate(_FIGURES_JS)[0], "small"))
