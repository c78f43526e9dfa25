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

The processes a build starts (the snippets' kernels) write to this process's file
descriptors, not to ``sys.stderr``: with ``children=True`` descriptors 1 and 2 go to a file
of their own during the build, and what was written there is added to the stderr returned
(after MkDocs' log, where a subprocess would have interleaved them), so that a test of
what a kernel prints still sees it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import tempfile
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


@contextlib.contextmanager
def _descriptors_to(file):
    """File descriptors 1 and 2 (and so the children started meanwhile) write to *file*."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def build(args: list[str], *, cwd: Path, env: dict[str, str] | None = None,
          children: bool = False) -> subprocess.CompletedProcess:
    """``mkdocs build ARGS`` in *cwd* with *env* (``None``: this process's environment),
    as :func:`subprocess.run` with ``capture_output=True, text=True`` would report it;
    *children*: with what the processes it starts write (see the module's text)."""
    from click.testing import CliRunner
    from mkdocs.__main__ import cli

    argv = ["build", *map(str, args)]
    changes: dict[str, str | None] = {}
    if env is not None:
        changes = {k: None for k in os.environ if k not in env}
        changes.update({k: v for k, v in env.items() if os.environ.get(k) != v})
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as written:
        descriptors = _descriptors_to(written) if children else contextlib.nullcontext()
        with _mkdocs_state_kept(), contextlib.chdir(cwd), descriptors:
            result = CliRunner().invoke(cli, argv, env=changes, catch_exceptions=True)
        written.seek(0)
        printed = written.read()
    stderr = result.stderr
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
        code = 1
    stderr += printed
    return subprocess.CompletedProcess([sys.executable, "-m", "mkdocs", *argv], code, result.stdout, stderr)
