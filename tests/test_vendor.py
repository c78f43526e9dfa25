"""Vendoring takes exactly the pinned files out of the pinned distribution files.

The distribution files (the mlx-cpu wheel, the llama-cpp-python sdist) come from the
package index through pip, into the cache; these tests work on a project root of their own
(a copy of the real vendor.toml, nothing vendored) and, where they damage or empty the
cache, on a cache of their own seeded from the real one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gemmglossary import vendor
from gemmglossary.paths import kernels_dir
from gemmglossary.vendor import archive, distfiles, materialize

MLX_MMA = "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h"
LLAMA_MUL_MM = "kernels/vendor/llama.cpp/ggml/src/ggml-metal/kernels/mul_mm.metal"


@pytest.fixture
def tmp_root(tmp_path, monkeypatch):
    """A project root holding a copy of the real vendor.toml and nothing vendored."""
    root = tmp_path / "root"
    (root / "kernels").mkdir(parents=True)
    shutil.copy(kernels_dir() / "vendor.toml", root / "kernels" / "vendor.toml")
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(root))
    return root


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache of the test's own, holding copies of the real cache's distribution files
    for the sources named (so a test may damage them): ``own_cache("mlx")``."""
    real = {s.key: distfiles.distribution_file(s) for s in vendor.load_pins().sources}
    cache = tmp_path / "cache"
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(cache))

    def seed(*keys: str) -> Path:
        folder = distfiles.downloads_dir()
        folder.mkdir(parents=True, exist_ok=True)
        for key in keys:
            shutil.copy(real[key], folder / real[key].name)
        return folder

    return seed


@pytest.fixture
def offline(monkeypatch):
    """pip with no index and no configuration: every download fails, as without a network."""
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")


def _edit_manifest(root: Path, old: str, new: str) -> None:
    path = root / "kernels" / "vendor.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- the repository's pins

def test_repo_vendored_files_are_the_distribution_files_members():
    pins = vendor.load_pins()
    assert vendor.status(pins) == []
    for source in pins.sources:
        members = archive.read_pinned(source, distfiles.distribution_file(source), list(source.files))
        for f, data in members.items():
            assert f.vendored.read_bytes() == data, f.path
            assert _sha(f.vendored) == f.sha256


def test_the_manifest_pins_mlx_and_llama_cpp_with_one_version_each():
    pins = vendor.load_pins()
    mlx, llama = pins.source("mlx"), pins.source("llama_cpp")
    assert mlx.vendor_root == vendor.MLX_KERNELS_SUBPATH
    assert mlx.rev == f"v{mlx.version}" and mlx.version in mlx.archive
    assert llama.archive == f"llama_cpp_python-{llama.version}.tar.gz"
    assert re.fullmatch(r"[0-9a-f]{40}", llama.rev) and llama.rev_member
    text = (kernels_dir() / "vendor.toml").read_text()
    assert text.count(mlx.version) == 1, "the MLX version is written once ({version} elsewhere)"


def test_pins_are_read_again_when_the_manifest_changes_and_only_then(tmp_path):
    path = tmp_path / "vendor.toml"
    text = (kernels_dir() / "vendor.toml").read_text()
    path.write_text(text)
    first = vendor.load_pins(path)
    assert vendor.load_pins(path) is first  # unchanged: the pins already read
    version = first.mlx.version
    other = version[:-1] + ("1" if version[-1] != "1" else "2")  # same length: same size, maybe same mtime
    path.write_text(text.replace(f'version = "{version}"', f'version = "{other}"', 1))
    assert vendor.load_pins(path).mlx.version == other
    path.write_text("[mlx\n")
    with pytest.raises(vendor.VendorError, match="not valid TOML"):
        vendor.load_pins(path)


def test_the_installed_mlx_is_the_pinned_release():
    """Vendoring does not need mlx, but the tests compare with the installed mlx's own
    behaviour (mx.quantize bit for bit, metal_kernel's generated source): pyproject.toml pins
    the same release as kernels/vendor.toml."""
    import importlib.metadata

    version = vendor.load_pins().mlx.version
    assert importlib.metadata.version("mlx") == version, "run `pip install -e .` (pyproject pins mlx)"
    pyproject = (kernels_dir().parent / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r'"mlx(?:\[cpu\])?==([^;"]+)', pyproject) == [version, version]


MLX_MIRROR = Path("/work/.mirror/ml-explore+mlx/repo")


@pytest.mark.skipif(not MLX_MIRROR.is_dir(), reason="no MLX source mirror here to compare the wheel with")
def test_the_wheel_headers_are_the_tag_s_files():
    """The pages link the tag for lines quoted from the wheel: the two must be the same text."""
    mlx = vendor.load_pins().mlx
    for f in mlx.files:
        upstream = f"{mlx.repository_root}/{f.path}"
        tagged = subprocess.run(["git", "--git-dir", str(MLX_MIRROR), "show", f"{mlx.rev}:{upstream}"],
                                capture_output=True, check=True).stdout
        assert f.vendored.read_bytes() == tagged, f.path


def test_pins_cover_the_steel_gemm_files():
    paths = {f.path for f in vendor.load_pins().mlx.files}
    for required in ("steel/gemm/mma.h", "steel/gemm/loader.h", "steel/gemm/gemm.h",
                     "steel/gemm/kernels/steel_gemm_fused.h", "steel/defines.h"):
        assert required in paths


def test_pins_cover_the_llama_cpp_files_the_site_quotes_or_runs():
    paths = {f.path for f in vendor.load_pins().source("llama_cpp").files}
    metal = "ggml/src/ggml-metal/"
    for name in ("mul_mm.metal", "mul_mv.metal", "softmax.metal", "norm.metal", "binbcast.metal",
                 "common.h", "dequantize.h", "quantize.h"):
        assert metal + "kernels/" + name in paths
    for required in (metal + "ggml-metal-impl.h", metal + "ggml-metal-ops.cpp", metal + "ggml-metal-device.cpp",
                     "ggml/src/ggml-common.h"):
        assert required in paths


def _quoted_includes(path: Path) -> list[str]:
    return re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(encoding="utf-8"), re.M)


def test_mlx_pins_are_closed_under_include():
    """Every quoted include of a pinned file is pinned too, or the emulator can't compile it."""
    mlx = vendor.load_pins().mlx
    pinned = {f.path for f in mlx.files}
    prefix = vendor.MLX_KERNELS_SUBPATH + "/"
    for f in mlx.files:
        for target in _quoted_includes(f.vendored):
            assert target.startswith(prefix), (f.path, target)
            assert target[len(prefix):] in pinned, f"{f.path} includes unpinned {target}"


def test_llama_cpp_kernel_pins_are_closed_under_include():
    """llama.cpp's build compiles its kernels with ggml-metal/ and ggml/src/ on the include
    path (ggml-metal/CMakeLists.txt); every include of a pinned kernel file resolves to a
    pinned file from its own folder or one of those two. (The host .cpp files are read, not
    compiled, and include host headers that are not pinned.)"""
    llama = vendor.load_pins().source("llama_cpp")
    pinned = {f.path for f in llama.files}
    search = ("ggml/src/ggml-metal", "ggml/src")
    for f in llama.files:
        if f.path.endswith(".cpp"):
            continue
        here = f.path.rsplit("/", 1)[0]
        for target in _quoted_includes(f.vendored):
            found = [d for d in (here, *search) if f"{d}/{target}" in pinned]
            assert found, f"{f.path} includes {target}, which no pinned file provides"


def test_llama_cpp_files_keep_upstream_layout():
    root = kernels_dir().parent
    assert (root / LLAMA_MUL_MM).is_file()
    assert (root / "kernels/vendor/llama.cpp/ggml/src/ggml-common.h").is_file()


def test_permalinks_point_at_the_pinned_revisions():
    pins = vendor.load_pins()
    mlx, llama = pins.mlx, pins.source("llama_cpp")
    assert mlx.permalink("steel/gemm/mma.h", 10, 20) == (
        f"https://github.com/ml-explore/mlx/blob/v{mlx.version}/mlx/backend/metal/kernels/steel/gemm/mma.h#L10-L20")
    assert llama.permalink("ggml/src/ggml-metal/kernels/mul_mm.metal", 5, 5) == (
        f"https://github.com/ggml-org/llama.cpp/blob/{llama.rev}/ggml/src/ggml-metal/kernels/mul_mm.metal#L5")
    assert pins.source_of(LLAMA_MUL_MM) is llama and pins.source_of(MLX_MMA) is mlx
    assert llama.label == f"llama.cpp {llama.rev[:7]}" and mlx.label == f"MLX v{mlx.version}"


def test_pip_is_asked_for_exactly_the_pinned_wheel_and_sdist(tmp_path):
    pins = vendor.load_pins()
    wheel = distfiles.pip_args(pins.mlx, tmp_path)
    assert "--only-binary=:all:" in wheel and "--platform=manylinux_2_35_x86_64" in wheel
    assert wheel[-1] == f"mlx-cpu=={pins.mlx.version}" and "--no-deps" in wheel
    sdist = distfiles.pip_args(pins.source("llama_cpp"), tmp_path)
    assert sdist[-1] == "llama-cpp-python==0.3.36"
    # the sdist from source, and nothing else: its build backend comes as a wheel
    assert [a for a in sdist if a.startswith("--no-binary")] == ["--no-binary=llama-cpp-python"]


def test_vendoring_never_imports_mlx(tmp_root):
    """With `import mlx` made impossible, vendoring a fresh root works: the site's pin does
    not depend on which MLX (if any) is installed."""
    code = ("import sys; sys.modules['mlx'] = None\n"
            "from gemmglossary import vendor\n"
            "vendor.ensure(); assert vendor.status() == []\n"
            "assert not any(m == 'mlx' or m.startswith('mlx.') for m in sys.modules if sys.modules[m])\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert run.returncode == 0, run.stderr


# ----------------------------------------------------------------------------- materializing

def test_ensure_materializes_both_sources_into_a_fresh_root(tmp_root):
    assert len(vendor.status()) == len(vendor.load_pins().files)
    include_root = vendor.ensure()
    assert include_root == tmp_root / "kernels" / "vendor"
    assert vendor.status() == []
    assert (tmp_root / MLX_MMA).is_file() and (tmp_root / LLAMA_MUL_MM).is_file()


def test_ensure_materializes_a_missing_file_only(tmp_root):
    vendor.ensure()
    mma = tmp_root / MLX_MMA
    other = tmp_root / "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/loader.h"
    before = other.stat().st_mtime_ns
    mma.unlink()
    vendor.ensure()
    assert vendor.status() == [] and other.stat().st_mtime_ns == before


def test_ensure_names_an_edited_copy_and_leaves_it(tmp_root):
    """Builds and test start-up (which call ensure) never discard someone's edit."""
    vendor.ensure()
    for rel in (MLX_MMA, LLAMA_MUL_MM):
        edited = tmp_root / rel
        edited.write_text("// edited\n")
        with pytest.raises(vendor.VendorError) as err:
            vendor.ensure()
        message = str(err.value)
        assert str(edited) in message and "differs from its pin in vendor.toml" in message
        assert "`gemmglossary vendor` restores the pinned copy" in message
        assert edited.read_text() == "// edited\n"
        assert vendor.check_file(edited).startswith("differs from its pin")
        vendor.restore()


def test_vendor_command_restores_an_edited_copy_and_keeps_it(tmp_root, capsys):
    vendor.ensure()
    mma, mul_mm = tmp_root / MLX_MMA, tmp_root / LLAMA_MUL_MM
    mma.write_text("// edited\n")
    mul_mm.write_text("// edited too\n")
    assert vendor.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "mma.h: differs from its pin" in out and "mul_mm.metal: differs from its pin" in out
    assert vendor.main([]) == 0
    out = capsys.readouterr().out
    assert f"restored {mma} from MLX" in out and f"restored {mul_mm} from llama.cpp" in out
    edits = tmp_root / ".cache" / "vendor-edits"
    kept = next(edits.rglob("mma.h"))
    assert kept.read_text() == "// edited\n" and str(kept) in out
    assert next(edits.rglob("mul_mm.metal")).read_text() == "// edited too\n"
    assert vendor.status() == []


def test_two_restores_in_one_second_keep_both_edited_copies(tmp_root, monkeypatch):
    """Issue #36: the kept copies of two restores within one second went to one folder,
    and the second overwrote the first."""
    monkeypatch.setattr(materialize.time, "strftime", lambda fmt, *a: "20260101-120000")
    vendor.ensure()
    mma = tmp_root / MLX_MMA
    kept = []
    for text in ("// first edit\n", "// second edit\n"):
        mma.write_text(text)
        line = next(t for t in vendor.restore() if t.startswith("restored"))
        kept.append(Path(line.rsplit(" is ", 1)[1]))
    assert kept[0] != kept[1]
    assert [k.read_text() for k in kept] == ["// first edit\n", "// second edit\n"]
    assert sorted(p.name for p in (tmp_root / ".cache" / "vendor-edits").iterdir()) == [
        "20260101-120000", "20260101-120000-2"]


def test_a_pinned_file_whose_hash_differs_in_the_archive_names_both_hashes(tmp_root):
    real = next(f for f in vendor.load_pins().mlx.files if f.path == "steel/gemm/loader.h")
    _edit_manifest(tmp_root, real.sha256, "0" * 64)
    with pytest.raises(vendor.VendorError) as err:
        vendor.ensure()
    message = str(err.value)
    assert "steel/gemm/loader.h" in message and "0" * 64 in message and real.sha256 in message
    assert not (tmp_root / "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/loader.h").exists()


def test_a_pinned_path_missing_from_the_archive_is_named(tmp_root):
    _edit_manifest(tmp_root, 'path = "steel/defines.h"', 'path = "steel/no_such_file.h"')
    with pytest.raises(vendor.VendorError, match=r"steel/no_such_file.h: not in mlx_cpu-.*\.whl"):
        vendor.ensure()


def test_the_llama_cpp_commit_is_checked_in_the_archive(tmp_root):
    llama = vendor.load_pins().source("llama_cpp")
    _edit_manifest(tmp_root, llama.rev, "1" * 40)
    with pytest.raises(vendor.VendorError) as err:
        vendor.ensure()
    assert f"vendors llama.cpp commit {llama.rev}" in str(err.value) and "1" * 40 in str(err.value)
    assert not (tmp_root / LLAMA_MUL_MM).exists()


def test_a_second_read_of_an_archive_reads_it_once_and_another_file_there_again(tmp_path, monkeypatch):
    """read_pinned remembers the last members it read of each archive (a tarball is read
    from its start each time), for as long as the archive is the same file."""
    import zipfile

    path = tmp_path / "d.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.h", "one\n")
    reads = []
    real = archive._read_members
    monkeypatch.setattr(archive, "_read_members", lambda a, names: reads.append(a) or real(a, names))
    assert archive._read_all(path, {"a.h"}) == {"a.h": b"one\n"}
    assert archive._read_all(path, {"a.h"}) == {"a.h": b"one\n"} and len(reads) == 1
    assert archive._read_all(path, {"a.h", "b.h"}) == {"a.h": b"one\n"} and len(reads) == 2  # other names
    new = tmp_path / "new.zip"
    with zipfile.ZipFile(new, "w") as z:
        z.writestr("a.h", "two\n")
    new.replace(path)  # a new download in the old one's place
    assert archive._read_all(path, {"a.h", "b.h"}) == {"a.h": b"two\n"} and len(reads) == 3


# ----------------------------------------------------------------------------- the download cache

def test_a_damaged_cached_distribution_file_is_fetched_again(tmp_root, own_cache):
    folder = own_cache("mlx", "llama_cpp")
    wheel = folder / vendor.load_pins().mlx.archive
    data = wheel.read_bytes()
    wheel.write_bytes(data[: len(data) // 2])  # a partial download
    vendor.ensure()
    assert vendor.status() == []
    assert _sha(wheel) == vendor.load_pins().mlx.archive_sha256


def test_a_cached_file_is_reused_without_the_index(tmp_root, own_cache, offline):
    own_cache("mlx", "llama_cpp")
    vendor.ensure()
    assert vendor.status() == []


def test_offline_with_an_empty_cache_is_an_error_naming_what_to_run(tmp_root, own_cache, offline, capsys):
    with pytest.raises(vendor.VendorError) as err:
        vendor.ensure()
    message = str(err.value)
    mlx = vendor.load_pins().mlx
    assert f"cannot download {mlx.archive}" in message
    assert "Run `gemmglossary vendor` where the package index is reachable" in message
    assert mlx.archive_sha256 in message and str(distfiles.downloads_dir()) in message
    assert vendor.main([]) == 1
    assert "gemmglossary vendor: cannot download" in capsys.readouterr().out
    assert not list(distfiles.downloads_dir().glob("*.whl"))


def test_an_archive_hash_that_differs_from_the_pin_is_refused(tmp_root, own_cache):
    own_cache("llama_cpp")
    mlx = vendor.load_pins().mlx
    _edit_manifest(tmp_root, mlx.archive_sha256, "2" * 64)
    with pytest.raises(vendor.VendorError) as err:
        vendor.ensure()
    assert f"{mlx.archive} from the package index has sha256 {mlx.archive_sha256}" in str(err.value)
    assert "2" * 64 in str(err.value)
    assert not (distfiles.downloads_dir() / mlx.archive).exists()


# ----------------------------------------------------------------------------- the manifest

def test_bad_manifest_is_reported(tmp_root):
    (tmp_root / "kernels" / "vendor.toml").write_text("[mlx\n")
    with pytest.raises(vendor.VendorError, match="not valid TOML"):
        vendor.load_pins()


@pytest.mark.parametrize("old, new, expected", [
    ('archive_sha256 = "', 'archive_sha256 = "x', "is not 64 hex digits"),
    ('vendor_root = "llama.cpp"', 'vendor_root = "../llama.cpp"', "must be a relative path without `..`"),
    ('name = "MLX"\n', "", "[mlx]: missing name"),
    ('rev = "0c1e5', 'rev = "v0.3.36"\n#', "rev must be that commit"),
])
def test_manifest_mistakes_are_named(tmp_root, old, new, expected):
    _edit_manifest(tmp_root, old, new)
    with pytest.raises(vendor.VendorError) as err:
        vendor.load_pins()
    assert expected in str(err.value)


def test_cli_check_reports_and_copies(tmp_root, capsys):
    assert vendor.main(["--check"]) == 1
    assert vendor.main([]) == 0
    assert vendor.main(["--check"]) == 0
    assert "match the pins" in capsys.readouterr().out
