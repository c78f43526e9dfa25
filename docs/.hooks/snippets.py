"""mkdocs hook: runnable snippets (snippets/*.py) published as executed pages.

Thin on purpose; the logic and its tests live in ``gemmglossary.snippets_hook``.
"""

from gemmglossary.snippets_hook import on_config, on_files, on_page_content  # noqa: F401
