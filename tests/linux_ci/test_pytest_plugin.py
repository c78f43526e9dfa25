"""gemmglossary's pytest plugin (src/gemmglossary/pytest_plugin.py), run by pytest's own
``pytester``: inert unless asked, one backend for the run, strict mode failing the test
on what the specification does not promise, and the Apple GPU half as far as it can be
driven without one (the backend choice is replaced; no kernel runs on a GPU here)."""

from __future__ import annotations

import os

import pytest

from gemmglossary import paths, pytest_plugin
from gemmglossary.runtime import mlx_values, selection

pytest_plugins = ["pytester"]

# pytester's in-process runs forget the modules imported during them, and an extension
# module cannot be imported twice in one process (mlx.core aborts it): mlx, when installed,
# is imported before any of them.
mlx_values.mlx_core()

#: This machine's compile cache, read before pytester moves HOME to a new folder (where a
#: cold cache would compile the emulator's runtime again, for every test).
CACHE = paths.cache_dir()

#: A kernel test as a user writes it: its body reads threadgroup memory no thread wrote
#: (undefined on a GPU: a PortabilityWarning on the emulator) unless WRITE is set.
USER_TESTS = '''
import numpy as np
import pytest

import gemmglossary as gg

SOURCE = """
    threadgroup float tile[32];
    uint i = thread_position_in_threadgroup.x;
    if (WRITE) tile[i] = inp[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tile[i] + 1.0f;
"""


def run(write):
    kernel = gg.metal_kernel(name="tile_copy", input_names=["inp"], output_names=["out"],
                             source=SOURCE.replace("WRITE", "true" if write else "false"))
    x = np.arange(32, dtype=np.float32)
    (y,) = kernel(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1),
                  output_shapes=[x.shape], output_dtypes=[np.float32])
    return x, y


def test_correct_kernel():
    x, y = run(write=True)
    np.testing.assert_array_equal(y, x + 1)


def test_reads_unwritten_threadgroup_memory():
    run(write=False)  # its numbers are not checked: only the warning can fail it


@pytest.mark.metal_lenient
def test_lenient_here():
    run(write=False)


def test_backend(metal_backend):
    assert metal_backend == gg.backend()
    print("BACKEND", metal_backend)
'''


@pytest.fixture
def user_project(pytester, monkeypatch):
    """The user's tests in pytester's folder, with this machine's compile cache."""
    monkeypatch.setenv("GEMMGLOSSARY_CACHE_DIR", str(CACHE))
    for name in (pytest_plugin.STRICT_ENV, pytest_plugin.BACKEND_ENV, pytest_plugin.DEVICE_RACES_ENV):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_user_kernels=USER_TESTS)
    return pytester


def run(pytester, *args):
    # -p no:xdist -p no:cacheprovider: the inner run is the user's plain pytest, in this process
    return pytester.runpytest("-p", "no:xdist", "-p", "no:cacheprovider", "-rA", *args)


def ours():
    return {k: os.environ.get(k) for k in (pytest_plugin.STRICT_ENV, pytest_plugin.BACKEND_ENV,
                                           pytest_plugin.DEVICE_RACES_ENV)}


def test_off_unless_asked(user_project):
    before = ours()
    result = run(user_project)
    result.assert_outcomes(passed=3, errors=1, warnings=2)
    result.stdout.fnmatch_lines(["*the metal_backend fixture is gemmglossary's pytest plugin's, which is off*"])
    result.stdout.no_fnmatch_line("gemmglossary: Metal kernels run on*")
    result.stdout.fnmatch_lines(["*PortabilityWarning*"])
    assert ours() == before


def test_strict_by_default_once_on(user_project):
    before = ours()
    result = run(user_project, "--metal-emulator")
    result.assert_outcomes(passed=3, failed=1, warnings=1)
    result.stdout.fnmatch_lines([
        "gemmglossary: Metal kernels run on the CPU emulator (*); strict: the emulator's PortabilityWarnings "
        "fail the test",
        "E *PortabilityError: kernel 'custom_kernel_tile_copy_float_float': (strict mode) * reads threadgroup "
        "memory 'tile[[]31]' at /metal_kernel/custom_kernel_tile_copy_float_float.metal:10 *",
        "*BACKEND emulator*",
        "FAILED test_user_kernels.py::test_reads_unwritten_threadgroup_memory - *",
    ])
    assert ours() == before  # the variables it set for the run are restored


def test_lenient(user_project):
    result = run(user_project, "--metal-emulator", "--metal-lenient")
    result.assert_outcomes(passed=4, warnings=2)
    result.stdout.fnmatch_lines(["*lenient: the emulator's PortabilityWarnings are warnings"])


def test_configured_in_the_ini_file(user_project):
    user_project.makeini("[pytest]\nmetal_emulator = strict\n")
    result = run(user_project)
    result.assert_outcomes(passed=3, failed=1, warnings=1)
    user_project.makeini("[pytest]\nmetal_emulator = lenient\n")
    run(user_project).assert_outcomes(passed=4, warnings=2)
    user_project.makeini("[pytest]\nmetal_emulator = yes\n")
    result = run(user_project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*metal_emulator = 'yes' in the pytest configuration: expected one of off, "
                                 "strict, lenient"])


def test_other_warnings_of_the_emulator_fail_in_strict_mode(user_project):
    """math_mode='fast' warns when the kernel is made, outside any launch."""
    user_project.makepyfile(test_fast='''
import gemmglossary as gg

def test_fast_math():
    gg.metal_kernel(name="k", input_names=["a"], output_names=["b"], source="b[0] = a[0];",
                    compile_options={"math_mode": "fast"})
''')
    result = run(user_project, "--metal-emulator", "test_fast.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*PortabilityWarning: [[]metal_kernel] 'k': math_mode='fast'*"])
    run(user_project, "--metal-emulator", "--metal-lenient", "test_fast.py").assert_outcomes(passed=1, warnings=1)


def test_options_without_the_plugin_on_are_refused(user_project):
    for args in (["--metal-lenient"], ["--metal-backend", "emulator"], ["--metal-device-races"]):
        result = run(user_project, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, args
        result.stderr.fnmatch_lines(["*need gemmglossary's plugin on: add --metal-emulator*"])


def test_device_races_are_checked_when_asked(user_project):
    """Two threads write different values to one element of an output: nothing reports it
    unless --metal-device-races (or metal_device_races in the ini file) asks."""
    user_project.makepyfile(test_race='''
import numpy as np
import gemmglossary as gg

def test_last_writer_wins():
    k = gg.metal_kernel(name="racy", input_names=["a"], output_names=["out"],
                        source="out[0] = a[thread_position_in_grid.x];")
    k(inputs=[np.arange(64, dtype=np.float32)], grid=(64, 1, 1), threadgroup=(32, 1, 1),
      output_shapes=[(1,)], output_dtypes=[np.float32])
''')
    before = ours()
    run(user_project, "--metal-emulator", "test_race.py").assert_outcomes(passed=1)
    result = run(user_project, "--metal-emulator", "--metal-device-races", "test_race.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["gemmglossary: Metal kernels run on the CPU emulator (*); strict*; device memory "
                                 "is checked for races", "*race*out*"])
    assert ours() == before
    user_project.makeini("[pytest]\nmetal_device_races = true\n")
    run(user_project, "--metal-emulator", "test_race.py").assert_outcomes(failed=1)


def test_forcing_the_gpu_where_there_is_none_stops_the_run(user_project, monkeypatch):
    monkeypatch.setattr(selection, "metal_status", lambda: (False, "needs an Apple GPU (Metal); this machine is X"))
    result = run(user_project, "--metal-emulator", "--metal-backend", "metal")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*gemmglossary's plugin: the metal backend was requested but is unavailable: "
                                 "needs an Apple GPU (Metal); this machine is X"])


def test_an_apple_gpu_is_chosen_where_there_is_one(user_project, monkeypatch):
    """The Mac half, as far as it runs here: the automatic choice says metal, so the run's
    kernels are made with GEMMGLOSSARY_BACKEND=metal and the fixture says so. (No kernel
    runs: only the choice is driven, with the automatic choice replaced.)"""
    monkeypatch.setattr(selection, "automatic", lambda: ("metal", "the Metal device Test GPU"))
    user_project.makepyfile(test_gpu='''
import os

def test_where(metal_backend):
    assert metal_backend == "metal"
    assert os.environ["GEMMGLOSSARY_BACKEND"] == "metal"
''')
    result = run(user_project, "--metal-emulator", "test_gpu.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["gemmglossary: Metal kernels run on the Apple GPU (the Metal device Test GPU); "
                                 "strict*"])


def test_the_backend_variable_is_honoured(user_project, monkeypatch):
    monkeypatch.setenv(pytest_plugin.BACKEND_ENV, "emulator")
    result = run(user_project, "--metal-emulator", "-k", "backend")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["gemmglossary: Metal kernels run on the CPU emulator (GEMMGLOSSARY_BACKEND=emulator)*"])


def test_the_entry_point_is_registered():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="pytest11") if e.name == "gemmglossary"]
    assert ep.load() is pytest_plugin
