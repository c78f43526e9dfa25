"""Code a reader can read, as a browser lays it out: no line of a code block is cut off at
the block's edge unless the block scrolls with a scrollbar that can be seen, and every
code annotation marker is inside the visible part of its block (issue #33, item 8).

CODE_FIT_JS measures every shown code block of a page at the current window width (the
tour runs it at 1280 px and 390 px): for each line, the right edge of its words against
the right edge of what the block shows; code_fit_problems judges the measurements. Like
sitechecks, the judging returns problems instead of asserting, so the negative tests run
it on a site built with Material's defaults, where long lines are cut off.
"""

from __future__ import annotations

from figurechecks import contrast

#: A scrollbar's thumb against the code background: WCAG's minimum for parts of a control.
MIN_SCROLLBAR_CONTRAST = 3.0

CODE_FIT_JS = """() => Array.from(document.querySelectorAll('.md-content pre > code'))
  .filter(code => code.getClientRects().length)  // (a block in a closed tab is not shown)
  .map(code => {
    const box = code.getBoundingClientRect();
    const seen = box.left + code.clientLeft + code.clientWidth;  // the right edge of what shows
    const style = getComputedStyle(code);
    const hl = code.closest('.highlight');
    const title = hl && hl.querySelector('.filename');
    const spans = Array.from(code.querySelectorAll(':scope > span[id^="__span-"]'));
    // the right edge of a line's ink: its words, not the spaces a wrapped row leaves hanging
    // past the edge (white-space: pre-wrap lets them hang, unseen), nor the text of an
    // annotation's tooltip (Material mounts it inside the marker; the markers are below)
    const range = document.createRange();
    const right = node => {
      let edge = box.left;
      const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT, t =>
        t.parentElement.closest('.md-annotation') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT);
      for (let t = walker.nextNode(); t; t = walker.nextNode()) {
        for (const m of t.data.matchAll(/\\S+/g)) {
          range.setStart(t, m.index);
          range.setEnd(t, m.index + m[0].length);
          for (const r of range.getClientRects()) edge = Math.max(edge, r.right);
        }
      }
      return edge;
    };
    const lines = spans.length ? spans : [code];
    const clipped = lines.filter(l => right(l) > seen + 1).map(l => {
      const n = l.querySelector('[data-linenos]');
      return (n ? n.getAttribute('data-linenos').trim() + ': ' : '') + l.textContent.trim().slice(0, 50);
    });
    const markers = Array.from(code.querySelectorAll('.md-annotation__index')).map(m => {
      const r = m.getBoundingClientRect();
      const id = m.querySelector('[data-md-annotation-id]');  // (Material writes the number in CSS)
      return {text: id ? id.getAttribute('data-md-annotation-id') : m.textContent.trim(), shown: r.width > 0 && r.height > 0 && r.left >= box.left - 1
              && r.right <= seen + 1};
    });
    let bg = style.backgroundColor;
    for (let e = code; e && /rgba\\(0, 0, 0, 0\\)|transparent/.test(bg); e = e.parentElement) {
      bg = getComputedStyle(e).backgroundColor;
    }
    return {title: title ? title.textContent.trim() : code.textContent.trim().split('\\n')[0].slice(0, 50),
            numbered: !!(hl && hl.querySelector('.linenos, [data-linenos]')), lines: lines.length, clipped, markers,
            scrolls: code.scrollWidth > code.clientWidth + 1, overflowX: style.overflowX,
            scrollbarWidth: style.scrollbarWidth, scrollbarColor: style.scrollbarColor, background: bg};
  })"""


def scrollbar_problem(block: dict) -> str | None:
    """Why a block's horizontal scroll cannot be seen, or None."""
    if block["overflowX"] not in ("auto", "scroll"):
        return f"overflow-x is {block['overflowX']}"
    if block["scrollbarWidth"] == "none":
        return "its scrollbar is hidden (scrollbar-width: none)"
    colour = block["scrollbarColor"]
    if colour in ("auto", ""):
        return None  # the platform's own scrollbar
    thumb = colour.split(")")[0] + ")" if "(" in colour else colour.split()[0]
    c = contrast(thumb, block["background"])
    if c < MIN_SCROLLBAR_CONTRAST:
        return f"its scrollbar thumb {thumb} on {block['background']} has contrast {c:.1f}"
    return None


def code_fit_problems(blocks: list[dict], where: str) -> list[str]:
    """What CODE_FIT_JS found cut off or hidden on one page at one width."""
    problems = []
    for b in blocks:
        if b["clipped"]:
            why = scrollbar_problem(b) if b["scrolls"] else "the block does not scroll"
            if why:
                problems.append(f"{where}: {b['title']!r}: {len(b['clipped'])} of {b['lines']} lines cut off at the "
                                f"block's edge, and {why}: {b['clipped'][:3]}")
        hidden = [m["text"] or "?" for m in b["markers"] if not m["shown"]]
        if hidden:
            problems.append(f"{where}: {b['title']!r}: annotation markers outside the visible block: {hidden}")
    return problems


def count(blocks: list[dict]) -> tuple[int, int, int]:
    """(quoted lines, of them cut off, annotation markers) of one page at one width."""
    numbered = [b for b in blocks if b["numbered"]]
    return (sum(b["lines"] for b in numbered), sum(len(b["clipped"]) for b in numbered),
            sum(len(b["markers"]) for b in blocks))
