"""Measured figures in the plugin: roofline.measure(), min_efficiency, faster than the
bound, the summary, JSON and pytest-xdist (pytester runs).

The verdicts asserted here cannot turn on noise: a pure-Python loop is orders of magnitude
slower than any memory roof (efficiency ~1%, asserted >= 50%), and the "faster than the
bound" cases use a made-up chip whose 1 MB/s memory makes any real run look impossible.
"""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from wrapped import matcher, ours_too_wide, unwrap

from pytest_roofline import hardware
from pytest_roofline.measuring import calibration

pytest_plugins = ("pytester",)

#: Other plugins of this environment stay out of the inner runs (as in test_plugin.py).
ISOLATE = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark")


def plugin_args() -> list[str]:
    """Load the plugin by module when the package is importable but not installed."""
    installed = any(ep.value == "pytest_roofline.plugin.hooks"
                    for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "pytest_roofline.plugin.hooks"]

SLOW_SPEC = """\
name: slowchip
default_dtype: fp64
vector_fallback: matrix
sources: {made-up: "a chip slower than anything real, for tests"}
memory: {capacity: 80 GB, bandwidth: 1 MB/s, source: made-up}
matrix: {fp64: 1 GFLOP/s, source: made-up}
onchip:
  - {name: L2, capacity: 1 MiB, source: made-up}
"""

TESTS = """
import numpy as np
import pytest
from pytest_roofline import ops

N = 20000
ADD = ops.elementwise(N, inputs=2, outputs=1, dtype="fp64")

def python_add(a, b):
    return [x + y for x, y in zip(a, b)]

@pytest.mark.roofline(hw="host", min_efficiency=0.5, workload=ADD)
def test_slow_loop(roofline):
    roofline.measure(python_add, [1.0] * N, [2.0] * N)

@pytest.mark.roofline(hw="host", workload=ADD)
def test_slow_loop_reported_only(roofline):
    m = roofline.measure(python_add, [1.0] * N, [2.0] * N)
    assert m.time > 0 and roofline.result().efficiency < 0.5

@pytest.mark.roofline(hw="slowchip", workload=ADD)
def test_faster_reported(roofline):
    a, b, c = np.ones(N), np.ones(N), np.empty(N)
    roofline.measure(np.add, a, b, out=c)

@pytest.mark.roofline(hw="slowchip", workload=ADD, min_efficiency=0.1)
def test_faster_asserted(roofline):
    a, b, c = np.ones(N), np.ones(N), np.empty(N)
    roofline.measure(np.add, a, b, out=c)

@pytest.mark.roofline(hw="host", workload=ADD, min_efficiency=0.5)
def test_never_measured(roofline):
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, host_cache: Path) -> pytest.Pytester:
    pytester.makefile(".yaml", slowchip=SLOW_SPEC)
    pytester.makeini("[pytest]\nroofline_specs = slowchip.yaml\n")
    pytester.makepyfile(test_kernels=TESTS)
    return pytester


def _records(path: Path) -> dict[str, dict[str, object]]:
    report = json.loads(path.read_text())
    return {r["nodeid"].split("::")[1]: r for r in report["results"]}


def test_min_efficiency_and_faster_than_the_bound(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess(*plugin_args(), *ISOLATE, "--roofline-json=r.json")
    result.assert_outcomes(passed=2, failed=3)
    out = result.stdout.str()
    # the Python loop: both times in the failure line (wrapped: read with its continuations)
    result.stdout.fnmatch_lines([
        "roofline: expected efficiency >= 50% on host (fp64), but measured *"])
    line = next(x for x in unwrap(result.outlines)
                if x.startswith("roofline: expected efficiency >= 50%"))
    assert "against a roofline bound of" in line and "of the roof" in line
    # faster than the bound: named, both explanations, the working set against the caches
    faster_line = next(x for x in unwrap(result.outlines)
                       if "is faster than the roofline bound" in x)
    assert "overcounted, or data in a cache" in faster_line and "fits in L2" in faster_line
    assert "docs/measure.md: Faster than the bound" in faster_line
    assert "needs a measurement on host" in out
    records = _records(suite.path / "r.json")
    reported = records["test_slow_loop_reported_only"]
    assert reported["outcome"] == "report" and reported["efficiency"] < 0.5  # type: ignore[operator]
    assert reported["measured_s"] > 0 and "measured_spread" in reported  # type: ignore[operator]
    from pytest_roofline.measuring import probe

    if probe.busy_seconds() is not None:  # the other processes' use, measured beside it
        assert reported["measured_other_cores"] >= 0  # type: ignore[operator]
    faster = records["test_faster_reported"]
    assert faster["outcome"] == "report" and faster["measured_note"] == "faster-than-bound"
    assert "efficiency" not in records["test_never_measured"]
    # a Python loop keeps one core busy: on a calibration with per-thread roofs (more than
    # one core), it is set against the 1-thread memory roof, and the lines say so
    if len(hardware.get_hardware("host").memory_by_threads) > 1:
        assert reported["roof_threads"] == 1
        assert "(1-thread memory roof)" in line
    # the summary: measured columns, % of roof, and the headroom ranking
    # the faster test with its figure (about 5 us against 480 ms: ~1e+05x, the figure
    # moving with the machine's load), never 100%
    assert "% roof" in out and "Headroom" in out
    assert re.search(r"\b\de\+0[3-6]x!", out), out
    assert not ours_too_wide(result.outlines)  # failures and summary in 80 columns


def test_calibrated_on_first_use_with_a_progress_line(
        suite: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quick = calibration.calibrate

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(hardware, "CATALOG", hardware.Catalog())
    monkeypatch.setattr(calibration, "calibrate",
                        lambda device, **kw: quick(device, quick=True))
    result = suite.runpytest_inprocess(*plugin_args(), *ISOLATE, "-k", "reported_only")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pytest-roofline: calibrating host (cpu) on first use*",
                                 "*pytest-roofline: calibrated host in *"])
    assert not ours_too_wide(result.outlines)  # the progress lines wrap to 80 columns


def test_roofline_hw_option_accepts_host(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_opt="""
        def test_declared(roofline):
            roofline.add(flops=1e6, bytes=1e6)
    """)
    result = suite.runpytest_inprocess(*plugin_args(), *ISOLATE, "--roofline-hw=host",
                                       "test_opt.py")
    result.assert_outcomes(passed=1)


def test_measured_results_cross_xdist(suite: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = suite.runpytest_inprocess(*plugin_args(), *ISOLATE, "-p", "xdist", "-n", "2",
                                       "--roofline-json=r.json")
    result.assert_outcomes(passed=2, failed=3)
    records = _records(suite.path / "r.json")
    assert records["test_slow_loop_reported_only"]["efficiency"] < 0.5  # type: ignore[operator]
    assert records["test_faster_reported"]["measured_note"] == "faster-than-bound"
    assert "% roof" in result.stdout.str()


def test_a_measurement_against_a_chip_this_machine_is_not_fails_saying_why(
        pytester: pytest.Pytester) -> None:
    """No efficiency of this CPU against an H100 it is not: the test fails, naming why, and
    its record carries no efficiency."""
    pytester.makepyfile(test_foreign="""
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", workload=ops.reduction(1 << 16, dtype="fp64"))
def test_on_the_wrong_chip(roofline):
    roofline.measure(sum, range(1000))
""")
    result = pytester.runpytest_inprocess(*plugin_args(), *ISOLATE, "--roofline-json=r.json")
    result.assert_outcomes(failed=1)
    matcher(result).fnmatch_lines(["*a measurement against h100-sxm is refused: the call was "
                                   "timed on this machine*, not on h100-sxm: use hw=\"host\" "
                                   "or \"cuda:N\" (docs/measure.md, In tests)*"])
    assert "% of the roof" not in result.stdout.str()
    # the test keeps its row in the reports: an error, with the reason and no figures
    record = _records(pytester.path / "r.json")["test_on_the_wrong_chip"]
    assert record["outcome"] == "error" and record.get("efficiency") is None
    assert "is refused" in str(record["message"])


def test_how_a_gpu_call_was_timed_reaches_the_record_and_the_summary(
        pytester: pytest.Pytester) -> None:
    # A Measurement as the GPU timer returns it (method, notes), handed to the test the way
    # pytest-benchmark's rounds are: the record carries both, the summary counts them.
    pytester.makefile(".yaml", slowchip=SLOW_SPEC)
    pytester.makeini("[pytest]\nroofline_specs = slowchip.yaml\n")
    pytester.makepyfile(test_gpu="""
        import pytest
        from pytest_roofline import ops
        from pytest_roofline.measuring.timing import Measurement

        THROTTLED = ("the GPU throttled: SM clock 1575 MHz of 1980 MHz after the timed "
                     "calls; its time is not the chip's full speed")

        @pytest.mark.roofline(hw="slowchip", workload=ops.elementwise(10, dtype="fp64"))
        def test_timed(roofline):
            m = Measurement(time=2.0, spread=0.01, best=1.9, samples=(1.9, 2.0, 2.1),
                            method="cuda-events, L2 flushed", notes=(THROTTLED,))
            roofline.take_measurement(m, by="roofline.measure median")
    """)
    result = pytester.runpytest_inprocess(*plugin_args(), *ISOLATE, "--roofline-json=r.json")
    result.assert_outcomes(passed=1)
    record = _records(pytester.path / "r.json")["test_timed"]
    assert record["measured_method"] == "cuda-events, L2 flushed"
    assert record["measured_notes"] == [
        "the GPU throttled: SM clock 1575 MHz of 1980 MHz after the timed calls; its time "
        "is not the chip's full speed"]
    result.stdout.fnmatch_lines([
        "timed on the GPU: cuda-events, L2 flushed (1 test)",
        "read with care: the GPU throttled (1 test); the notes in full: measured_notes in",
        "    the JSON report"])
