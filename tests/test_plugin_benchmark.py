"""pytest-benchmark suites under a roofline marker, as kernel teams write them: the
workload is one call whatever the rounds (serial, ``--benchmark-disable``, ``-n 2``), and
the measured time is pytest-benchmark's own median.

Expected figures: ``F.layer_norm`` of a (64, 1024) fp32 tensor with weight and bias is
7 FLOPs an element (ops.vector's layernorm: mean, subtract, square, mean, rsqrt-scale,
weight, bias) = 7 · 65,536 = 458,752 FLOPs; it reads the input (262,144 B), weight and bias
(4,096 B each) and writes the output (262,144 B), plus its mean and rstd (256 B each):
532,992 B (eager torch: one kernel). Under any number of rounds the record must show
exactly these, never a multiple.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_plugin import TOY_SPEC, plugin_args

pytest.importorskip("pytest_benchmark")
torch = pytest.importorskip("torch")
pytest_plugins = ("pytester",)

ISOLATE = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

LN_FLOPS = 7 * 64 * 1024

SUITE = """
import pytest
import torch
import torch.nn.functional as F

X = torch.randn(64, 1024)
W, B = torch.ones(1024), torch.zeros(1024)

@pytest.mark.roofline(hw="toychip", trace=True)
def test_layer_norm(benchmark):
    y = benchmark(F.layer_norm, X, (1024,), W, B)
    assert y.shape == X.shape

@pytest.mark.roofline(hw="toychip", trace=True)
def test_layer_norm_pedantic(benchmark):
    benchmark.extra_info["kernel"] = "layer_norm"
    benchmark.pedantic(F.layer_norm, args=(X, (1024,), W, B), rounds=7, iterations=3)

@pytest.mark.roofline(hw="toychip", trace=True)
def test_measured_too(benchmark, roofline):
    benchmark(F.layer_norm, X, (1024,), W, B)
    roofline.measure(F.layer_norm, X, (1024,), W, B)

def test_plain_benchmark(benchmark):
    benchmark(torch.add, X, X)

@pytest.mark.roofline(hw="host", trace=True)
def test_on_this_machine(benchmark):
    benchmark(F.layer_norm, X, (1024,), W, B)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", toychip=TOY_SPEC)
    pytester.makeini("[pytest]\nroofline_specs = toychip.yaml\n")
    pytester.makepyfile(test_bench=SUITE)
    return pytester


def _records(path: Path) -> dict[str, dict[str, object]]:
    report = json.loads(path.read_text())
    return {r["nodeid"].split("::")[1]: r for r in report["results"]}


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult,
                                                         dict[str, dict[str, object]]]:
    result = pytester.runpytest_subprocess(*plugin_args(), *ISOLATE, "--roofline-json=r.json",
                                           "--roofline-summary=all", *args)
    return result, _records(pytester.path / "r.json")


def test_one_call_whatever_the_rounds_and_the_benchmarks_median(
        suite: pytest.Pytester, host_cache: Path) -> None:
    result, records = _run(suite, "--benchmark-min-rounds=3", "--benchmark-max-time=0.02",
                           "--benchmark-json=bench.json")
    result.assert_outcomes(passed=5)
    bench = {b["name"]: b for b in json.loads((suite.path / "bench.json").read_text())[
        "benchmarks"]}
    for name in ("test_layer_norm", "test_layer_norm_pedantic", "test_on_this_machine"):
        record = records[name]
        assert record["flops"] == LN_FLOPS, (name, record["flops"])
        assert record["measured_by"] == "pytest-benchmark median"
        # the very figure pytest-benchmark reports: nothing timed twice
        assert record["measured_s"] == pytest.approx(bench[name]["stats"]["median"], rel=1e-9)
    assert bench["test_layer_norm"]["stats"]["rounds"] >= 3
    assert bench["test_layer_norm_pedantic"]["stats"]["rounds"] == 7
    # roofline.measure's calls are not traced, and its measurement is the one kept
    measured = records["test_measured_too"]
    assert measured["flops"] == LN_FLOPS and measured["measured_by"] == "roofline.measure median"
    host = records["test_on_this_machine"]  # hw="host": % of this machine's calibrated roof
    assert host["hw"] == "host" and host["efficiency"] > 0
    result.stdout.fnmatch_lines(["measured: pytest-benchmark median (3 tests), roofline.measure "
                                 "median (1 test)"])


def test_the_same_workload_when_disabled_and_under_two_workers(
        suite: pytest.Pytester, host_cache: Path) -> None:
    pytest.importorskip("xdist")
    flops = {}
    for args in (("--benchmark-disable",), ("-n", "2")):
        result, records = _run(suite, *args)
        result.assert_outcomes(passed=5)
        flops[args] = {name: r["flops"] for name, r in records.items()}
        # a disabled benchmark times nothing: no measurement is made up
        assert "measured_by" not in records["test_layer_norm"]
    assert all(f == {"test_layer_norm": LN_FLOPS, "test_layer_norm_pedantic": LN_FLOPS,
                     "test_measured_too": LN_FLOPS, "test_on_this_machine": LN_FLOPS}
               for f in flops.values()), flops


def test_pytest_benchmark_api_the_plugin_watches() -> None:
    """``plugin/benchmark.py`` sees a test's benchmark through pytest-benchmark's public
    fixture class, ``pytest_benchmark.fixture.BenchmarkFixture``, whose ``__call__`` and
    ``pedantic`` run the benchmarked function, patched for a marked test's call only (no
    pytest state is touched: the test receives pytest-benchmark's own fixture). This fails
    when pytest-benchmark moves them."""
    import inspect

    from pytest_benchmark.fixture import BenchmarkFixture

    from pytest_roofline.plugin.benchmark import _CALLS, Benchmarks

    for name in _CALLS:
        assert callable(BenchmarkFixture.__dict__.get(name)), name
    assert list(inspect.signature(BenchmarkFixture.__call__).parameters)[:2] == [
        "self", "function_to_benchmark"]
    assert list(inspect.signature(BenchmarkFixture.pedantic).parameters)[:2] == [
        "self", "target"]
    # entered and left, the class is as it was
    before = {name: BenchmarkFixture.__dict__[name] for name in _CALLS}
    with Benchmarks():
        assert all(BenchmarkFixture.__dict__[n] is not before[n] for n in _CALLS)
    assert {name: BenchmarkFixture.__dict__[name] for name in _CALLS} == before
