"""mkdocs hook: under ``mkdocs serve``, an edit converts only the pages it changes.

Thin on purpose; the logic and its tests live in ``gemmglossary.docs_hooks.serve``.
"""

from gemmglossary.docs_hooks.serve import (  # noqa: F401
    on_config, on_files, on_page_markdown, on_post_build, on_pre_build, on_startup)
