"""mkdocs hook: runnable snippets (snippets/*.py) published as executed pages.

Thin on purpose; the logic and its tests live in ``gemmglossary.docs_hooks.snippets``.
"""

from gemmglossary.docs_hooks.snippets import (  # noqa: F401
    on_config, on_files, on_page_content, on_post_build, on_pre_build, on_pre_page)
