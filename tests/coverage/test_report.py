"""Excerpt coverage and exemptions from a made-up report (no coverage run)."""

from __future__ import annotations

import pytest

from gemmglossary.coverage import exemptions
from gemmglossary.coverage.excerpts import excerpt_coverage

ENTRY = {"page": "p.md", "file": "kernels/k.metal", "start": 10, "end": 15}
REPORT = {"lines": {"kernels/k.metal": {"10": 4, "11": 0, "13": 7, "15": 0, "20": 0}}}


def test_missing_executed_and_not_executable_lines():
    r = excerpt_coverage(ENTRY, REPORT["lines"]["kernels/k.metal"], {})
    assert r.executed == (10, 13) and r.missing == (11, 15)
    assert r.summary == "2 of 4 lines executed"  # 12 and 14 carry no code: they do not count


def test_an_exempted_line_is_apart_with_its_reason():
    r = excerpt_coverage(ENTRY, REPORT["lines"]["kernels/k.metal"], {15: "Apple only"})
    assert r.missing == (11,) and r.exempt == {15: "Apple only"}
    assert r.summary == "2 of 3 lines executed (1 exempted)"


def write(tmp_path, text):
    (tmp_path / exemptions.FILE_NAME).write_text(text)
    return exemptions.load(tmp_path)


def test_exemptions_are_read_with_ranges(tmp_path):
    table = write(tmp_path, '[[exempt]]\nfile = "kernels/k.metal"\nlines = "11 14-15"\nreason = "why"\n'
                            '[[no_code]]\nfile = "kernels/k.metal"\nlines = "1-9"\nreason = "a comment"\n')
    assert table.lines == {"kernels/k.metal": {11: "why", 14: "why", 15: "why"}}
    assert table.no_code == {("kernels/k.metal", 1, 9): "a comment"}


@pytest.mark.parametrize("text, message", [
    ('[[exempt]]\nfile = "k"\nlines = "3"\n', "exactly the keys"),
    ('[[exempt]]\nfile = "k"\nlines = "3"\nreason = " "\n', "reason is empty"),
    ('[[exempt]]\nfile = "k"\nlines = "x"\nreason = "r"\n', "numbers or ranges"),
    ('[[exempt]]\nfile = "k"\nlines = "5-3"\nreason = "r"\n', "not a range"),
    ('[[exempt]]\nfile = "k"\nlines = "3 3"\nreason = "r"\n', "exempted twice"),
    ('[other]\n', "unknown table"),
    ('[[exempt]\n', "coverage-exemptions.toml"),
    ('[[no_code]]\nfile = "k"\nlines = "1-3 5"\nreason = "r"\n', "one range"),
])
def test_a_bad_exemptions_file_names_the_problem(tmp_path, text, message):
    with pytest.raises(exemptions.ExemptionError, match=message):
        write(tmp_path, text)


@pytest.mark.parametrize("line, why", [(11, None), (13, "executed"), (12, "not an executable line"),
                                       (20, "in no excerpt")])
def test_an_exemption_that_is_no_longer_needed_is_stale(line, why):
    table = exemptions.Exemptions(lines={"kernels/k.metal": {line: "r"}})
    if why is None:
        exemptions.check(table, [ENTRY], REPORT)  # 11 is executable and never ran: needed
    else:
        with pytest.raises(exemptions.ExemptionError, match=why):
            exemptions.check(table, [ENTRY], REPORT)


NO_CODE = {"page": "p.md", "file": "kernels/k.metal", "start": 1, "end": 9}


@pytest.mark.parametrize("start, end, why", [(1, 9, None), (1, 8, "no excerpt has this range"),
                                             (10, 15, "are executable")])
def test_a_no_code_range_must_be_an_excerpt_without_code(start, end, why):
    table = exemptions.Exemptions(no_code={("kernels/k.metal", start, end): "r"})
    entries = [NO_CODE, ENTRY]
    if why is None:
        exemptions.check(table, entries, REPORT)
    else:
        with pytest.raises(exemptions.ExemptionError, match=why):
            exemptions.check(table, entries, REPORT)


def test_an_excerpt_without_code_says_why():
    r = excerpt_coverage(NO_CODE, REPORT["lines"]["kernels/k.metal"], {}, "a comment")
    assert r.executable == 0 and r.summary == "no executable lines" and r.no_code == "a comment"


def test_an_unmeasured_excerpt_says_so():
    r = excerpt_coverage(NO_CODE, REPORT["lines"]["kernels/k.metal"], {}, "", "a metal_kernel body")
    assert r.summary == "line coverage not measured"


def test_one_line_is_singular():
    r = excerpt_coverage({**ENTRY, "end": 10}, REPORT["lines"]["kernels/k.metal"], {})
    assert r.summary == "1 of 1 line executed"
