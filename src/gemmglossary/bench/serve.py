"""``gemmglossary bench serve``: the author's loop, timed as a new user meets it.

On a clean clone of HEAD with an empty HOME (as ``bench suite``: nothing downloaded,
executed or compiled yet; the installed dependencies reused, the clone's ``src`` first on
PYTHONPATH), ``mkdocs serve`` is started and timed:

1. **first page**: until the server answers its home page (the README's first command,
   after the install);
2. **page edit**: a sentence appended to a page, until the served page shows it;
3. **snippet edit**: a line printing a marker added to a snippet, until its served page
   shows the marker, beside how long that snippet's execution took (the server's log
   says, "executed snippets/NAME.py in S s"): the target is that plus the page edit's.

The CPU is the server's own, every process it started (:mod:`.process_cpu`), so other
people's load on a shared machine slows the times printed but not the CPU.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .process_cpu import ProcessTreeCPU
from .suite import BenchError, clone

#: Targets in seconds on a 2-core machine (issue #37).
FIRST_PAGE_TARGET = 60.0
EDIT_TARGET = 3.0
#: How long each step may take before the bench gives up.
STEP_TIMEOUT = 1200.0
EDITED_PAGE = "docs/kernels.md"
EDITED_SNIPPET = "barriers"


@dataclass
class ServeRun:
    first_page: float | None = None
    first_page_cpu: float | None = None
    all_snippets: float | None = None
    page_edit: float | None = None
    snippet_edit: float | None = None
    snippet_run: float | None = None
    cpu: ProcessTreeCPU = field(default_factory=ProcessTreeCPU)
    log: list[str] = field(default_factory=list)
    problem: str = ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return None


def _wait_for(what, timeout: float, alive) -> float | None:
    """Seconds until `what()` is true (polled), None if the server died or time ran out."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if what():
            return time.monotonic() - t0
        if not alive():
            return None
        time.sleep(0.1)
    return None


def run_serve(root: Path, *, page: str = EDITED_PAGE, snippet: str = EDITED_SNIPPET,
              warm_home: bool = False, out=sys.stdout) -> ServeRun:
    if not (root / ".git").exists():
        raise BenchError(f"{root} is not a git checkout: bench serve measures a clean clone of its HEAD")
    run = ServeRun()
    with tempfile.TemporaryDirectory(prefix="gemmglossary-bench-serve-") as tmp:
        tmp = Path(tmp)
        checkout = clone(root, tmp)
        if not (checkout / page).is_file() or not (checkout / "snippets" / f"{snippet}.py").is_file():
            raise BenchError(f"the clone has no {page} or snippets/{snippet}.py to edit")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PYTEST_") and k not in ("GEMMGLOSSARY_ROOT", "GEMMGLOSSARY_CACHE_DIR")}
        if not warm_home:
            (tmp / "home").mkdir()
            env["HOME"] = str(tmp / "home")
            env.pop("XDG_CACHE_HOME", None)
        env["PYTHONPATH"] = os.pathsep.join([str(checkout / "src"), *filter(None, [env.get("PYTHONPATH")])])
        env["GEMMGLOSSARY_ROOT"] = str(checkout)  # (what the clone's own package would find)
        env.setdefault("MPLBACKEND", "Agg")
        env["NO_MKDOCS_2_WARNING"] = "1"
        port = _free_port()
        base = f"http://127.0.0.1:{port}/"
        args = [sys.executable, "-m", "mkdocs", "serve", "-a", f"127.0.0.1:{port}"]
        run.cpu.start()
        proc = subprocess.Popen(args, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, preexec_fn=run.cpu.join, start_new_session=True)
        ran = re.compile(rf"executed snippets/{re.escape(snippet)}\.py in ([\d.]+) s")

        def read_log():
            for line in proc.stdout:
                run.log.append(line.rstrip("\n"))
                m = ran.search(line)
                if m:
                    run.snippet_run = float(m.group(1))
        reader = threading.Thread(target=read_log, daemon=True)
        reader.start()
        alive = lambda: proc.poll() is None  # noqa: E731
        try:
            run.first_page = _wait_for(lambda: _get(base) is not None, STEP_TIMEOUT, alive)
            run.first_page_cpu = _tree_seconds(run.cpu)
            if run.first_page is None:
                run.problem = "the server never served its first page"
                return run
            print(f"first page after {run.first_page:.1f} s", file=out, flush=True)
            # let the first build's background work (the snippets) end: an edit is timed alone
            names = sorted(p.stem for p in (checkout / "snippets").glob("*.py") if not p.name.startswith("_"))
            run.all_snippets = _wait_for(lambda: all("Being executed" not in (_get(base + f"snippets/{n}/") or
                                                                             "Being executed") for n in names),
                                         STEP_TIMEOUT, alive)
            # and the figures it left to draw (its log says when they are)
            _wait_for(lambda: not any("figures in the background" in ln for ln in run.log)
                      or any(ln.rstrip().endswith("figures") and "drew" in ln or "drawing the figures" in ln
                             for ln in run.log), STEP_TIMEOUT, alive)
            if run.all_snippets is not None:
                run.all_snippets += run.first_page
                print(f"every snippet page after {run.all_snippets:.1f} s", file=out, flush=True)
            time.sleep(3.0)
            run.page_edit = _edit(checkout / page, base + _url_of(page), alive,
                                  lambda m: f"\n\nA sentence the bench added ({m}).\n")
            run.snippet_run = None
            run.snippet_edit = _edit(checkout / "snippets" / f"{snippet}.py", base + f"snippets/{snippet}/", alive,
                                     lambda m: f"\n\n# %%\nprint({m!r})\n")
            if run.page_edit is None or run.snippet_edit is None:
                run.problem = "an edit never showed"
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            reader.join(timeout=5)
            after = os.times()
            run.cpu.stop(after.children_user + after.children_system)
    return run


def _tree_seconds(cpu: ProcessTreeCPU) -> float | None:
    group = cpu._group
    if group is None:
        return None
    try:
        return int((group / "cpuacct.usage").read_text()) / 1e9
    except OSError:
        return None


def _url_of(page: str) -> str:
    rel = page.removeprefix("docs/").removesuffix(".md")
    return "" if rel == "index" else rel + "/"


def _edit(path: Path, url: str, alive, addition) -> float | None:
    marker = f"bench-marker-{time.monotonic_ns()}"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + addition(marker), encoding="utf-8")
    return _wait_for(lambda: marker in (_get(url) or ""), STEP_TIMEOUT, alive)


def report(run: ServeRun, out=sys.stdout) -> bool:
    def row(label, seconds, target, note=""):
        if seconds is None:
            print(f"{label:<28}{'—':>9}     did not happen {note}", file=out)
            return False
        print(f"{label:<28}{seconds:>9.1f} s   target {target:.1f} s: "
              f"{'met' if seconds <= target else 'missed'}{note}", file=out)
        return seconds <= target

    ok = row("first page (fresh clone)", run.first_page, FIRST_PAGE_TARGET)
    if run.first_page_cpu is not None:
        print(f"{'  CPU until then':<28}{run.first_page_cpu:>9.1f} s   (the server's processes, cgroup cpuacct)",
              file=out)
    if run.all_snippets is not None:
        print(f"{'  every snippet page':<28}{run.all_snippets:>9.1f} s   (executed in the background meanwhile)",
              file=out)
    ok &= row("page edit", run.page_edit, EDIT_TARGET)
    snippet_target = (run.snippet_run or 0.0) + EDIT_TARGET
    note = f" (its run: {run.snippet_run:.1f} s + {EDIT_TARGET:g})" if run.snippet_run is not None else \
        " (its run was not logged)"
    ok &= row("snippet edit", run.snippet_edit, snippet_target, note)
    print(f"{'CPU of the server, in all':<28}{run.cpu.busy:>9.1f} s   ({run.cpu.source})", file=out)
    if run.problem:
        print(f"problem: {run.problem}; the server's last lines:", file=out)
        for line in run.log[-30:]:
            print(f"  {line}", file=out)
    return ok and not run.problem


def register(sub) -> None:
    from ..cli import subparser

    p = subparser(sub, "serve", help="mkdocs serve on a clean clone: the first page, a page edit, a snippet edit",
                  description="Start mkdocs serve on a clean clone of HEAD with an empty HOME and time its\n"
                              f"first page (target {FIRST_PAGE_TARGET:.0f} s), then a page edit (target "
                              f"{EDIT_TARGET:.0f} s) and a snippet\nedit (target: the snippet's run plus "
                              f"{EDIT_TARGET:.0f} s). Exit 1 when a target is missed.")
    p.add_argument("--warm", action="store_true", help="keep HOME (and its caches) instead of an empty one")
    p.add_argument("--page", default=EDITED_PAGE, help="the page to edit (default: %(default)s)")
    p.add_argument("--snippet", default=EDITED_SNIPPET, help="the snippet to edit (default: %(default)s)")
    p.set_defaults(func=_run)


def _run(a) -> int:
    from ..cli import UsageError
    from ..paths import project_root

    try:
        run = run_serve(project_root(), page=a.page, snippet=a.snippet, warm_home=a.warm)
    except BenchError as exc:
        raise UsageError(f"gemmglossary bench serve: {exc}") from None
    return 0 if report(run) else 1
