"""A small SVG writer for the site's figures: shapes and text in one coordinate system.

The figures are inlined into the page (not ``<img>``), so that

- their text is text: selectable, searchable, read by screen readers;
- their colours come from the page's stylesheet. Shapes and text carry class names
  (``fg``, ``muted``, ``c0`` ... ``c7`` for categories, ``hl`` for a highlight), and
  ``docs/stylesheets/figures.css`` gives each class a colour in Material's light and dark
  schemes, built on Material's own CSS variables. Nothing here names a colour.

Coordinates are CSS pixels at the figure's natural size; the stylesheet lets a figure
shrink to the content column (``max-width: 100%``) but never grow, so a 13 px label is
13 px on a desktop. Output is deterministic (same drawing, same bytes): figures are
cached and compared by their text.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

#: Categorical colour classes the stylesheet defines (``c0`` ... ``c7``).
CATEGORIES = 8
#: Font sizes used by the figures, in px: every label is at least SMALL.
SMALL, NORMAL, LARGE = 12, 13, 15
#: Average advance of a character, as a fraction of the font size (for layout only:
#: the browser measures the real text).
CHAR_WIDTH = 0.6


#: Text alignment by class (the stylesheet's defaults: centred both ways).
ANCHORS = {"middle": "", "start": "s", "end": "e"}
BASELINES = {"central": "", "auto": "base"}


def category(i: int) -> str:
    """The colour class of category ``i`` (wraps around after :data:`CATEGORIES`)."""
    return f"c{i % CATEGORIES}"


def text_width(text: str, size: float = NORMAL) -> float:
    """Estimated width of ``text`` at ``size`` px, for laying out labels."""
    return len(text) * size * CHAR_WIDTH


def _num(v: float) -> str:
    """Coordinates with at most two decimals and no trailing zeros."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _attrs(**kw) -> str:
    out = []
    for k, v in kw.items():
        if v is None or v is False:
            continue
        name = k.rstrip("_").replace("_", "-")
        value = _num(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
        out.append(f' {name}="{html.escape(value, quote=True)}"')
    return "".join(out)


_ID = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass
class Drawing:
    """An SVG of ``width`` x ``height`` px. Add shapes, then call :meth:`svg`."""

    width: float
    height: float
    items: list[str] = field(default_factory=list)

    def rect(self, x, y, w, h, cls: str = "", *, rx: float | None = None, title: str | None = None):
        body = f"<title>{html.escape(title)}</title>" if title else ""
        tag = f"<rect{_attrs(x=x, y=y, width=w, height=h, rx=rx, class_=cls or None)}"
        self.items.append(f"{tag}>{body}</rect>" if body else f"{tag}/>")

    def line(self, x1, y1, x2, y2, cls: str = "fg", *, dash: bool = False):
        self.items.append(f"<line{_attrs(x1=x1, y1=y1, x2=x2, y2=y2, class_=cls + (' dash' if dash else ''))}/>")

    def polyline(self, points, cls: str = "fg", *, arrow: bool = False):
        pts = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
        marker = f"url(#{ID}-arrow)" if arrow else None
        self.items.append(f"<polyline{_attrs(points=pts, class_=cls, marker_end=marker)}/>")

    def bars(self, rects, cls: str) -> None:
        """Many rectangles (x, y, w, h) of one class, as one path."""
        if rects:
            d = "".join(f"M{_num(x)} {_num(y)}h{_num(w)}v{_num(h)}h{_num(-w)}z" for x, y, w, h in rects)
            self.items.append(f"<path{_attrs(d=d, class_=cls)}/>")

    def circle(self, cx, cy, r, cls: str = "fg", *, title: str | None = None):
        body = f"<title>{html.escape(title)}</title>" if title else ""
        tag = f"<circle{_attrs(cx=cx, cy=cy, r=r, class_=cls)}"
        self.items.append(f"{tag}>{body}</circle>" if body else f"{tag}/>")

    def text(self, x, y, s: str, *, size: float = NORMAL, anchor: str = "middle", cls: str = "fg",
             bold: bool = False, mono: bool = False, baseline: str = "central", rotate: float | None = None):
        """Text whose reference point is (x, y): ``anchor`` start/middle/end horizontally,
        centred vertically (``baseline`` central) unless told otherwise."""
        if size < SMALL:
            raise ValueError(f"text {s!r} at {size} px: figures use at least {SMALL} px")
        if anchor not in ANCHORS or baseline not in BASELINES:
            raise ValueError(f"anchor must be one of {', '.join(ANCHORS)} and baseline one of {', '.join(BASELINES)}")
        classes = " ".join(c for c in ("" if cls == "fg" else cls, ANCHORS[anchor], BASELINES[baseline],
                                       "b" if bold else "", "mono" if mono else "") if c)
        transform = f"rotate({_num(rotate)} {_num(x)} {_num(y)})" if rotate else None
        self.items.append(
            f"<text{_attrs(x=x, y=y, font_size=size, class_=classes or None, transform=transform)}>"
            f"{html.escape(s)}</text>")

    def group(self, cls: str, items: list[str]) -> None:
        self.items.append(f'<g class="{html.escape(cls, quote=True)}">' + "".join(items) + "</g>")

    def svg(self, title: str, desc: str) -> str:
        """The SVG element. ``title`` is its accessible name and ``desc`` its long
        description (the figure's alt text). Its ids contain :data:`ID`, which
        :func:`with_id` replaces to make them unique on a page."""
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="gg-svg" viewBox="0 0 {_num(self.width)} {_num(self.height)}" '
                f'width="{_num(self.width)}" height="{_num(self.height)}" role="img" '
                f'aria-labelledby="{ID}-title {ID}-desc">'
                f'<title id="{ID}-title">{html.escape(title)}</title>'
                f'<desc id="{ID}-desc">{html.escape(desc)}</desc>'
                f'<defs><marker id="{ID}-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
                'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="fill-fg"/></marker></defs>')
        return head + "".join(self.items) + "</svg>"


#: Stands for the figure's id in :meth:`Drawing.svg` until :func:`with_id`.
ID = "__GG_FIGURE_ID__"


def with_id(svg: str, ident: str) -> str:
    """``svg`` with its ids made from ``ident`` (unique on the page)."""
    if not _ID.match(ident):
        raise ValueError(f"figure id {ident!r}: lower-case letters, digits and '-'")
    return svg.replace(ID, ident)
