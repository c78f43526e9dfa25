"""Vendoring copies exactly the pinned MLX files out of the installed wheel."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from gemmglossary import vendor
from gemmglossary.paths import kernels_dir


@pytest.fixture
def tmp_root(tmp_path, monkeypatch):
    """A project root holding a copy of the real vendor.toml and nothing vendored."""
    (tmp_path / "kernels").mkdir()
    shutil.copy(kernels_dir() / "vendor.toml", tmp_path / "kernels" / "vendor.toml")
    monkeypatch.setenv("GEMMGLOSSARY_ROOT", str(tmp_path))
    return tmp_path


def _edit_manifest(root: Path, old: str, new: str) -> None:
    path = root / "kernels" / "vendor.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_repo_vendored_files_are_byte_identical_to_the_wheel():
    pins = vendor.load_pins()
    assert vendor.status(pins) == []
    wheel = vendor.installed_kernels_dir()
    for f in pins.files:
        assert f.vendored.read_bytes() == (wheel / f.path).read_bytes(), f.path
        assert hashlib.sha256(f.vendored.read_bytes()).hexdigest() == f.sha256


def test_pins_cover_the_steel_gemm_files():
    paths = {f.path for f in vendor.load_pins().files}
    for required in ("steel/gemm/mma.h", "steel/gemm/loader.h", "steel/gemm/gemm.h",
                     "steel/gemm/kernels/steel_gemm_fused.h", "steel/defines.h"):
        assert required in paths


def test_pins_are_closed_under_include():
    """Every quoted-include of a pinned file is pinned too, or the emulator can't compile it."""
    pins = vendor.load_pins()
    pinned = {f.path for f in pins.files}
    prefix = vendor.MLX_KERNELS_SUBPATH + "/"
    for f in pins.files:
        for line in f.vendored.read_text().splitlines():
            if line.startswith('#include "'):
                target = line.split('"')[1]
                assert target.startswith(prefix), (f.path, target)
                assert target[len(prefix):] in pinned, f"{f.path} includes unpinned {target}"


def test_ensure_materializes_into_a_fresh_root(tmp_root):
    assert len(vendor.status()) == len(vendor.load_pins().files)
    include_root = vendor.ensure()
    assert include_root == tmp_root / "kernels" / "vendor"
    assert vendor.status() == []
    assert (include_root / "mlx/backend/metal/kernels/steel/gemm/mma.h").is_file()


def test_ensure_names_an_edited_copy_and_leaves_it(tmp_root):
    """Builds and test start-up (which call ensure) never discard someone's edit."""
    vendor.ensure()
    mma = tmp_root / "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h"
    mma.write_text("// edited\n")
    with pytest.raises(vendor.VendorError) as err:
        vendor.ensure()
    message = str(err.value)
    assert str(mma) in message and "differs from its pin in vendor.toml" in message
    assert "`gemmglossary vendor` restores the pinned copy" in message
    assert mma.read_text() == "// edited\n"


def test_vendor_command_restores_an_edited_copy_and_keeps_it(tmp_root, capsys):
    vendor.ensure()
    mma = tmp_root / "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h"
    mma.write_text("// edited\n")
    assert vendor.main(["--check"]) == 1
    assert "mma.h: differs from its pin" in capsys.readouterr().out
    assert vendor.main([]) == 0
    out = capsys.readouterr().out
    assert f"restored {mma} from mlx" in out
    kept = next((tmp_root / ".cache" / "vendor-edits").rglob("mma.h"))
    assert kept.read_text() == "// edited\n" and str(kept) in out
    assert vendor.status() == []


def test_ensure_materializes_a_missing_file_only(tmp_root):
    vendor.ensure()
    mma = tmp_root / "kernels/vendor/mlx/backend/metal/kernels/steel/gemm/mma.h"
    mma.unlink()
    vendor.ensure()
    assert vendor.status() == []


def test_hash_mismatch_names_file_expected_and_found(tmp_root):
    real = next(f for f in vendor.load_pins().files if f.path == "steel/gemm/loader.h")
    _edit_manifest(tmp_root, real.sha256, "0" * 64)
    with pytest.raises(vendor.VendorError) as err:
        vendor.ensure()
    message = str(err.value)
    assert "steel/gemm/loader.h" in message
    assert "0" * 64 in message and real.sha256 in message
    assert "pip install -e ." in message


def test_wrong_version_names_expected_and_found(tmp_root):
    _edit_manifest(tmp_root, 'version = "0.32.4"', 'version = "0.1.0"')
    with pytest.raises(vendor.VendorError) as err:
        vendor.ensure()
    assert "pins mlx 0.1.0" in str(err.value)
    assert f"found mlx {vendor.installed_mlx_version()}" in str(err.value)


def test_file_missing_from_wheel(tmp_root):
    _edit_manifest(tmp_root, 'path = "steel/defines.h"', 'path = "steel/no_such_file.h"')
    with pytest.raises(vendor.VendorError, match="no_such_file.h: missing from mlx"):
        vendor.ensure()


def test_bad_manifest_is_reported(tmp_root):
    (tmp_root / "kernels" / "vendor.toml").write_text("[mlx\n")
    with pytest.raises(vendor.VendorError, match="not valid TOML"):
        vendor.load_pins()


def test_permalink_points_at_the_pinned_tag():
    pins = vendor.load_pins()
    assert pins.permalink("steel/gemm/mma.h", 10, 20) == (
        "https://github.com/ml-explore/mlx/blob/v0.32.4/mlx/backend/metal/kernels/steel/gemm/mma.h#L10-L20"
    )


def test_cli_check_reports_and_copies(tmp_root, capsys):
    assert vendor.main(["--check"]) == 1
    assert vendor.main([]) == 0
    assert vendor.main(["--check"]) == 0
    assert "match the pins" in capsys.readouterr().out
