"""A pytest plugin for ``gemmglossary bench suite``: each test's start and end, one JSON
line per test, in a file per test process under the folder ``$GEMMGLOSSARY_BENCH_TIMELINE``
names (nothing without it). Loaded with ``-p gemmglossary.bench.suite_timeline``."""

from __future__ import annotations

import json
import os
import time

from .suite import TIMELINE_ENV
from .. import settings

_started: dict[str, float] = {}
_out = None
_recording = True


def pytest_configure(config):
    # pytest-xdist's controller sees every test's report too, as it arrives from a worker:
    # only the processes that run the tests record them
    global _recording
    _recording = hasattr(config, "workerinput") or config.getoption("dist", "no") == "no"


def _file():
    global _out
    if _out is None:
        folder = settings.value(TIMELINE_ENV)
        if folder is None:
            return None
        _out = open(folder / f"{os.getpid()}.jsonl", "a", encoding="utf-8", buffering=1)
    return _out


def pytest_runtest_logstart(nodeid, location):
    if _recording:
        _started[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid, location):
    out = _file()
    start = _started.pop(nodeid, None)
    if out is None or start is None:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out.write(json.dumps({"nodeid": nodeid, "worker": worker, "start": start, "end": time.time()}) + "\n")
