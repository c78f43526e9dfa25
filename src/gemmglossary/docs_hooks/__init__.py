"""The mkdocs hooks, side by side: :mod:`.excerpts` (kernel excerpts checked against the
lock and expanded) and :mod:`.snippets` (runnable snippets published as executed pages).
``docs/.hooks/*.py`` only import them.
"""
