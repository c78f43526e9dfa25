"""Snippet figures (matplotlib) made readable on the site: sized for the content column,
with text large enough, drawn once for each of Material's colour schemes.

:func:`gemmglossary.snippets.show_figure` calls :func:`scheme_images`, which

1. shrinks a figure wider than the content column to the column's width (its text keeps
   its size in points, so it is no longer scaled down with the picture) and raises the
   "chrome" text (titles, axis labels, tick labels, legends, colour bar labels) to at
   least :data:`MIN_POINTS`;
2. marks the chrome that is drawn in matplotlib's default black (that text, the spines,
   the ticks) and gives it the foreground colour of each scheme; colours the snippet chose
   (data, cell labels, outlines over data) are kept;
3. renders SVG with a transparent background, once per scheme.

The page shows the light one in Material's light scheme and the dark one in its dark
scheme (Material's ``#only-light`` / ``#only-dark`` image convention).
"""

from __future__ import annotations

import io
import textwrap

#: Width of the site's content column at a desktop window, CSS px (96 per inch).
COLUMN_PX = 680
#: The smallest size of titles, labels and ticks after fitting, in points (12.7 CSS px).
MIN_POINTS = 9.5
#: The foreground of Material's schemes (its --md-default-fg-color over the background).
SCHEMES = {"light": "#212121", "dark": "#d5d8df"}
_MARK = "#010203"  # stands for "the scheme's foreground" until the SVG is written


def _is_default_black(color) -> bool:
    from matplotlib.colors import to_hex

    try:
        return to_hex(color, keep_alpha=False) == "#000000"
    except ValueError:
        return False


def _chrome(fig):
    """(texts, lines and patches) that belong to the axes' furniture, not to the data."""
    texts, artists = [], []
    if getattr(fig, "_suptitle", None) is not None:
        texts.append(fig._suptitle)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        artists += list(ax.spines.values())
        legend = ax.get_legend()
        if legend is not None:
            texts += legend.get_texts()
            if legend.get_title() is not None:
                texts.append(legend.get_title())
    for legend in getattr(fig, "legends", []):
        texts += legend.get_texts()
    return texts, artists


def _wrap(text, width_pt: float) -> None:
    """Break a title or label into lines that fit ``width_pt`` (at ~0.55 em per character)."""
    per_line = max(8, int(width_pt / (text.get_fontsize() * 0.55)))
    lines = []
    for line in text.get_text().split("\n"):
        lines += textwrap.wrap(line, per_line) or [""]
    text.set_text("\n".join(lines))


def fit(fig) -> None:
    """Column width, readable chrome, default-black chrome marked, transparent faces."""
    w, h = fig.get_size_inches()
    k = min(1.0, COLUMN_PX / 96 / w)
    if k < 1:
        fig.set_size_inches(w * k, h * k)
        for ax in fig.axes:  # labels inside the data keep their size relative to it
            for t in ax.texts:
                t.set_fontsize(t.get_fontsize() * k)
    fig.canvas.draw()  # tick labels exist only once drawn
    texts, artists = _chrome(fig)
    for t in texts:
        if t.get_text() and t.get_fontsize() < MIN_POINTS:
            t.set_fontsize(MIN_POINTS)
        if _is_default_black(t.get_color()):
            t.set_color(_MARK)
    for _ in range(2):  # the layout moves as the text changes: fit twice
        fig.canvas.draw()
        for ax in fig.axes:
            box = ax.get_window_extent()
            for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label):
                if t.get_text():
                    _wrap(t, box.width * 72 / fig.dpi)
            if ax.yaxis.label.get_text():
                _wrap(ax.yaxis.label, box.height * 72 / fig.dpi)
        if getattr(fig, "_suptitle", None) is not None:
            _wrap(fig._suptitle, fig.get_size_inches()[0] * 72)
    for a in artists:
        if _is_default_black(a.get_edgecolor()):
            a.set_edgecolor(_MARK)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):  # ticks are made anew at each draw: set their defaults
            ticks = axis.get_major_ticks()
            if not ticks:
                continue
            kw = {}
            if ticks[0].label1.get_fontsize() < MIN_POINTS:
                kw["labelsize"] = MIN_POINTS
            if _is_default_black(ticks[0].label1.get_color()):
                kw["labelcolor"] = _MARK
            if _is_default_black(ticks[0].tick1line.get_color()):
                kw["color"] = _MARK
            axis.set_tick_params(which="both", **kw)
        ax.set_facecolor("none")
        legend = ax.get_legend()
        if legend is not None:
            legend.get_frame().set_facecolor("none")
            legend.get_frame().set_edgecolor(_MARK)
    fig.patch.set_alpha(0)


def scheme_images(fig) -> dict[str, bytes]:
    """``{"light": svg, "dark": svg}`` of ``fig`` after :func:`fit`."""
    import matplotlib

    fit(fig)
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "gemmglossary"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", transparent=True)
    svg = buf.getvalue().decode("utf-8")
    return {scheme: svg.replace(_MARK, color).encode("utf-8") for scheme, color in SCHEMES.items()}
