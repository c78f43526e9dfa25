"""mkdocs hook: kernel excerpts checked against the excerpt lock.

Kept as thin as pydantic-ai's docs hooks: the logic, and its tests, live in
``gemmglossary.docs_hooks.excerpts``.
"""

from gemmglossary.docs_hooks.excerpts import on_config, on_files, on_page_markdown  # noqa: F401
