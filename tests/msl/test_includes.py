"""What a file includes (asked of the preprocessor) and quoted includes inlined for Metal."""

from __future__ import annotations

import subprocess

import pytest

from gemmglossary import paths
from gemmglossary.emulator.build import compiler
from gemmglossary.msl.includes import IncludeError, included_files, inline_includes


def preprocessed(text: str) -> str:
    """What a C++ preprocessor makes of ``text`` (the inlined source must need no -I)."""
    run = subprocess.run([compiler()[0], "-E", "-P", "-x", "c++", "-"], input=text,
                         capture_output=True, text=True, check=True)
    return run.stdout


def test_included_files_honour_if(tmp_path):
    (tmp_path / "used.h").write_text("int used;\n")
    (tmp_path / "skipped.h").write_text("int skipped;\n")
    (tmp_path / "deep.h").write_text('#include "used.h"\n')
    main = tmp_path / "k.metal"
    main.write_text('#include <metal_stdlib>\n#if 0\n#include "skipped.h"\n#endif\n'
                    '#ifdef WITH_DEEP\n#include "deep.h"\n#endif\n#include "used.h"\n')
    assert included_files(main) == {(tmp_path / "used.h").resolve()}
    assert included_files(main, defines={"WITH_DEEP": 1}) == {
        (tmp_path / "used.h").resolve(), (tmp_path / "deep.h").resolve()}


def test_included_files_of_the_steel_kernel_are_pinned_mlx_headers():
    steel = paths.kernels_dir() / "steel_gemm.metal"
    found = included_files(steel, [paths.vendor_dir()])
    assert found and all(f.is_relative_to(paths.vendor_dir().resolve()) for f in found)
    assert paths.vendor_dir().resolve() / "mlx/backend/metal/kernels/steel/gemm/mma.h" in found


def test_a_missing_include_is_an_error(tmp_path):
    main = tmp_path / "k.metal"
    main.write_text('#include "nowhere.h"\n')
    with pytest.raises(IncludeError, match="nowhere.h"):
        included_files(main)


def test_inline_quoted_includes_with_line_markers(tmp_path):
    inc = tmp_path / "inc"
    (inc / "sub").mkdir(parents=True)
    (inc / "a.h").write_text('#pragma once\n#include "sub/b.h"\nint a();\n')
    (inc / "sub" / "b.h").write_text('#pragma once\nint b();\n')
    src = '#include <metal_stdlib>\n#include "a.h"\n#include "sub/b.h"\n#include "missing.h"\nkernel void k() {}\n'
    out = inline_includes(src, [inc], filename="k.metal")
    lines = out.split("\n")
    assert lines[0] == "#include <metal_stdlib>"  # angle brackets left to the compiler
    assert "#pragma once" not in out
    assert f'#line 1 "{(inc / "a.h").resolve()}"' in lines
    assert '#line 3 "k.metal"' in lines  # back in the main file after a.h
    assert '#include "missing.h"' in lines  # unresolved: the compiler reports it
    assert lines[-2] == "kernel void k() {}"
    # The guards keep one copy of each #pragma once file, as the compiler will.
    body = preprocessed(out.replace("#include <metal_stdlib>", "").replace('#include "missing.h"', ""))
    assert body.count("int b();") == 1 and body.count("int a();") == 1


def test_pragma_once_in_a_skipped_branch_is_still_included_later(tmp_path):
    (tmp_path / "x.h").write_text("#pragma once\nint x();\n")
    src = '#if 0\n#include "x.h"\n#endif\n#include "x.h"\n'
    assert preprocessed(inline_includes(src, [tmp_path])).count("int x();") == 1


def test_include_search_order_prefers_the_including_files_directory(tmp_path):
    (tmp_path / "here").mkdir()
    (tmp_path / "there").mkdir()
    (tmp_path / "here" / "x.h").write_text("int here;\n")
    (tmp_path / "there" / "x.h").write_text("int there;\n")
    out = inline_includes('#include "x.h"\n', [tmp_path / "there"], base_dir=tmp_path / "here")
    assert "int here;" in out and "int there;" not in out


def test_a_cycle_of_pragma_once_files_is_cut_and_any_other_is_an_error(tmp_path):
    (tmp_path / "a.h").write_text('#pragma once\n#include "b.h"\nint a;\n')
    (tmp_path / "b.h").write_text('#pragma once\n#include "a.h"\nint b;\n')
    assert preprocessed(inline_includes('#include "a.h"\n', [tmp_path])).split() == ["int", "b;", "int", "a;"]
    (tmp_path / "c.h").write_text('#include "d.h"\n')
    (tmp_path / "d.h").write_text('#include "c.h"\n')
    with pytest.raises(IncludeError, match="recursive"):
        inline_includes('#include "c.h"\n', [tmp_path])


def test_inlines_the_vendored_steel_gemm_completely():
    steel = paths.kernels_dir() / "steel_gemm.metal"
    out = inline_includes(steel.read_text(), [paths.vendor_dir()], base_dir=steel.parent, filename=str(steel))
    assert [ln for ln in out.split("\n") if ln.strip().startswith('#include "')] == []
    assert "struct BlockLoader" in out
