"""pytest plugin: the same kernel test on the Apple GPU on a Mac and on the emulator elsewhere.

Installed with gemmglossary (the ``pytest11`` entry point ``gemmglossary``), and off unless
asked: without ``--metal-emulator`` (or ``metal_emulator = strict|lenient`` in the pytest
configuration) its hooks do nothing and its fixture refuses to run. When on:

* every ``gg.metal_kernel`` and ``gg.load_kernel`` of the run uses one backend: the Apple
  GPU where there is a suitable one, the CPU emulator elsewhere (``--metal-backend`` or the
  ``metal_backend`` setting forces ``metal`` or ``emulator``), and the report's header says
  which, and why;
* the ``metal_backend`` fixture gives that backend's name (``"metal"`` or ``"emulator"``),
  for a test that checks what only one of them can show;
* in strict mode (the default once on; ``--metal-lenient`` or ``metal_emulator = lenient``
  turns it off) what the emulator reports as a :class:`~gemmglossary.emulator.PortabilityWarning`,
  behaviour the Metal specification does not promise, fails the test: a kernel launch raises
  :class:`~gemmglossary.emulator.PortabilityError` (the emulator's strict mode), and any
  other PortabilityWarning is raised as an error. ``@pytest.mark.metal_lenient`` keeps them
  warnings in one test. On the GPU nothing reports them: strict mode is the emulator's;
* ``--metal-device-races`` (or ``metal_device_races = true``) checks device memory for races
  as well as threadgroup memory, in a ThreadSanitizer-instrumented build of each kernel
  (several times slower; the emulator's ``device_races=True`` for every launch of the run).

``docs/linux-ci.md`` shows it in use.
"""

from __future__ import annotations

import os

import pytest

MODES = ("off", "strict", "lenient")
BACKEND_CHOICES = ("auto", "metal", "emulator")
STRICT_ENV = "GEMMGLOSSARY_EMULATOR_STRICT"  # read by every emulator launch (emulator/kernel.py)
BACKEND_ENV = "GEMMGLOSSARY_BACKEND"  # read when a kernel is made (runtime/selection.py)
DEVICE_RACES_ENV = "GEMMGLOSSARY_EMULATOR_DEVICE_RACES"  # read by every emulator launch
WARNING = "gemmglossary.emulator.errors.PortabilityWarning"
LENIENT_MARK = "metal_lenient"

_state = pytest.StashKey[dict]()


def pytest_addoption(parser):
    group = parser.getgroup("gemmglossary", "Metal kernels on the Apple GPU or the emulator (gemmglossary)")
    group.addoption("--metal-emulator", action="store_true", default=False, dest="metal_emulator",
                    help="turn gemmglossary's plugin on: kernels run on the Apple GPU on a Mac with one and on "
                         "the CPU emulator elsewhere, and the emulator's PortabilityWarnings fail the test "
                         "(strict mode)")
    group.addoption("--metal-lenient", action="store_true", default=False, dest="metal_lenient",
                    help="with the plugin on: leave the emulator's PortabilityWarnings warnings")
    group.addoption("--metal-backend", default=None, choices=BACKEND_CHOICES, dest="metal_backend",
                    help="with the plugin on: the backend every kernel runs on (default auto: the Apple GPU "
                         "when there is a suitable one, else the emulator)")
    group.addoption("--metal-device-races", action="store_true", default=False, dest="metal_device_races",
                    help="with the plugin on: check device memory for races too (a slower, instrumented build of "
                         "each kernel)")
    parser.addini("metal_emulator", "gemmglossary's plugin: off (default), strict or lenient", default="off")
    parser.addini("metal_device_races", "gemmglossary's plugin: check device memory for races (default false)",
                  type="bool", default=False)
    parser.addini("metal_backend", "gemmglossary's plugin: auto (default), metal or emulator", default="auto")


def _setting(config, option: str, choices: tuple[str, ...], default: str) -> str:
    text = str(config.getini(option) or default).strip().lower()
    if text not in choices:
        raise pytest.UsageError(f"{option} = {text!r} in the pytest configuration: expected one of "
                                f"{', '.join(choices)}")
    return text


def mode(config) -> str:
    """off, strict or lenient, from the command line and the pytest configuration."""
    configured = _setting(config, "metal_emulator", MODES, "off")
    on = config.getoption("metal_emulator") or configured != "off"
    if not on:
        if config.getoption("metal_lenient") or config.getoption("metal_backend") or config.getoption(
                "metal_device_races"):
            raise pytest.UsageError("--metal-lenient, --metal-backend and --metal-device-races need gemmglossary's "
                                    "plugin on: "
                                    "add --metal-emulator (or metal_emulator = strict in the pytest configuration)")
        return "off"
    if config.getoption("metal_lenient"):
        return "lenient"
    return "lenient" if configured == "lenient" else "strict"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{LENIENT_MARK}: with gemmglossary's plugin in strict mode, keep the "
                                       "emulator's PortabilityWarnings warnings in this test")
    chosen = mode(config)
    if chosen == "off":
        return
    requested = config.getoption("metal_backend") or _setting(config, "metal_backend", BACKEND_CHOICES, "auto")
    backend, why = _choose(requested)
    device_races = bool(config.getoption("metal_device_races") or config.getini("metal_device_races"))
    saved = {name: os.environ.get(name) for name in (STRICT_ENV, BACKEND_ENV, DEVICE_RACES_ENV)}
    config.stash[_state] = {"mode": chosen, "backend": backend, "why": why, "saved": saved,
                            "device_races": device_races}
    os.environ[BACKEND_ENV] = backend
    os.environ[STRICT_ENV] = "1" if chosen == "strict" else "0"
    if device_races:
        os.environ[DEVICE_RACES_ENV] = "1"
    if chosen == "strict":
        config.addinivalue_line("filterwarnings", f"error::{WARNING}")


def _choose(requested: str) -> tuple[str, str]:
    """(backend, why) for ``requested``; a forced backend that cannot run here stops the run."""
    from .runtime import selection

    try:
        if requested != "auto":
            return selection.backend(requested), f"--metal-backend {requested}"
        if os.environ.get(BACKEND_ENV, "").strip():
            name = selection.backend()  # checks the variable's value as every kernel would
            return name, f"{BACKEND_ENV}={os.environ[BACKEND_ENV].strip()}"
        return selection.automatic()
    except selection.BackendUnavailable as exc:
        raise pytest.UsageError(f"gemmglossary's plugin: {exc}") from None


def pytest_unconfigure(config):
    state = config.stash.get(_state, None)
    if state is None:
        return
    for name, value in state["saved"].items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_report_header(config):
    state = config.stash.get(_state, None)
    if state is None:
        return None
    where = "the Apple GPU" if state["backend"] == "metal" else "the CPU emulator"
    if state["mode"] == "strict":
        strict = "strict: the emulator's PortabilityWarnings fail the test"
    else:
        strict = "lenient: the emulator's PortabilityWarnings are warnings"
    races = "; device memory is checked for races" if state["device_races"] and state["backend"] == "emulator" else ""
    return f"gemmglossary: Metal kernels run on {where} ({state['why']}); {strict}{races}"


def pytest_collection_modifyitems(config, items):
    state = config.stash.get(_state, None)
    if state is None or state["mode"] != "strict":
        return
    for item in items:
        if item.get_closest_marker(LENIENT_MARK):
            # an item's own filter comes after the configuration's, so it wins
            item.add_marker(pytest.mark.filterwarnings(f"default::{WARNING}"))


@pytest.hookimpl(hookwrapper=True)  # (the old-style wrapper: any pytest a user has since 7)
def pytest_runtest_protocol(item, nextitem):
    state = item.config.stash.get(_state, None)
    lenient_here = state is not None and state["mode"] == "strict" and item.get_closest_marker(LENIENT_MARK)
    if lenient_here:
        os.environ[STRICT_ENV] = "0"
    try:
        yield
    finally:
        if lenient_here:
            os.environ[STRICT_ENV] = "1"


@pytest.fixture
def metal_backend(request) -> str:
    """The backend this run's kernels use: ``"metal"`` (the Apple GPU) or ``"emulator"``."""
    state = request.config.stash.get(_state, None)
    if state is None:
        pytest.fail("the metal_backend fixture is gemmglossary's pytest plugin's, which is off: run pytest with "
                    "--metal-emulator, or set metal_emulator = strict in the pytest configuration", pytrace=False)
    return state["backend"]
