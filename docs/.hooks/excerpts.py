"""mkdocs hook: what the kernel excerpts need from MkDocs itself.

Checking and expanding excerpts is the Markdown extension gemmglossary.docs_hooks.excerpts
(listed under markdown_extensions, so Zensical runs it too). This hook materializes the
pinned MLX files, reports every page's excerpt problems at once and publishes the quoted
kernels: see ``gemmglossary.docs_hooks.excerpts_hook``.
"""

from gemmglossary.docs_hooks.excerpts_hook import on_config, on_files  # noqa: F401
