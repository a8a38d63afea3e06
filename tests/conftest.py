"""Shared set-up of the test suite.

pytester's in-process runs restore ``sys.modules`` afterwards, dropping every module first
imported during the run. The engine is imported lazily, so a module first used inside such a
run would come back as a second copy (with its own ``Workload`` class) in the next one. The
engine and the libraries it loads on demand are therefore imported here, once, up front.
"""

from __future__ import annotations

import os
from pathlib import Path

# Triton kernels run in Triton's interpreter on the CPU runners. The setting must be in the
# environment before triton is first imported: triton.language's own jit functions
# (tl.cdiv and co) are wrapped at that import, the kernels' when they are defined.
os.environ.setdefault("TRITON_INTERPRET", "1")

# The suite's calibrations go to a cache of its own, never the user's: a calibration taken
# while the suite loads both cores would judge the user's later runs. One folder for the
# whole run (pytest-xdist's workers share its run id), so ``host`` is calibrated once.
os.environ["XDG_CACHE_HOME"] = os.path.join(
    __import__("tempfile").gettempdir(),
    f"pytest-roofline-suite-{os.environ.get('PYTEST_XDIST_TESTRUNUID') or os.getpid()}")

import pint  # noqa: F401
import pytest
import yaml  # noqa: F401
from zoo_setup import allow_torchvision_without_extension

import pytest_roofline.engine.analysis
import pytest_roofline.engine.workload
import pytest_roofline.hardware
import pytest_roofline.judging.kernels
import pytest_roofline.judging.mfu
import pytest_roofline.measuring.calibration
import pytest_roofline.measuring.diagnose
import pytest_roofline.measuring.timing
import pytest_roofline.models
import pytest_roofline.ops
import pytest_roofline.profiling.run
import pytest_roofline.profiling.text
import pytest_roofline.profiling.torch.join
import pytest_roofline.report.compare
import pytest_roofline.report.kernels
import pytest_roofline.report.markdown  # noqa: F401

allow_torchvision_without_extension()  # before transformers imports torchvision

_PROFILER_WARM = False


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The suite's cache goes with the run (on the controller, once its workers are done)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        import shutil

        shutil.rmtree(os.environ["XDG_CACHE_HOME"], ignore_errors=True)


@pytest.fixture(autouse=True)
def _warm_torch_profiler(request: pytest.FixtureRequest) -> None:
    """Before a test's first in-process pytester run, where torch is installed: torch's
    profiler and what exporting a trace loads do not survive the second import an inner
    run's module reset brings (the process aborts), so one tiny profile loads them first.
    Tests without pytester, or without torch, pay nothing."""
    global _PROFILER_WARM
    if _PROFILER_WARM or "pytester" not in request.fixturenames:
        return
    _PROFILER_WARM = True
    try:
        import torch.profiler
    except ImportError:
        return
    import tempfile

    with torch.profiler.profile(record_shapes=True) as prof:
        torch.ones(2) + 1
    with tempfile.TemporaryDirectory() as folder:
        prof.export_chrome_trace(os.path.join(folder, "warm.json"))


@pytest.fixture(scope="session")
def quick_host_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder (for XDG_CACHE_HOME) holding a quick calibration of this machine.

    Measured once per test session, in the quick mode (two rounds, small GEMMs): its
    figures are rough, and the tests that use it assert nothing that depends on them
    beyond what a Python loop or a made-up chip makes certain.
    """
    from pytest_roofline.measuring import calibration

    folder = tmp_path_factory.mktemp("xdg-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        spec, _ = calibration.calibrate("cpu", quick=True)
        calibration.save(calibration.cache_path("cpu"), spec)
    return folder


@pytest.fixture
def host_cache(quick_host_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """XDG_CACHE_HOME pointed at the quick calibration, so ``hw="host"`` never measures."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(quick_host_cache))
    return quick_host_cache


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees a terminal of 80 columns (what a CI runner, with no terminal at all,
    gets) unless it sets ``COLUMNS`` itself: wrapped output is the same on every machine.
    Nor does an inner pytest run know it is on CI (``CI``, ``BUILD_NUMBER``): there pytest
    prints its short summary's lines whole, as it does under ``-vv``, which the tests of
    that summary's width would otherwise read only on a CI runner."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("CI", raising=False)
    # Nor does an in-process inner run think it is a pytest-xdist worker when this suite
    # runs under ``-n``: pytest-benchmark reads the variable and disables itself.
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
