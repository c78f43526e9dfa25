"""The package's modules import one another one way: no module imports, however indirectly,
a module that imports it back. Every import counts, including those inside functions
(deferring an import hides a circle from Python, not from a reader of the layers), except
those under ``if __name__ == "__main__":``: that block runs when the file is a command
(``python -m``), as a module of its own, ``__main__``, which nothing imports."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "gemmglossary"


def module_graph(package: Path) -> dict[str, set[str]]:
    """Each module of `package` (dotted name) and the package modules it imports."""
    top = package.parent
    files: dict[str, tuple[Path, bool]] = {}
    for f in package.rglob("*.py"):
        parts = list(f.relative_to(top).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        files[".".join(parts[:-1] if is_package else parts)] = (f, is_package)
    graph = {}
    for name, (f, is_package) in files.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        imported = set()
        for node in _outside_main_block(ast.parse(f.read_text(encoding="utf-8"), str(f))):
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module or ""
                # `from pkg import mod` imports the module; `from mod import name`, mod
                imported.update(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names)
        graph[name] = {m for m in imported if m in files and m != name}
    return graph


def _is_main_block(node: ast.AST) -> bool:
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__")


def _outside_main_block(tree: ast.AST):
    """ast.walk, without the module's ``if __name__ == "__main__":`` blocks."""
    pending = [tree]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(child for child in ast.iter_child_nodes(node) if not _is_main_block(child))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle():
    graph = module_graph(PACKAGE)
    assert "gemmglossary.coverage.collect" in graph and "gemmglossary.metal.device" in graph
    assert cycles(graph) == [], "modules that import each other, directly or not (break the circle by " \
                                "moving what both need to a module below them)"


def test_a_circle_is_found_through_a_deferred_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import value\n")
    (pkg / "c.py").write_text("import pkg.a\nvalue = 1\n")
    (pkg / "d.py").write_text("from . import a\n")  # imports into the circle, not part of it
    (pkg / "e.py").write_text("from . import d\nif __name__ == '__main__':\n    from . import f\n")
    (pkg / "f.py").write_text("from . import e\n")  # e's command imports f, e itself does not
    assert cycles(module_graph(pkg)) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
    (pkg / "c.py").write_text("value = 1\n")
    assert cycles(module_graph(pkg)) == []
