"""The memory hierarchy of an Apple GPU, from the thread's registers to unified memory.

Drawn from :data:`gemmglossary.hardware.HIERARCHY`: each level with who shares it, its
size, the Metal Shading Language address spaces that live there, and whether Apple
documents the figure (the feature set tables give threadgroup memory) or only a
community measurement exists (drawn dashed; the caption names the sources).
"""

from __future__ import annotations

from .. import hardware
from .base import Figure
from .svg import SMALL, NORMAL, Drawing, category


def memory_hierarchy() -> Figure:
    """Boxes from the thread outwards, widening as the level is shared more widely."""
    levels = hardware.HIERARCHY
    row, gap, top, left = 50, 10, 30, 20
    widest, narrowest = 600, 380
    space_x = left + widest + 30
    d = Drawing(space_x + 200, top + len(levels) * (row + gap) + 20)
    d.text(left + widest / 2, 12, "faster, smaller, fewer sharers  ↑", size=SMALL, cls="muted")
    d.text(space_x, 12, "MSL address space", size=SMALL, anchor="start", cls="muted")
    for i, level in enumerate(levels):
        w = narrowest + (widest - narrowest) * i / max(len(levels) - 1, 1)
        x, y = left + (widest - w) / 2, top + i * (row + gap)
        d.rect(x, y, w, row, f"{category(i)}", rx=4)
        d.rect(x, y, w, row, "outline" + ("" if level.documented else " dash"), rx=4)
        d.text(x + w / 2, y + 16, f"{level.name} · {level.scope}", size=NORMAL, bold=True)
        d.text(x + w / 2, y + 35, level.size + ("" if level.documented else " (measured)"), size=SMALL)
        d.text(space_x, y + row / 2, level.spaces, size=SMALL, anchor="start", mono=True)
    alt = ("The memory of an Apple GPU from the thread outwards: "
           + "; ".join(f"{lv.name}, shared by {lv.scope}, {lv.size}, "
                       f"{'documented by Apple' if lv.documented else 'measured'}, holding {lv.spaces}"
                       for lv in levels) + ".")
    documented = [lv.name.lower() for lv in levels if lv.documented]
    source = (f"`gemmglossary.hardware.HIERARCHY`: Apple documents {', '.join(documented)} (Metal feature set "
              "tables); the other sizes are measurements (philipturner/metal-benchmarks, M1 and M2; m5-gemm for "
              "the M5 Max's bandwidth), drawn dashed.")
    return Figure(d.svg("Memory hierarchy of an Apple GPU", alt), "Memory hierarchy of an Apple GPU", alt, source)
