"""Measurements of the generated figures as a browser renders them, and what is wrong
with them: every figure is visible, stays inside the content column, has an accessible
name and description, text of a readable size whose colour follows the scheme with enough
contrast against the page. The snippet pages show the figure drawn for the reader's scheme
only. Like sitechecks, each check returns problems instead of asserting."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

#: Case studies outside docs/case-studies/ (the site's paths).
CASE_STUDIES = ("/how-mlx-picks-a-gemm",)
MIN_TEXT_PX = 11.5   # smallest rendered label at a desktop width
MIN_CONTRAST = 4.5   # WCAG AA for text

FIGURES_JS = """() => {
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


def is_entry(url: str) -> bool:
    """A glossary entry (not the glossary's index) or a case study: a page with figures."""
    path = urlsplit(url).path
    return ((path.startswith("/glossary/") and path.rstrip("/") != "/glossary") or path.startswith("/case-studies/")
            or path.rstrip("/") in CASE_STUDIES)


def entries(site_pages) -> list[str]:
    return [url for url in site_pages if is_entry(url)]


def figure_problems(f: dict, where: str) -> list[str]:
    """What is wrong with one figure as FIGURES_JS measured it."""
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


#: Three snippet pages with figures are enough: they all come from the same show_figure.
SNIPPET_FIGURE_PAGES = ("simdgroup_matrix", "register_blocking", "epilogue_fusion")

SNIPPET_IMAGES_JS = """() => Array.from(document.querySelectorAll('img[src*="#only-"]')).map(i => ({
    scheme: i.getAttribute('src').split('#only-').pop(), visible: i.getBoundingClientRect().height > 0,
    alt: i.getAttribute('alt') || '', width: i.getBoundingClientRect().width,
    column: document.querySelector('.md-content__inner').getBoundingClientRect().width}))"""


def is_snippet_figure_page(url: str) -> bool:
    return any(f"/snippets/{name}/" in urlsplit(url).path for name in SNIPPET_FIGURE_PAGES)


def snippet_image_problems(images: list[dict], where: str, shown: str) -> list[str]:
    """The images of a snippet page (SNIPPET_IMAGES_JS) in the scheme whose figure is `shown`
    ('light' or 'dark'): that one visible, the other hidden, each with alt text and no wider
    than the column."""
    hidden = "dark" if shown == "light" else "light"
    problems = []
    for img in images:
        if img["scheme"] == shown and not img["visible"]:
            problems.append(f"{where}: the {shown} figure is hidden")
        if img["scheme"] == hidden and img["visible"]:
            problems.append(f"{where}: the {hidden} figure shows too")
        if not img["alt"].strip() or img["width"] > img["column"] + 1:
            problems.append(f"{where}: a figure without alt text or wider than the column")
    return problems


def narrow_problems(figures: list[dict], where: str) -> list[str]:
    """Figures measured in a narrow window: each still inside the column, and shown."""
    return [f"{where} figure {f['id']}: {f['left']:.0f}–{f['right']:.0f} in a column "
            f"{f['columnLeft']:.0f}–{f['columnRight']:.0f}"
            for f in figures if f["right"] > f["columnRight"] + 1 or f["width"] < 100]
