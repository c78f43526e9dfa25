"""Kernel excerpts quoted by the docs, and the lock that keeps them from drifting.

A page quotes a line range of a kernel file with a fenced ``metal`` block whose only
content is a pymdownx.snippets line (``--8<-- "kernels/x.metal:31:52"``).

- :mod:`.blocks` finds those blocks in a page;
- :mod:`.lock` reads and writes ``excerpts.lock.json`` (page, file, range, sha256);
- :mod:`.check` compares pages, files and lock and reports precise problems;
- :mod:`.update` re-anchors moved excerpts and rewrites the lock;
- the mkdocs hook that uses them (check, expand, publish first-party kernels) is
  :mod:`gemmglossary.docs_hooks.excerpts`;
- :mod:`.cli` is ``gemmglossary excerpts check|update``.
"""
