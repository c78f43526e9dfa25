"""Which kernels warn, recorded by the coverage run and listed on the emulator page (#32, 6).

The list is the tests' own: the emulator records every PortabilityWarning a test of the
coverage run meets (kernel, kind, site), the report keeps the distinct ones, and the
``emulator.warnings`` fact renders them. The first tests check the record and the rendering
on made-up data; the last reads the report of the current sources (a coverage run when there
is none), so it checks what the page will show.
"""

from __future__ import annotations

import json

import pytest

from gemmglossary import paths
from gemmglossary.coverage import collect, mode, warnings_record
from gemmglossary.docs_hooks import facts
from gemmglossary.emulator.errors import PortabilityWarning, with_facts

GEMV = "kernels/vendor/mlx/backend/metal/kernels/gemv.h"


def _warning(kernel: str, kind: str, file: str, line: int) -> PortabilityWarning:
    return with_facts(PortabilityWarning(f"kernel '{kernel}': something not promised"),
                      {"kind": kind, "site": f"{file}:{line}"})


def test_a_warning_is_recorded_only_in_a_coverage_run(tmp_path, monkeypatch):
    root = paths.project_root()
    monkeypatch.delenv(mode.ENV, raising=False)
    warnings_record.record(_warning("k", "divergent-barrier", str(root / GEMV), 350), "tests/mlx/test_x.py::t")
    assert not (tmp_path / warnings_record.FOLDER).exists()
    monkeypatch.setenv(mode.ENV, str(tmp_path))
    for test in ("tests/mlx/test_b.py::t", "tests/mlx/test_a.py::t"):
        warnings_record.record(_warning("gemv_t_x", "divergent-barrier", str(root / GEMV), 350), test)
    warnings_record.record(_warning("gemv_y", "barrier-without-memory-order", str(root / GEMV), 219), "tests/mlx/a")
    # a line a killed process left half written is skipped
    with open(next((tmp_path / warnings_record.FOLDER).glob("*.jsonl")), "a") as f:
        f.write('{"kernel": "half')
    got = warnings_record.collected(tmp_path, root)
    assert got == [
        {"kernel": "gemv_t_x", "kind": "divergent-barrier", "file": GEMV, "line": 350, "test": "tests/mlx/test_a.py::t"},
        {"kernel": "gemv_y", "kind": "barrier-without-memory-order", "file": GEMV, "line": 219, "test": "tests/mlx/a"},
    ]


def test_an_oob_read_allowed_by_warn_has_its_kind(tmp_path, monkeypatch):
    monkeypatch.setenv(mode.ENV, str(tmp_path))
    w = PortabilityWarning("kernel 'k': read outside a buffer (the reads returned 0): out-of-bounds read of 'x'")
    warnings_record.record(w, "tests/mlx/t")
    line = next((tmp_path / warnings_record.FOLDER).glob("*.jsonl")).read_text()
    assert json.loads(line)["kind"] == "oob-read"


def test_the_library_s_findings_are_told_apart(tmp_path, monkeypatch):
    monkeypatch.setenv(mode.ENV, str(tmp_path))
    for text in ("simd_shuffle_down at x.h:3: lane 1 of simdgroup 0 reads lane 2, which is not active",
                 "x.h:4 fills the left cooperative tensor of the matmul2d run at y.h:5 element by element",
                 "something else the library found"):
        warnings_record.record(with_facts(PortabilityWarning(f"kernel 'k': {text}"), {"kind": "library"}), "t")
    got = [json.loads(line)["kind"] for line in next((tmp_path / warnings_record.FOLDER).glob("*.jsonl")).read_text().splitlines()]
    assert got == ["inactive-lane-read", "tensor-layout", "library"]


def test_every_kind_of_warning_the_runtime_gives_has_words_on_the_page():
    """The list names what a kernel relies on in words (facts.WARNING_KINDS), never a kind's
    bare name: every kind the emulator's runtime and library give a finding has them, or is
    an error's (facts.ERROR_KINDS)."""
    import re

    from gemmglossary.emulator import build

    sources = list(build.RUNTIME_SRC.parent.glob("*.cpp")) + list(build.SHIM_DIR.rglob("*.h"))
    given = {m.group(1) for p in sources for m in re.finditer(r'add\("kind", "([a-z-]+)"\)', p.read_text())}
    given |= set(warnings_record.LIBRARY_KINDS) | {"oob-read"}
    assert len(given) > 5, sources  # the scan finds the runtime's kinds
    unnamed = given - set(facts.WARNING_KINDS) - facts.ERROR_KINDS
    assert not unnamed, f"kinds with no words for the emulator page (facts.WARNING_KINDS): {sorted(unnamed)}"


def test_the_fact_lists_vendored_sites_of_the_mlx_tests_with_upstream_links(monkeypatch):
    report = {"warnings": [
        {"kernel": "gemv_t_b", "kind": "divergent-barrier", "file": GEMV, "line": 350, "test": "tests/mlx/test_gemv.py::t"},
        {"kernel": "gemv_t_a", "kind": "divergent-barrier", "file": GEMV, "line": 350, "test": "tests/mlx/test_gemv.py::u"},
        {"kernel": "mine", "kind": "returned-before-barrier", "file": "kernels/gemv.metal", "line": 5,
         "test": "tests/mlx/test_gemv.py::v"},  # a first-party kernel: not MLX's
        {"kernel": "broken", "kind": "uninitialized-read", "file": GEMV, "line": 1,
         "test": "tests/snippets/test_snippet_runs.py::t"},  # a snippet's "Break it": not the family tests
    ]}
    monkeypatch.setattr(collect, "current", lambda **_: report)
    monkeypatch.setattr(collect, "available", lambda root=None: True)
    out = facts.evaluate("emulator.warnings")
    tag = facts.mm.MLX_TAG
    assert out == (f"- a barrier that live lanes of a simdgroup skip, at [`gemv.h`, line 350]"
                   f"(https://github.com/ml-explore/mlx/blob/{tag}/mlx/backend/metal/kernels/gemv.h#L350): "
                   "`gemv_t_a`, `gemv_t_b`")


def test_without_a_report_the_page_says_the_list_was_not_measured(monkeypatch):
    monkeypatch.setattr(collect, "current", lambda **_: None)
    monkeypatch.setattr(collect, "available", lambda root=None: True)
    assert "not measured yet" in facts.evaluate("emulator.warnings")
    monkeypatch.setenv("GEMMGLOSSARY_SITE_COVERAGE", "off")
    assert "GEMMGLOSSARY_SITE_COVERAGE=off" in facts.evaluate("emulator.warnings")


@pytest.fixture(scope="module")
def report():
    return collect.current(log=print)


def test_the_run_records_the_mlx_kernels_the_pages_name(report):
    """The kernels docs/emulator.md and glossary/gemv.md describe are in the tests' record:
    gemv_t's lanes skipping the K loop's barrier, gemv's mem_none barrier between a write and
    another thread's read, and the NAX GEMM's layout-dependent tensor fill."""
    kinds = {(w["kind"], w["file"].rsplit("/", 1)[-1]) for w in report["warnings"] if w["test"].startswith("tests/mlx/")}
    assert ("divergent-barrier", "gemv.h") in kinds
    assert ("barrier-without-memory-order", "gemv.h") in kinds
    assert ("returned-before-barrier", "gemv.h") in kinds
    assert ("tensor-layout", "nax.h") in kinds, sorted(kinds)
