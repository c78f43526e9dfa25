"""How MLX picks a GEMM, as a flowchart: the tests of its host code in the order it makes
them, each with the kernel it picks when the test holds.

Nothing here decides anything: the boxes, their order, their questions and their kernels
are :data:`gemmglossary.mlx.matmul.STEPS`, the sequence :func:`~gemmglossary.mlx.matmul.route`
itself runs (and tests/mlx checks against matmul.cpp). A step added, removed, reordered or
given another threshold changes the drawing. The kernels have the colours of the
matmul-route figure (:data:`.route.KINDS`), so the two figures of the page read together.
"""

from __future__ import annotations

from .base import Figure, FigureError
from .route import KINDS
from .svg import SMALL, Drawing, category, text_width

WIDTH = 680
LEFT, QUESTION_W = 12, 420        # the column of tests
KERNEL_X, KERNEL_W = 500, 168     # the column of kernels
LINE_H, PAD, GAP = 16, 9, 22      # a text line, the padding in a box, the gap between rows


def wrap(text: str, width: float, size: float = SMALL) -> list[str]:
    """``text`` in lines of at most ``width`` px (estimated, as the figures lay out text)."""
    lines, line = [], ""
    for word in text.split():
        candidate = f"{line} {word}".strip()
        if line and text_width(candidate, size) > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    return lines + [line] if line else lines


def matmul_flow() -> Figure:
    """The tests of ``Matmul::eval_gpu`` and ``steel_matmul_axpby`` in order, a yes arrow
    from each to its kernel and a no arrow to the next test."""
    from ..mlx import matmul

    steps = matmul.STEPS
    unknown = sorted({k for s in steps for k in s.kernels} - set(KINDS))
    if unknown:
        raise FigureError(f"the routing steps give kernels this figure has no colour for: {', '.join(unknown)}")
    rows = []  # (step, question lines, top, height)
    y = 12
    start_lines = wrap(f"a @ b: {matmul.FOLD}", QUESTION_W - 2 * PAD)
    start_h = len(start_lines) * LINE_H + 2 * PAD
    y += start_h + GAP
    for n, step in enumerate(steps, 1):
        last = n == len(steps)  # the last test always holds: no "no" arrow, no line reference
        lines = wrap(step.question, QUESTION_W - 2 * PAD)
        h = max(len(lines) * LINE_H + 2 * PAD + (LINE_H if not last else 0), len(step.kernels) * LINE_H + 2 * PAD)
        rows.append((step, lines, y, h))
        y += h + GAP
    d = Drawing(WIDTH, y - GAP + 12)

    def box_text(x, top, lines, cls="fg", mono=False):
        for i, line in enumerate(lines):
            d.text(x + PAD, top + PAD + LINE_H / 2 + i * LINE_H, line, anchor="start", size=SMALL, cls=cls, mono=mono)

    d.rect(LEFT, 12, QUESTION_W, start_h, "tint", rx=4)
    box_text(LEFT, 12, start_lines)
    d.polyline([(LEFT + QUESTION_W / 2, 12 + start_h), (LEFT + QUESTION_W / 2, rows[0][2])], "fg", arrow=True)
    for i, (step, lines, top, h) in enumerate(rows):
        last = i == len(rows) - 1
        d.rect(LEFT, top, QUESTION_W, h, "outline" if not last else "tint", rx=4,
               title=f"{step.question} ({matmul.rule_label(step.rule)})")
        box_text(LEFT, top, lines)
        if not last:
            d.text(LEFT + QUESTION_W - PAD, top + h - PAD - LINE_H / 2 + 2, matmul.rule_label(step.rule),
                   anchor="end", size=SMALL, cls="muted")
        kind = step.kernels[0]
        kh = len(step.kernels) * LINE_H + 2 * PAD
        ky = top + (h - kh) / 2
        d.rect(KERNEL_X, ky, KERNEL_W, kh, category(KINDS.index(kind)) + " strong", rx=4,
               title=f"{step.name}: {', '.join(step.kernels)}")
        box_text(KERNEL_X, ky, list(step.kernels), mono=True)
        mid = top + h / 2
        d.polyline([(LEFT + QUESTION_W, mid), (KERNEL_X - 2, mid)], "fg", arrow=True)
        if not last:
            d.text((LEFT + QUESTION_W + KERNEL_X) / 2, mid - 9, "yes", size=SMALL, cls="muted")
            below = rows[i + 1][2]
            d.polyline([(LEFT + QUESTION_W / 2, top + h), (LEFT + QUESTION_W / 2, below)], "fg", arrow=True)
            d.text(LEFT + QUESTION_W / 2 + 8, (top + h + below) / 2, "no", anchor="start", size=SMALL, cls="muted")
    for step, lines, top, h in rows:
        if any(text_width(line, SMALL) > QUESTION_W - 2 * PAD for line in lines):
            raise FigureError(f"step {step.name}: a word of its question is wider than its box")
        if any(text_width(k, SMALL) > KERNEL_W - 2 * PAD for k in step.kernels):
            raise FigureError(f"step {step.name}: a kernel name is wider than its box")

    said = " ".join(f"{s.question} " + (f"If so, {' or '.join(s.kernels)}; if not, the next test."
                                        if n < len(steps) else f"For {s.question}: {' or '.join(s.kernels)}.")
                    for n, s in enumerate(steps, 1))
    alt = (f"A flowchart of the tests MLX's host code makes for a @ b, top to bottom. First, {matmul.FOLD}. "
           f"Then: {said}")
    title = "How MLX picks the kernel for a matrix product"
    return Figure(d.svg(title, alt), title, alt,
                  "Drawn when the site was built from `gemmglossary.mlx.matmul.STEPS`, the sequence of tests "
                  "that `route()` runs (tested against MLX's matmul.cpp); each test's lines of matmul.cpp under it.")
