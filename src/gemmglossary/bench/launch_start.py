"""``bench emulator``'s launch-start table: the CPU one launch of a tiny kernel costs, its
workers spawned (the default) or forked, from a process that holds little memory and from
one that holds some hundred megabytes more (a test session, a notebook with large arrays).

A fork copies the caller's page tables, and each page either side then writes takes a
fault, so its cost grows with what the caller holds; a spawned worker starts from
``exec`` (emulator/workers.py). Each row runs in a fresh Python process of its own, so
that the memory held is what the row says and nothing else of this process counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

METHODS = ("spawn", "fork")
HELD_MB = (0, 300)
LAUNCHES = 60

#: run in the fresh process: compile once, warm up, hold `held` MB more of small objects (as a Python
#: heap holds them: pages a fork must copy), then time `launches` launches of the kernel on 2 workers
_PROBE = r"""
import json, os, sys, time
import numpy as np
from gemmglossary.emulator import load_kernel
held, launches = int(sys.argv[1]), int(sys.argv[2])
k = load_kernel('''kernel void twice(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  a[i] = a[i] * 2.0f;
}''', "twice")
a = np.ones(256, np.float32)
launch = lambda: k(a, threads=256, threads_per_threadgroup=64, workers=2)
launch()
ballast = [bytes(1000) for _ in range(held * 1000)]  # held MB, as a Python heap holds it: small objects
t0, w0 = os.times(), time.perf_counter()
for _ in range(launches):
    launch()
t1, w1 = os.times(), time.perf_counter()
print(json.dumps({"caller": (t1.user + t1.system - t0.user - t0.system) / launches,
                  "workers": (t1.children_user + t1.children_system - t0.children_user - t0.children_system) / launches,
                  "wall": (w1 - w0) / launches}))
"""


def measure(methods=METHODS, held_mb=HELD_MB, launches: int = LAUNCHES) -> list[tuple[str, int, float, float, float]]:
    """(start method, MB held, caller CPU s, workers' CPU s, wall s), per launch."""
    rows = []
    for held in held_mb:
        for method in methods:
            env = dict(os.environ, GEMMGLOSSARY_EMULATOR_START=method)
            r = subprocess.run([sys.executable, "-c", _PROBE, str(held), str(launches)], env=env,
                               capture_output=True, text=True, timeout=600)
            if r.returncode:
                raise RuntimeError(f"the launch-start probe ({method}, {held} MB) failed:\n{r.stderr[-3000:]}")
            got = json.loads(r.stdout.strip().splitlines()[-1])
            rows.append((method, held, got["caller"], got["workers"], got["wall"]))
    return rows
