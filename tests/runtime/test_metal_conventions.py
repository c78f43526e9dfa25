"""metal_conventions.py against the metadata of the pinned PyObjC wheels.

The wheels (pyobjc-framework-Metal and pyobjc-core, the versions pyproject.toml pins)
are downloaded from PyPI with pip at test time into pytest's cache -- they are macOS
wheels, read here as zip files, never installed or imported, and nothing of them is
committed.  Off line the test skips, except in CI, where PyPI is reachable and it must
run.  PyObjC's metadata is a Python file of ``registerMetaDataForSelector`` calls and
strings of enum values; it is parsed with ``ast`` (literals only), not executed.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import metal_conventions as conv
from gemmglossary.paths import project_root

#: metal_conventions kind -> what PyObjC's metadata says for such an argument.
ARG_METADATA = {
    "id": {"type": b"@"},
    "uint": {"type": b"Q"},
    "int": {"type": b"q"},
    "bool": {"type": b"Z"},
    "size": {"type": b"{MTLSize=QQQ}"},
    "error_out": {"type": b"^@", "type_modifier": b"o"},
}
RETURN_METADATA = {
    "id": {"type": b"@"}, "void": {"type": b"v"}, "uint": {"type": b"Q"}, "int": {"type": b"q"},
    "bool": {"type": b"Z"}, "double": {"type": b"d"},
    "pointer": {"type": b"^v", "c_array_of_variable_length": True},
}


def pinned(project: str) -> str:
    text = (project_root() / "pyproject.toml").read_text()
    m = re.search(rf'"{re.escape(project)}==([^;"]+)', text)
    assert m, f"pyproject.toml does not pin {project}"
    return m.group(1).strip()


PROJECTS = ("pyobjc-framework-Metal", "pyobjc-core")


def _wheel(project: str, dest: Path) -> Path | None:
    prefix = project.replace("-", "_").lower() + f"-{pinned(project)}-"
    return next((p for p in dest.glob("*.whl") if p.name.lower().startswith(prefix)), None)


@pytest.fixture(scope="module")
def wheels(request):
    dest = Path(request.config.cache.mkdir("pyobjc-wheels"))
    missing = [p for p in PROJECTS if _wheel(p, dest) is None]
    if missing:  # one pip run for all of them
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--platform", "macosx_11_0_universal2", "--python-version", "3.11", "-d", str(dest),
               *(f"{p}=={pinned(p)}" for p in missing)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or any(_wheel(p, dest) is None for p in missing):
            reason = f"cannot download {missing} from PyPI: {(proc.stderr or proc.stdout).strip()[-300:]}"
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
    return {p: zipfile.ZipFile(_wheel(p, dest)) for p in PROJECTS}


@pytest.fixture(scope="module")
def metadata(wheels):
    text = wheels["pyobjc-framework-Metal"].read("Metal/_metadata.py").decode()
    tree = ast.parse(text)
    selectors: dict[tuple[bytes, bytes], dict] = {}
    functions, enums = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "r" \
                and len(node.args) == 3:
            cls, sel, info = (ast.literal_eval(a) for a in node.args)
            selectors[(cls, sel)] = info
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "functions":
                functions = ast.literal_eval(node.value)
            elif name == "enums":
                for item in ast.literal_eval(node.value).strip("$").split("$"):
                    key, _, value = item.partition("@")
                    enums[key] = value
    assert len(selectors) > 100 and functions and enums, "the metadata file changed shape"
    return selectors, functions, enums


def _normalize(entry: dict) -> dict:
    return {k: (v.encode() if isinstance(v, str) else v) for k, v in entry.items()}


def _expected_arg(kind: str) -> dict:
    if kind.startswith("bytes@"):  # metadata counts self and _cmd: Python argument N is N + 2
        return {"type": b"^v", "type_modifier": b"n", "c_array_length_in_arg": int(kind[6:]) + 2}
    return ARG_METADATA[kind]


def test_protocol_and_class_selectors_match_the_metadata(metadata):
    selectors, _, _ = metadata
    checked = 0
    for sel in conv.SELECTORS:
        if sel.source not in ("protocol", "class"):
            continue
        owner = b"NSObject" if sel.source == "protocol" else sel.receiver.encode()
        info = selectors.get((owner, sel.name.encode()))
        assert info is not None, f"{sel.receiver} {sel.name}: no PyObjC metadata (a typo in the selector?)"
        if sel.source == "protocol":
            assert info.get("required") is True, sel.name
        args = {i: _normalize(a) for i, a in info.get("arguments", {}).items()}
        for i, kind in enumerate(sel.args):
            assert args.get(i + 2) == _expected_arg(kind), \
                f"{sel.name} argument {i + 1}: we assume {kind}, PyObjC says {args.get(i + 2)}"
        assert set(args) <= {i + 2 for i in range(len(sel.args))}, f"{sel.name}: more arguments than we pass"
        if "retval" in info or sel.source == "protocol":
            assert _normalize(info.get("retval", {})) == RETURN_METADATA[sel.returns], \
                f"{sel.name} returns {info.get('retval')}, we assume {sel.returns}"
        checked += 1
    assert checked >= 25


def test_runtime_and_ctypes_selectors_have_no_metadata(metadata):
    """No metadata means PyObjC uses the runtime's type encoding (objects and integers
    here), and that it still cannot bridge the ``const void*`` we send through ctypes.
    If PyObjC starts describing one of these, its convention must be looked at again."""
    selectors, _, _ = metadata
    for sel in conv.SELECTORS:
        if sel.source in ("runtime", "ctypes"):
            for owner in (b"NSObject", sel.receiver.encode()):
                assert (owner, sel.name.encode()) not in selectors, \
                    f"PyObjC now has metadata for {sel.receiver} {sel.name}: re-check its convention"


def test_functions_and_constants_match_the_metadata(metadata):
    _, functions, enums = metadata
    for name, signature in conv.FUNCTIONS.items():
        assert name in functions, f"Metal.{name} is not in PyObjC's metadata"
        assert functions[name][0] == signature, f"Metal.{name}: {functions[name][0]!r}, we assume {signature!r}"
    for name, value in conv.CONSTANTS.items():
        assert name in enums, f"Metal.{name} is not in PyObjC's metadata (a typo?)"
        assert int(enums[name]) == value, f"Metal.{name} is {enums[name]}, we assume {value}"


def test_pyobjc_core_has_what_the_backend_uses(wheels):
    core = wheels["pyobjc-core"]
    init = core.read("objc/__init__.py").decode()
    assert re.search(r"^class autorelease_pool\b", init, re.M), "objc.autorelease_pool is gone"
    (extension,) = [n for n in core.namelist() if re.fullmatch(r"objc/_objc\.cpython-\d+-darwin\.so", n)]
    binary = core.read(extension)
    for name in conv.CORE_NAMES:
        if name != "autorelease_pool":
            assert name.encode() + b"\0" in binary, f"pyobjc-core no longer defines {name}"
