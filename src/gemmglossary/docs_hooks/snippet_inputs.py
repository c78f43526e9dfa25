"""What a runnable snippet's output depends on, besides its own text.

A snippet page is re-executed only when one of its inputs changes, so the inputs are
read from the snippet's source, conservatively:

- **kernels**: every ``kernels/*.metal`` file it names (``"tiled_gemm.metal"``,
  ``KERNELS["tiled_gemm"]``, ``"kernels/x.metal"``); every kernel when it builds a
  kernel name it cannot be read from (an f-string ending in ``.metal``) or lists the
  folder (``kernels_dir``); and ``kernels/vendor.toml`` when one of those kernels has a
  quoted ``#include`` (the vendored MLX files are checked against its hashes);
- **tooling**: every ``gemmglossary`` module it imports, followed through the imports of
  those modules (function-level imports too), with the data files of each imported
  subpackage (the emulator's shim headers and C++ runtime).

``tests/snippets`` runs every snippet with an audit hook and checks that each file it
actually opened, compiled or imported is among these inputs.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path, PurePosixPath

PACKAGE = "gemmglossary"


def _strings(tree: ast.AST) -> tuple[set[str], bool]:
    """String constants of the tree, and whether an f-string builds a ``.metal`` name."""
    found, built = set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            if any(".metal" in p for p in parts) and any(isinstance(v, ast.FormattedValue) for v in node.values):
                built = True
    return found, built


def kernels_used(snippet: Path, root: Path) -> list[Path]:
    """The kernel files (and the vendor manifest) a snippet reads."""
    text = snippet.read_text(encoding="utf-8")
    tree = ast.parse(text, str(snippet))
    strings, built = _strings(tree)
    folder = root / "kernels"
    available = {p.name: p for p in folder.glob("*.metal")}
    if built or "kernels_dir" in text:
        used = set(available.values())
    else:
        used = set()
        for s in strings:
            name = PurePosixPath(s).name
            if name in available:
                used.add(available[name])
            elif f"{s}.metal" in available:
                used.add(available[f"{s}.metal"])
    out = sorted(used)
    manifest = folder / "vendor.toml"
    if manifest.is_file() and any('#include "' in p.read_text(encoding="utf-8") for p in out):
        out.append(manifest)
    return out


def _module_file(package_dir: Path, name: str) -> Path | None:
    base = package_dir.joinpath(*name.split(".")[1:])
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}  # `from pkg import module`
    return {n for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")}


# Every snippet's key walks the same modules: each is parsed once per version of its text.
@functools.lru_cache(maxsize=512)
def _module_imports(file: str, mtime_ns: int, size: int, module: str) -> frozenset[str]:
    tree = ast.parse(Path(file).read_text(encoding="utf-8"), file)
    return frozenset(_imported_names(tree, module, Path(file).name == "__init__.py"))


def modules_used(snippet: Path, package_dir: Path) -> list[Path]:
    """The package's files the snippet imports, transitively, with the data files of
    each imported subpackage."""
    pending = _imported_names(ast.parse(snippet.read_text(encoding="utf-8")), "__main__", False)
    seen: dict[str, Path] = {}
    while pending:
        name = pending.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
            sub = ".".join(parts[:i])
            if sub in seen:
                continue
            file = _module_file(package_dir, sub)
            if file is None:
                continue
            seen[sub] = file
            st = file.stat()
            pending |= _module_imports(str(file), st.st_mtime_ns, st.st_size, sub) - set(seen)
    files = set(seen.values())
    for name, file in seen.items():
        if file.name == "__init__.py" and name != PACKAGE:
            files |= {p for p in file.parent.rglob("*")
                      if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    return sorted(files)


def snippet_inputs(snippet: Path, root: Path, package_dir: Path) -> list[Path]:
    """Every file whose content can change the snippet's output (besides the snippet)."""
    return kernels_used(snippet, root) + modules_used(snippet, package_dir)
