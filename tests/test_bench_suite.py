"""``gemmglossary bench suite`` on a tiny project of its own: it runs the committed tests of a
clean clone (not what is only in the working tree), and its numbers are the run's."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from gemmglossary.bench import suite

import git_repo  # tests/, on sys.path as the rootdir conftest's folder

BURN = textwrap.dedent("""\
    import time

    def test_burns_a_while():
        end = time.process_time() + {cpu}
        while time.process_time() < end:
            pass
        time.sleep({sleep})
""")


def _project(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return git_repo.commit_all(root)


def test_the_committed_suite_is_run_and_timed(tmp_path):
    root = _project(tmp_path / "p", {"tests/test_a.py": BURN.format(cpu=0.6, sleep=0.3),
                                     "tests/test_b.py": BURN.format(cpu=0.1, sleep=0.6)})
    (root / "tests" / "test_uncommitted.py").write_text("def test_fails():\n    assert False\n")
    run = suite.run_suite(root, ["-q", "-p", "no:cacheprovider"])
    assert run.returncode == 0 and "2 passed" in run.summary, run.summary  # not the uncommitted one
    assert run.wall >= 0.9 + 0.7  # both files' sleep and burn, one after the other
    if run.cpu.source == "/proc/stat":
        assert run.cpu.busy >= 0.7  # (the machine's: at least what the tests burned)
        assert run.cpu.busy + run.cpu.idle + run.cpu.iowait <= run.wall * run.cores * 1.2 + 1
    assert run.suite_cpu >= 0.7  # the suite's own: at least what its tests burned
    if run.cpu.source == "/proc/stat" and run.tree.source == "cgroup cpuacct":
        assert run.suite_cpu <= run.cpu.busy + 0.5  # and part of the machine's
    assert any(name.startswith("python") and seconds >= 0.3 for name, seconds in run.tree.by_program.items())
    spans = {s.file: s for s in run.spans}
    assert set(spans) == {"tests/test_a.py", "tests/test_b.py"}
    assert spans["tests/test_a.py"].seconds >= 0.9 and spans["tests/test_b.py"].seconds >= 0.7
    assert {s.worker for s in run.spans} == {"main"}
    out = io.StringIO()
    suite.report(run, target=10.0, out=out)
    text = out.getvalue()
    assert f"{run.wall / 10.0:.2f}× the target of 10 s" in text
    assert "tests/test_a.py" in text.split("longest test files")[1]
    assert f"{run.suite_cpu:.1f} s" in text.split("CPU of the suite")[1].splitlines()[0]


ORPHAN = textwrap.dedent("""\
    import subprocess, sys

    BURN = "import time\\nend = time.process_time() + 1.0\\nwhile time.process_time() < end: pass"

    def test_leaves_a_process_burning():
        # its own session, never waited for: as chromium outlives the driver that started it
        subprocess.Popen([sys.executable, "-c", BURN], start_new_session=True)
""")


def test_the_suite_cpu_counts_what_its_tests_leave_running(tmp_path):
    root = _project(tmp_path / "p", {"tests/test_a.py": ORPHAN})
    run = suite.run_suite(root, ["-q", "-p", "no:cacheprovider"])
    assert run.returncode == 0, run.summary
    if run.tree.source != "cgroup cpuacct":
        pytest.skip(f"no cgroup of its own here ({run.tree.source}): getrusage cannot see a process nobody waits for")
    assert run.suite_cpu >= 1.0  # the orphan's second, though pytest ended before it


def test_each_process_is_counted_under_its_program():
    from gemmglossary.bench.process_cpu import program

    assert program("cc1plus", ["/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "-quiet"]).startswith("g++")
    assert program("chromium", ["/usr/lib/chromium/chromium", "--type=renderer"]) == "chromium"
    # (the headless shell's comm is cut to 15 characters by the kernel)
    assert program("chromium-headle", ["/usr/lib/chromium/chromium-headless-shell", "--type=renderer"]) == "chromium"
    assert program("python3", ["python3", "-m", "ipykernel_launcher", "-f", "k.json"]) == "ipykernel (snippets)"
    assert program("python3", ["python3", "-m", "mkdocs", "build"]) == "mkdocs build"
    assert program("python3", ["python3", "-m", "pytest"]).startswith("python")
    # the emulator's spawned workers (the comm is the executable's name, cut to 15 characters)
    assert program("worker-c1fb97a3", ["/home/u/.cache/gemmglossary/emulator/worker-c1fb97a3d0e4f5a6", "k.so"]) \
        == "emulator workers (kernel launches)"


def test_test_processes_record_and_the_xdist_controller_does_not(tmp_path):
    pytest.importorskip("xdist")
    root = _project(tmp_path / "p", {"tests/test_a.py": BURN.format(cpu=0.05, sleep=0.5),
                                     "tests/test_b.py": BURN.format(cpu=0.05, sleep=0.5)})
    run = suite.run_suite(root, ["-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile"])
    assert run.returncode == 0, run.summary
    assert sorted(s.worker for s in run.spans) == ["gw0", "gw1"]  # one record per test, from its worker


def test_a_failing_suite_shows_its_output_and_exits_1(tmp_path):
    root = _project(tmp_path / "p", {"tests/test_a.py": "def test_fails():\n    assert 1 == 2\n"})
    out = io.StringIO()
    run = suite.run_suite(root, ["-q", "-p", "no:cacheprovider"], out=out)
    assert run.returncode == 1 and "1 failed" in run.summary
    assert "assert 1 == 2" in out.getvalue()


def test_a_folder_that_is_no_git_checkout_is_refused(tmp_path):
    with pytest.raises(suite.BenchError, match="is not a git checkout"):
        suite.run_suite(tmp_path, [])


def test_it_unsets_what_ci_unsets():
    """bench suite runs the tests in CI's environment: the variables .ci/run unsets are
    the ones it leaves out."""
    import shlex

    from gemmglossary import paths

    lines = (paths.project_root() / ".ci" / "run").read_text().splitlines()
    unset = [shlex.split(line)[1:] for line in lines if line.startswith("unset ")]
    assert unset and sorted(v for names in unset for v in names) == sorted(suite.CI_UNSETS), unset
