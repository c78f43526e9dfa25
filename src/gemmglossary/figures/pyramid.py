"""The tile pyramid of a first-party GEMM kernel, from its compile-time constants.

C is cut into threadgroup tiles of ``BM x BN``; a tile into ``WM x WN`` simdgroup blocks of
``SM x SN``; a block into ``TM x TN`` fragments of 8 x 8; each K step stages a ``BM x BK``
slice of A and a ``BK x BN`` slice of B. Every number drawn is read from the kernel file
(``gemmglossary.kernels``, through ``msl.declarations``), for the ``-D`` overrides given;
the figure says nothing the constants do not (which simdgroup gets which block is the
kernel's code, drawn by the ``register-blocks`` figure from a run).
"""

from __future__ import annotations

from typing import Literal

from ..kernels import KERNELS
from .base import Figure, FigureError, Int
from .kernel_facts import first_party, pyramid_constants
from .svg import SMALL, Drawing

FRAGMENT = 8  # simdgroup_matrix is 8 x 8 (the only shape Metal has)
PANEL = 176   # the largest side of a panel, px


def _scaled(rows: int, cols: int, side: float = PANEL) -> tuple[float, float]:
    """(width, height) of a rows x cols rectangle whose longer side is ``side``."""
    s = side / max(rows, cols)
    return cols * s, rows * s


#: MLX's fused GEMMs whose pyramid can be drawn, from MLX's host choices as restated and
#: tested in gemmglossary.mlx.matmul: (title, the case, how to get its TileConfig, staged).
MLX_KERNELS = {
    "mlx-steel": ("MLX's steel_gemm_fused", "float32, 1024³, device class s",
                  lambda mm: mm.regular_config("float32", mm.Device("s", 15), False, False, 1024, 1024, 1024), True),
    "mlx-nax": ("MLX's steel_gemm_fused_nax", "1024³, a generation-17 device",
                lambda mm: mm.nax_config(mm.Device("g", 17), 1024, 1024, 1024), False),
}


def _mlx_constants(kernel: str) -> tuple[dict, str, str, bool]:
    from ..mlx import matmul as mm

    title, case, config_of, staged = MLX_KERNELS[kernel]
    cfg = config_of(mm)
    c = dict(WM=cfg.wm, WN=cfg.wn, TM=cfg.tm, TN=cfg.tn, SM=cfg.tm * cfg.fragment, SN=cfg.tn * cfg.fragment,
             BM=cfg.bm, BN=cfg.bn, BK=cfg.bk, THREADS=cfg.threads, F=cfg.fragment)
    source = (f"Drawn when the site was built from MLX's host choice for {case} "
              f"(`gemmglossary.mlx.matmul`, which follows MLX's matmul.cpp)")
    return c, title, source, staged


#: The kernels a pyramid can be drawn for: the first-party ones and MLX's.
PYRAMID_KERNELS = Literal[tuple(KERNELS) + tuple(MLX_KERNELS)]  # type: ignore[valid-type]


def tile_pyramid(*, kernel: PYRAMID_KERNELS = "tiled_gemm", M: Int(1, 4096) = 200, N: Int(1, 4096) = 260,
                 TM: Int(0, 8) = 0, TN: Int(0, 8) = 0, WM: Int(0, 8) = 0, WN: Int(0, 8) = 0,
                 BK: Int(0, 64) = 0) -> Figure:
    """The pyramid of ``kernel`` (a first-party kernel, or ``mlx-steel`` / ``mlx-nax``) for a
    C of ``M x N``; TM, TN, WM, WN, BK override a first-party kernel's ``-D`` defaults when
    not 0."""
    defines = {k: v for k, v in dict(TM=TM, TN=TN, WM=WM, WN=WN, BK=BK).items() if v}
    if kernel in MLX_KERNELS:
        if defines:
            raise FigureError(f"{kernel}: TM, TN, WM, WN, BK come from MLX's host choice, not from arguments")
        c, name, source, staged = _mlx_constants(kernel)
    else:
        spec = first_party(kernel)
        c = dict(pyramid_constants(spec, defines), F=FRAGMENT)
        name, staged = spec.path.name, True
        over = [f"-D{k}={v}" for k, v in defines.items()]
        source = (f"Drawn when the site was built from the constants of `kernels/{spec.path.name}`"
                  + (f" built with {' '.join(f'`{o}`' for o in over)}" if over else ""))
    f = c["F"]
    tiles_y, tiles_x = -(-M // c["BM"]), -(-N // c["BN"])

    d = Drawing(680, 372)
    top = 58
    # ---- panel 1: C and its threadgroup tiles (edge tiles hang over C, dashed)
    gw, gh = _scaled(tiles_y * c["BM"], tiles_x * c["BN"])
    sx = gw / (tiles_x * c["BN"])
    x1, y1 = 12, top + (PANEL - gh) / 2
    d.rect(x1, y1, N * sx, M * sx, "tint")
    d.rect(x1, y1, c["BN"] * sx, c["BM"] * sx, "c0 strong")
    for i in range(tiles_x + 1):
        d.line(x1 + i * c["BN"] * sx, y1, x1 + i * c["BN"] * sx, y1 + gh, "grid", dash=i * c["BN"] > N)
    for j in range(tiles_y + 1):
        d.line(x1, y1 + j * c["BM"] * sx, x1 + gw, y1 + j * c["BM"] * sx, "grid", dash=j * c["BM"] > M)
    d.rect(x1, y1, N * sx, M * sx, "outline")
    _labels(d, x1 + gw / 2, top + PANEL + 22, [
        f"C: {M}×{N}",
        f"{tiles_x}×{tiles_y} threadgroups (x × y)",
        f"one per {c['BM']}×{c['BN']} tile",
    ], first_bold=True)

    # ---- panel 2: the threadgroup tile, its simdgroup blocks, and the K step's slices
    x2 = 252
    # the K slices to scale, but never thinner than a label or wider than a third of the panel
    slice_w = min(PANEL / 3, max(18.0, PANEL * c["BK"] / max(c["BM"], c["BN"])))
    tw, th = _scaled(c["BM"], c["BN"], PANEL - slice_w - 6)
    tx, ty = x2 + slice_w + 6, top + slice_w + 6
    d.rect(x2, ty, slice_w, th, "c6", title=f"A slice {c['BM']}×{c['BK']}")
    d.rect(tx, top, tw, slice_w, "c7", title=f"B slice {c['BK']}×{c['BN']}")
    d.text(x2 + slice_w / 2, ty + th / 2, f"A {c['BM']}×{c['BK']}", size=SMALL, rotate=-90)
    d.text(tx + tw / 2, top + slice_w / 2, f"B {c['BK']}×{c['BN']}", size=SMALL)
    bw, bh = tw / c["WN"], th / c["WM"]
    for r in range(c["WM"]):
        for q in range(c["WN"]):
            d.rect(tx + q * bw, ty + r * bh, bw, bh, "c0 strong" if (r, q) == (0, 0) else "c1")
    for r in range(c["WM"] + 1):
        d.line(tx, ty + r * bh, tx + tw, ty + r * bh, "fg")
    for q in range(c["WN"] + 1):
        d.line(tx + q * bw, ty, tx + q * bw, ty + th, "fg")
    _zoom(d, (x1, y1, c["BN"] * sx, c["BM"] * sx), (tx, ty, tw, th))
    _labels(d, x2 + PANEL / 2, top + PANEL + 22, [
        f"threadgroup tile {c['BM']}×{c['BN']}",
        f"{c['WM']}×{c['WN']} simdgroup blocks (WM×WN)",
        f"{c['THREADS']} threads; K step BK = {c['BK']}",
    ] + (["(K slices not to scale)"] if slice_w < PANEL * c["BK"] / max(c["BM"], c["BN"]) else []),
        first_bold=True)

    # ---- panel 3: one simdgroup's block of TM x TN fragments
    x3 = 492
    fw, fh = _scaled(c["SM"], c["SN"])
    fx, fy = x3, top + (PANEL - fh) / 2
    cw, ch = fw / c["TN"], fh / c["TM"]
    for i in range(c["TM"]):
        for j in range(c["TN"]):
            d.rect(fx + j * cw, fy + i * ch, cw, ch, "c0")
            if cw >= 30 and ch >= 18:
                d.text(fx + (j + 0.5) * cw, fy + (i + 0.5) * ch, f"{i},{j}", size=SMALL)
    for i in range(c["TM"] + 1):
        d.line(fx, fy + i * ch, fx + fw, fy + i * ch, "fg")
    for j in range(c["TN"] + 1):
        d.line(fx + j * cw, fy, fx + j * cw, fy + fh, "fg")
    _zoom(d, (tx, ty, bw, bh), (fx, fy, fw, fh))
    _labels(d, x3 + PANEL / 2, top + PANEL + 22, [
        f"simdgroup block {c['SM']}×{c['SN']}",
        f"{c['TM']}×{c['TN']} fragments of {f}×{f} (TM×TN)",
        f"{f * f * c['TM'] * c['TN'] // 32} accumulator floats per lane",
    ], first_bold=True)

    d.text(12, 20, f"{name}: the tile pyramid", anchor="start", bold=True)
    d.text(12, 40, f"C → threadgroup tiles → simdgroup blocks → {f}×{f} fragments", anchor="start", cls="muted")
    slices = "staged in threadgroup memory" if staged else "read straight from device memory"
    alt = (f"Three panels. Left: C of {M} by {N} cut into {tiles_x} by {tiles_y} threadgroup tiles of "
           f"{c['BM']} by {c['BN']}; the tiles at the right and bottom edges extend past C. Middle: one "
           f"threadgroup tile, divided into {c['WM']} by {c['WN']} simdgroup blocks, with the {c['BM']} by "
           f"{c['BK']} slice of A to its left and the {c['BK']} by {c['BN']} slice of B above it, {slices} for one "
           f"K step. Right: one simdgroup's block of {c['SM']} by {c['SN']}, a grid of {c['TM']} by {c['TN']} "
           f"{f} by {f} fragments, its accumulators.")
    return Figure(d.svg(f"Tile pyramid of {name}", alt), f"Tile pyramid of {name}", alt,
                  source + f" (M = {M}, N = {N}).")


def _labels(d: Drawing, x: float, y: float, lines: list[str], *, first_bold: bool = False) -> None:
    for k, s in enumerate(lines):
        d.text(x, y + 18 * k, s, size=SMALL if k else 13, bold=first_bold and k == 0)


def _zoom(d: Drawing, small: tuple, big: tuple) -> None:
    """Two thin lines from the corners of ``small`` to those of ``big`` (x, y, w, h each)."""
    sx, sy, sw, sh = small
    bx, by, bw, bh = big
    d.line(sx + sw, sy, bx, by, "muted", dash=True)
    d.line(sx + sw, sy + sh, bx, by + bh, "muted", dash=True)
    d.items[:0] = d.items[-2:]  # behind the shapes they connect
    del d.items[-2:]
