"""Kernel excerpts quoted by the docs, and the lock that keeps them from drifting.

A page quotes a line range of a kernel file with a fenced ``metal`` block whose only
content is an excerpt line (``--8<-- "kernels/x.metal:31:52"``, pymdownx.snippets'
syntax; the hook expands it, pymdownx.snippets is not used).

- :mod:`.blocks` finds those blocks (and stray excerpt lines) in a page;
- :mod:`.lock` reads and writes ``excerpts.lock.json`` (page, file, range, sha256);
- :mod:`.check` compares pages, files and lock and reports precise problems;
- :mod:`.update` re-anchors moved excerpts and rewrites the lock, through
  :mod:`.transaction` (pages and lock written together or not at all);
- :mod:`.render` expands a block into titled, line-numbered, annotated code;
- the mkdocs hook that uses them (check, expand, publish first-party kernels) is
  :mod:`gemmglossary.docs_hooks.excerpts`;
- :mod:`.cli` is ``gemmglossary excerpts check|update``.
"""
