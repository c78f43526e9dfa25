"""mkdocs hook: kernel excerpts checked against the excerpt lock.

Kept as thin as pydantic-ai's docs hooks: the logic, and its tests, live in
``gemmglossary.excerpts.hook``.
"""

from gemmglossary.excerpts.hook import on_config, on_files, on_page_markdown  # noqa: F401
