"""The exercise descriptions, skeletons, solutions and pages agree, without running a kernel."""

from __future__ import annotations

import re
import tomllib

import pytest

from gemmglossary import paths
from gemmglossary.excerpts.blocks import find_blocks
from gemmglossary.exercises import spec

from .conftest import EXERCISES, ids

#: The glossary entries of issue #18; each must have at least one exercise.
REQUIRED_ENTRIES = ("cooperative-load", "barriers", "simdgroup-matrix", "register-blocking", "epilogue-fusion",
                    "max-total-threads")


def _rel(path) -> str:
    return str(path.resolve().relative_to(paths.project_root()))


def test_every_required_entry_has_an_exercise():
    practised = {entry for e in EXERCISES for entry in e.entries}
    assert not set(REQUIRED_ENTRIES) - practised


def test_exercises_are_ordered_and_name_real_entries():
    orders = [e.order for e in EXERCISES]
    assert len(set(orders)) == len(orders), "two exercises share an order"
    for e in EXERCISES:
        for entry in e.entries:
            assert (paths.docs_dir() / "glossary" / f"{entry}.md").is_file(), f"{e.name}: no glossary entry {entry}"
        assert e.mistakes, f"{e.name}: list at least one typical mistake ([[mistakes]])"


def _outside_todo(text: str) -> list[str]:
    out, inside = [], False
    for line in text.splitlines():
        if spec.TODO_MARK in line:
            assert not inside, "a TODO(exercise) block inside another"
            inside = True
        elif inside and line.strip() == "// END TODO":
            inside = False
        elif not inside:
            out.append(line)
    assert not inside, "a TODO(exercise) block without its `// END TODO`"
    return out


def _pairs():
    for e in EXERCISES:
        yield e, e.skeleton, e.solution
        if e.body:
            yield e, e.body.skeleton, e.body.solution


@pytest.mark.parametrize("exercise,skeleton,solution", list(_pairs()),
                         ids=lambda v: v.name if isinstance(v, spec.Exercise) else None)
def test_skeleton_is_the_solution_with_parts_cut_out(exercise, skeleton, solution):
    """Outside its TODO(exercise) blocks a skeleton is the solution's lines, in order: it cannot drift."""
    text = skeleton.read_text(encoding="utf-8")
    assert spec.TODO_MARK in text
    wanted = solution.read_text(encoding="utf-8").splitlines()
    at = 0
    for n, line in enumerate(_outside_todo(text), 1):
        try:
            at = wanted.index(line, at) + 1
        except ValueError:
            pytest.fail(f"{_rel(skeleton)}: {line!r} (the {n}th line outside the TODO blocks) is not in "
                        f"{_rel(solution)} after line {at}: skeleton and solution drifted apart")


@pytest.mark.parametrize("exercise", EXERCISES, ids=ids)
def test_page_has_statement_command_and_folded_solution(exercise):
    page = exercise.page
    assert page.is_file(), f"no page docs/exercises/{exercise.name}.md"
    text = page.read_text(encoding="utf-8")
    statement = exercise.statement()
    for part in ("**Compute**", "**Dispatch.**", "**Shapes.**", '??? tip "Hint'):
        assert part in statement, f"docs/exercises/{exercise.name}.md: the statement (before the first ## section) lacks {part}"
    assert f"gemmglossary exercise check {exercise.name}" in text
    assert f"pytest exercises/{exercise.name}" in text
    quoted = {b.file for b in find_blocks(text) if b.file}
    assert _rel(exercise.solution) in quoted, f"the page quotes {_rel(exercise.solution)} through the excerpt lock"
    if exercise.body:
        assert _rel(exercise.body.solution) in quoted
    assert re.search(r'^\?\?\? success "Reference solution', text, re.M), "the solution is folded away"


def test_index_lists_every_exercise_and_the_sidebar_only_the_index():
    """The sidebar is the learning path: it lists the exercises' index, whose table links
    each exercise in order; the pages themselves are built without a sidebar entry
    (mkdocs.yml's not_in_nav), each reached from its index and its entry (tests/browser)."""
    import yaml

    config = yaml.safe_load((paths.project_root() / "mkdocs.yml").read_text(encoding="utf-8"))
    assert {"Exercises": "exercises/index.md"} in config["nav"]
    assert "/exercises/*.md" in config["not_in_nav"].split()
    index = (paths.docs_dir() / "exercises" / "index.md").read_text(encoding="utf-8")
    positions = []
    for e in EXERCISES:
        assert f"exercises/{e.name}.md" not in str(config["nav"]), f"{e.name} is listed in the sidebar"
        positions.append(index.find(f"({e.name}.md)"))
        assert positions[-1] >= 0, f"docs/exercises/index.md does not link {e.name}"
    assert positions == sorted(positions), "the index lists the exercises in their order"
    home = (paths.docs_dir() / "index.md").read_text(encoding="utf-8")
    assert "exercises/index.md" in home


@pytest.fixture
def scratch_tree(tmp_path, monkeypatch):
    """A scratch project root for broken descriptions: their page, and the real kernels."""
    (tmp_path / "docs" / "exercises").mkdir(parents=True)
    (tmp_path / "docs" / "exercises" / "broken.md").write_text("# t\n\nstatement\n")
    (tmp_path / "kernels").symlink_to(paths.kernels_dir())
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(tmp_path))
    return tmp_path


def _write(tmp_path, text: str):
    folder = tmp_path / "broken"
    folder.mkdir(exist_ok=True)
    for name in ("skeleton.metal", "solution.metal"):
        (folder / name).write_text("x")
    (folder / "exercise.toml").write_text(text)
    return folder


BASE = """title = "t"
order = 1
kernel = "k"
skeleton = "skeleton.metal"
solution = "solution.metal"
convention = "matmul_tiled"
cases = [{ M = 1, N = 1, K = 1 }]
"""


@pytest.mark.parametrize("change,key,says", [
    ("", None, None),
    ('convention = "matmul_tiled"', "convention", "first-party kernel"),
    ('skeleton = "skeleton.metal"', "skeleton", "no such file"),
    ("cases = [{ M = 1, N = 1, K = 1 }]", "cases", "missing"),
    ("[check]\nowner = 3", "check.owner", "list of 1 to 3"),
    ("[[mistakes]]\ntitle = 'x'\nreplace = [['a', 'b']]\nexpect = 'boom'", "mistakes[0].expect", "one of"),
    ("[guards]\nZ = 'z < 1'", "guards.Z", "buffer name"),
    ("[constants]\nalpha = 'x'", "constants.alpha", "expected a number"),
])
def test_a_broken_description_names_file_and_key(scratch_tree, change, key, says):
    tmp_path = scratch_tree
    text = BASE
    if change:
        first = change.splitlines()[0]
        if first in BASE:  # replace that line with a broken value
            broken = {"convention": 'convention = "nope"', "skeleton": 'skeleton = "gone.metal"',
                      "cases": ""}[key]
            text = BASE.replace(first, broken)
        else:
            text = BASE + change + "\n"
    folder = _write(tmp_path, text)
    tomllib.loads(text)  # the file itself is valid TOML: the description is what is wrong
    if key is None:
        assert spec.load(folder).kernel == "k"
        return
    with pytest.raises(spec.SpecError) as e:
        spec.load(folder)
    assert "exercise.toml" in str(e.value) and f"{key}:" in str(e.value) and says in str(e.value), str(e.value)
