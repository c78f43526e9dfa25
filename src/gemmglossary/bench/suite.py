"""``gemmglossary bench suite``: how long the whole test suite takes from a clean clone, and
why: the wall time against the target, the CPU it used, and the longest test files.

CI runs ``pytest`` on a clean clone with empty caches (.ci/run). This bench does the same
for the project's committed HEAD (``git clone``: uncommitted changes are not measured),
with an empty HOME and cache folder, so every kernel is compiled and every snippet
executed as in CI. It reuses the installed dependencies instead of making a venv: the
clone's ``src`` goes first on PYTHONPATH, so the clone's own code is what runs.

The suite is bound by CPU (both cores are busy for almost all of it), so the time a
machine's cores allow it is ``CPU seconds / cores``: the bench prints that floor beside the
wall time. The CPU is the suite's own, every process it started and nobody else's
(:mod:`.process_cpu`: a cgroup of its own where the kernel lets us make one), with where it
went by program; the machine's (``/proc/stat``) is printed beside it, and what is left of
that is other people's load, which slows the wall time but not the CPU. The same code has
used 7 to 10 CPU-minutes here, day to day, so compare runs made back to back.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .process_cpu import SAMPLE_PERIOD, ProcessTreeCPU

#: The suite's target on a machine with two cores, in seconds (issue #10).
TARGET_SECONDS = 180.0
#: The variables .ci/run unsets before the tests (this machine sets them; a user's Python
#: writes bytecode and buffers a piped stdout). tests/test_bench_suite.py checks the two agree.
CI_UNSETS = ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")
#: Read by the timeline plugin (gemmglossary.bench.suite_timeline) in each test process.
TIMELINE_ENV = "GEMMGLOSSARY_BENCH_TIMELINE"


#: pytest's last line: "1527 passed, 62 skipped, 12 warnings in 354.89s (0:05:54)", "no tests ran in 0.01s"
_SUMMARY = re.compile(r"(\b\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed)|no tests ran)\b.* in [\d.]+s")


class BenchError(Exception):
    """The bench could not run (not a git checkout, git missing...)."""


@dataclass
class MachineCPU:
    """Busy, idle and iowait seconds of the whole machine between start() and stop()."""

    busy: float = 0.0
    idle: float = 0.0
    iowait: float = 0.0
    source: str = "/proc/stat"
    _first: list | None = field(default=None, repr=False)

    @staticmethod
    def _read() -> list[int] | None:
        try:
            with open("/proc/stat", encoding="ascii") as f:
                fields = f.readline().split()
        except OSError:
            return None
        return [int(v) for v in fields[1:]]

    def start(self) -> None:
        self._first = self._read()

    def stop(self, children_cpu: float) -> None:
        last = self._read()
        if self._first is None or last is None:
            # no /proc (macOS): the test processes' own CPU, which misses what they left
            # running (chromium outlives the Playwright driver that started it)
            self.busy, self.source = children_cpu, "getrusage (children only)"
            return
        tick = os.sysconf("SC_CLK_TCK")
        d = [b - a for a, b in zip(self._first, last)]
        self.idle, self.iowait = d[3] / tick, d[4] / tick
        self.busy = (sum(d) - d[3] - d[4]) / tick


@dataclass
class FileSpan:
    file: str
    worker: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class SuiteRun:
    returncode: int
    wall: float
    cpu: MachineCPU
    cores: int
    summary: str
    spans: list[FileSpan]
    tree: ProcessTreeCPU = field(default_factory=ProcessTreeCPU)

    @property
    def suite_cpu(self) -> float:
        return self.tree.busy

    @property
    def floor(self) -> float:
        """The wall time the suite's CPU seconds need on this machine's cores, at best."""
        return self.suite_cpu / self.cores


def clone(root: Path, into: Path) -> Path:
    """A clean clone of `root`'s HEAD (what CI runs), in `into`."""
    dest = into / "clone"
    try:
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(root), str(dest)],
                       check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise BenchError("git not found: bench suite measures a clean clone of the project") from None
    except subprocess.CalledProcessError as exc:
        raise BenchError(f"git clone {root} failed: {exc.stderr.strip()}") from None
    return dest


def run_suite(root: Path, pytest_args: list[str], *, warm_home: bool = False, out=sys.stdout) -> SuiteRun:
    """Run ``pytest pytest_args`` on a clean clone of `root`, its output printed to `out` as
    it comes; the run's numbers."""
    if not (root / ".git").exists():
        raise BenchError(f"{root} is not a git checkout: bench suite measures a clean clone of its HEAD")
    with tempfile.TemporaryDirectory(prefix="gemmglossary-bench-suite-") as tmp:
        tmp = Path(tmp)
        checkout = clone(root, tmp)
        timeline = tmp / "timeline"
        timeline.mkdir()
        # as in CI: none of pytest's variables (PYTEST_ADDOPTS, or an outer xdist worker's),
        # the project's own defaults, and Python's as a user has them (CI_UNSETS)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PYTEST_") and k not in ("GEMMGLOSSARY_ROOT", "GEMMGLOSSARY_CACHE_DIR", *CI_UNSETS)}
        if not warm_home:
            home = tmp / "home"
            home.mkdir()
            env["HOME"] = str(home)
            env.pop("XDG_CACHE_HOME", None)
        env["PYTHONPATH"] = os.pathsep.join([str(checkout / "src"), *filter(None, [env.get("PYTHONPATH")])])
        env[TIMELINE_ENV] = str(timeline)
        args = [sys.executable, "-m", "pytest", "-p", "gemmglossary.bench.suite_timeline", *pytest_args]
        cpu, tree = MachineCPU(), ProcessTreeCPU()
        before = os.times()
        cpu.start()
        tree.start()
        t0 = time.monotonic()
        proc = subprocess.Popen(args, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, preexec_fn=tree.join)
        summary = ""
        for line in proc.stdout:  # pytest's output as it comes, whole: a failure is all there
            print(line, end="", file=out, flush=True)
            if _SUMMARY.search(line):
                summary = line.strip(" =\n")
        returncode = proc.wait()
        wall = time.monotonic() - t0
        after = os.times()
        children = after.children_user + after.children_system - before.children_user - before.children_system
        cpu.stop(children)
        tree.stop(children)
        return SuiteRun(returncode, wall, cpu, os.cpu_count() or 1, summary, read_spans(timeline), tree)


def read_spans(folder: Path) -> list[FileSpan]:
    """Each test file's span on each test process, from the timeline plugin's records."""
    spans: dict[tuple[str, str], FileSpan] = {}
    for path in folder.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            key = (r["worker"], r["nodeid"].split("::")[0])
            span = spans.get(key)
            if span is None:
                spans[key] = FileSpan(key[1], key[0], r["start"], r["end"])
            else:
                span.start, span.end = min(span.start, r["start"]), max(span.end, r["end"])
    return sorted(spans.values(), key=lambda s: -s.seconds)


def report(run: SuiteRun, target: float = TARGET_SECONDS, top: int = 12, out=sys.stdout) -> None:
    cpu = run.cpu
    print(f"pytest: {run.summary or 'no summary line'} (exit {run.returncode})", file=out)
    print(f"{'wall':<28}{run.wall:>9.1f} s   {run.wall / target:.2f}× the target of {target:.0f} s", file=out)
    tree = run.tree
    print(f"{'CPU of the suite':<28}{run.suite_cpu:>9.1f} s   ({tree.source}; "
          f"{run.suite_cpu / run.wall / run.cores:.0%} of {run.cores} cores)", file=out)
    print(f"{'CPU / cores (the floor)':<28}{run.floor:>9.1f} s   {run.floor / target:.2f}× the target", file=out)
    print(f"{'CPU of the machine':<28}{cpu.busy:>9.1f} s   ({cpu.source}; "
          f"{cpu.busy / run.wall / run.cores:.0%} busy)", file=out)
    if cpu.source == "/proc/stat":
        others = max(0.0, cpu.busy - run.suite_cpu) if tree.source == "cgroup cpuacct" else None
        if others is not None:
            print(f"{'  of it, other load':<28}{others:>9.1f} s   (what else ran meanwhile: it slows the wall "
                  "time, not the suite's CPU)", file=out)
        print(f"{'idle, iowait':<28}{cpu.idle:>9.1f} s, {cpu.iowait:.1f} s (core-seconds)", file=out)
    if tree.by_program:
        sampled = sum(tree.by_program.values())
        print(f"\nthe suite's CPU by program (sampled every {SAMPLE_PERIOD:g} s from /proc):", file=out)
        for name, seconds in tree.by_program.items():
            print(f"{seconds:>8.1f} s  {name}", file=out)
        if tree.source == "cgroup cpuacct":
            print(f"{max(0.0, run.suite_cpu - sampled):>8.1f} s  unsampled (processes shorter than a period)",
                  file=out)
    if tree.leftovers:
        print(f"{tree.leftovers} processes of the suite were still running after it ended", file=out)
    if run.spans:
        t0 = min(s.start for s in run.spans)
        print("\nlongest test files (seconds on one test process, from its first test to its last):", file=out)
        for s in run.spans[:top]:
            print(f"{s.seconds:>8.1f} s  {s.worker:<5} {s.start - t0:>6.0f}–{s.end - t0:<6.0f} {s.file}", file=out)


def _seconds(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def register(sub) -> None:
    from ..cli import subparser

    p = subparser(sub, "suite", help="the whole test suite from a clean clone: wall time, CPU, the longest files",
                  description="Run pytest on a clean clone of HEAD with empty caches, as CI does, and print\n"
                              f"its wall time against the target ({TARGET_SECONDS:.0f} s), the CPU it used, the\n"
                              "floor that CPU sets on this machine's cores, and the longest test files.\n"
                              "Arguments after -- go to pytest.")
    p.add_argument("--warm", action="store_true", help="keep HOME (and its caches) instead of an empty one")
    p.add_argument("--target", type=_seconds, default=TARGET_SECONDS, help="seconds (default: %(default)s)")
    p.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    p.set_defaults(func=_run)


def _run(a) -> int:
    from ..cli import UsageError
    from ..paths import project_root

    try:
        run = run_suite(project_root(), a.pytest_args, warm_home=a.warm)
    except BenchError as exc:
        raise UsageError(f"gemmglossary bench suite: {exc}") from None
    report(run, a.target)
    return 0 if run.returncode == 0 else 1
