"""Small helpers shared by the runnable snippets in ``snippets/``.

- :func:`kernel_source` reads a first-party kernel (``kernels/<name>``).
- :func:`replace_once` edits kernel text for a "break it" variant and fails loudly
  when the text it expects is gone, so a broken variant always follows the real kernel.
- :func:`patched_include_dir` holds an edited copy of a header (of MLX's, say) in a
  folder to put first on the include path.
- :func:`diagnostic` formats an emulator exception or warning for print: the type, the
  message with paths shown relative to the repository, and an edited variant named after
  the kernel file it was made from.
- :func:`printed_warnings` prints the warnings raised inside it (the emulator's
  ``PortabilityWarning`` warnings) the same way, instead of letting them go to stderr.
- :func:`show_figure` displays a matplotlib figure with alt text. In a notebook (and in
  the site, which executes the snippets itself) the figure is two inline SVG images,
  one per colour scheme, each an ``<img alt=...>``; run as a plain script it prints the
  alt text. Either way it saves a PNG when ``GEMMGLOSSARY_FIGURES`` names a folder.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import os
import re
import warnings
from contextlib import contextmanager
from pathlib import Path

from .file_lock import atomic_write
from . import settings
from .paths import cache_dir, kernels_dir, project_root


def kernel_path(name: str) -> Path:
    return kernels_dir() / name


def kernel_source(name: str) -> str:
    return kernel_path(name).read_text(encoding="utf-8")


def replace_once(text: str, old: str, new: str, count: int = 1) -> str:
    """``text.replace(old, new)``, asserting that ``old`` occurs exactly ``count`` times."""
    found = text.count(old)
    if found != count:
        raise AssertionError(
            f"expected {count} occurrence(s) of {old!r} in the kernel source, found {found}; "
            "the kernel changed, update the snippet's broken variant"
        )
    return text.replace(old, new)


def patched_include_dir(header: str | Path, text: str) -> Path:
    """A folder to put first on the include path, in which ``header`` (a path relative to
    an include directory) has the content ``text``: an edited copy of a header.

    The folder is named by the header and the content, in the per-user cache, and the
    copy is left there: run again, the snippet finds its compiled kernel in the emulator's
    cache (a new temporary folder on each run makes the same kernel a new source, which
    is compiled again)."""
    header = Path(header)
    if header.is_absolute() or ".." in header.parts:
        raise ValueError(f"{header}: the header's path inside an include directory, not {header}")
    digest = hashlib.sha256(f"{header.as_posix()}\0{text}".encode()).hexdigest()[:16]
    folder = cache_dir() / "patched-headers" / digest
    target = folder / header
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text.encode("utf-8"))
    return folder


def diagnostic(err, edited: str | None = None) -> str:
    """``"TypeName: message"`` for an exception or warning, ready to print.

    Paths under the repository are shown relative to it (``kernels/x.metal:49``), and a
    kernel compiled from a source string (named ``<source>`` by the emulator) is called
    ``edited`` + `` (edited)``, e.g. ``matmul_tiled.metal (edited)``: a variant made with
    :func:`replace_once` keeps the line numbers of the file it came from.
    """
    message = getattr(err, "message", err)  # warnings.WarningMessage -> the warning
    kind = type(message).__name__
    text = str(message)
    root = str(project_root())
    text = text.replace(root + os.sep, "").replace(root, ".")
    if edited:
        text = text.replace("<source>", f"{edited} (edited)")
    lines: list[str] = []
    for line in text.splitlines():
        if not lines or line != lines[-1]:
            lines.append(line)
    return f"{kind}: " + "\n".join(lines)


@contextmanager
def printed_warnings(edited: str | None = None, limit: int = 3):
    """Record the warnings raised in the block, then print them with :func:`diagnostic`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    for w in caught[:limit]:
        print(diagnostic(w, edited))
    if len(caught) > limit:
        print(f"... and {len(caught) - limit} more warning(s)")


def _in_ipython() -> bool:
    from IPython import get_ipython  # installed with ipykernel, a dependency

    return get_ipython() is not None


def show_figure(fig, alt: str, *, dpi: int = 110) -> None:
    """Display ``fig`` (a ``matplotlib.figure.Figure``) with ``alt`` as its alt text.

    In a notebook it is shown as two SVG images, for the site's light and dark schemes
    (``gemmglossary.figures.matplotlib_schemes``: sized for the content column, text at
    least 9.5 pt, chrome in each scheme's foreground); the site shows the one matching
    the reader's scheme."""
    from .figures.matplotlib_schemes import scheme_images

    # The PNG only when a folder asks for it: drawing one takes as long as the SVG the
    # notebook shows, and a snippet page has no use for it.
    folder = settings.value("GEMMGLOSSARY_FIGURES")
    if folder:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
        slug = re.sub(r"[^a-z0-9]+", "-", alt.lower()).strip("-")[:60] or "figure"
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{slug}.png").write_bytes(buf.getvalue())
    images = scheme_images(fig) if _in_ipython() else {}
    # A pyplot-managed figure would be shown a second time, without alt text.
    import matplotlib.pyplot as plt

    plt.close(fig)

    if not _in_ipython():
        print(f"[figure] {alt}")
        return

    from IPython.display import display

    text = html.escape(alt, quote=True)
    tags = "".join(
        f'<img alt="{text}" title="{text}" src="data:image/svg+xml;base64,'
        f'{base64.b64encode(svg).decode("ascii")}#only-{scheme}" style="max-width:100%">'
        for scheme, svg in images.items())
    display({"text/html": tags, "text/plain": f"[figure] {alt}"}, raw=True)
