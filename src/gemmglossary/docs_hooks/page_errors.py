"""The error a page's own mistake raises in a build: one message, no traceback.

MkDocs prints a ``BuildError`` as its message ("Aborted with a BuildError!") and any other
exception with its traceback; Zensical prints every error as it is. A ``{{fact}}`` or
``{{figure}}`` tag a page got wrong (an unknown name, an argument out of range) is the
writer's to fix at the page line the message names, so it is raised as a
:class:`PageError`; a fault of the project's own code (a generator that crashed) is not,
and keeps its traceback.
"""

from __future__ import annotations

try:
    from mkdocs.exceptions import PluginError as _BuildError
except ImportError:  # pragma: no cover - mkdocs is a dependency of the package
    _BuildError = RuntimeError  # type: ignore[misc,assignment]


class PageError(_BuildError):
    """A page's mistake, named by its file and line."""
