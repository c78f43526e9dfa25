"""mkdocs hook: the theme's templates are compiled once per machine, not once per build.

Thin on purpose; the logic lives in ``gemmglossary.docs_hooks.template_cache``.
"""

from gemmglossary.docs_hooks.template_cache import on_env  # noqa: F401
