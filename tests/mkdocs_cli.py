"""``mkdocs build`` of a test's small site, run by MkDocs' own command line in this process.

A subprocess ``python -m mkdocs build`` of a one-page site costs about 1.2 CPU-seconds, of
which about 1 is starting Python and importing MkDocs, Material and our extensions (issue
#37); the test process has imported them already. :func:`build` runs the same click
command (``mkdocs.__main__.cli``) with the same arguments, environment and working folder,
and returns what the subprocess would have: the exit status, and the log MkDocs writes to
stderr. An exception that escapes the command is written to that stderr as the interpreter
would write it (``Traceback (most recent call last):`` ...), so that a test that says "no
traceback" still can fail.

What the command changes in this process is put back afterwards: the ``mkdocs`` logger's
handlers, level and propagation, the filters added to the build's logger (MkDocs'
``DuplicateFilter`` would otherwise hide a warning that an earlier build of the same
process printed), the warning filters, the line width of its log (none, as on a pipe), the environment and the working folder.

Builds whose output includes what their own child processes print (the snippets' kernels)
stay subprocesses: the child's stderr is not this process's ``sys.stderr``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import traceback
import warnings
from pathlib import Path


@contextlib.contextmanager
def _mkdocs_state_kept():
    from mkdocs.__main__ import ColorFormatter
    from mkdocs.commands import build as build_module

    logger = logging.getLogger("mkdocs")
    saved = (logger.level, logger.propagate, list(logger.handlers))
    build_filters = list(build_module.log.filters)
    modules = set(sys.modules)
    width = ColorFormatter.text_wrapper.width
    ColorFormatter.text_wrapper.width = 0  # a subprocess writing to a pipe wraps no line
    try:
        with warnings.catch_warnings():
            yield
    finally:
        ColorFormatter.text_wrapper.width = width
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        logger.handlers[:] = saved[2]
        build_module.log.filters[:] = build_filters
        for name in set(sys.modules) - modules:
            if name.endswith(".py"):  # a hook file MkDocs loaded under its path
                del sys.modules[name]


def build(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``mkdocs build ARGS`` in *cwd* with *env* (``None``: this process's environment),
    as :func:`subprocess.run` with ``capture_output=True, text=True`` would report it."""
    from click.testing import CliRunner
    from mkdocs.__main__ import cli

    argv = ["build", *map(str, args)]
    changes: dict[str, str | None] = {}
    if env is not None:
        changes = {k: None for k in os.environ if k not in env}
        changes.update({k: v for k, v in env.items() if os.environ.get(k) != v})
    with _mkdocs_state_kept(), contextlib.chdir(cwd):
        result = CliRunner().invoke(cli, argv, env=changes, catch_exceptions=True)
    stderr = result.stderr
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
        code = 1
    return subprocess.CompletedProcess([sys.executable, "-m", "mkdocs", *argv], code, result.stdout, stderr)
