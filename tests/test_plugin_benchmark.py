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
import sys
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


# A kernel team's suite as it stands, on a built-in chip this machine is not: one call of
# ``vadd`` on two fp32 vectors of 2**16 elements is 2**16 FLOPs (one add an element) and
# 3 · 2**18 B (two inputs read, one output written, 4 B an element); the time bound on
# h100-sxm is those bytes over its 3.35 TB/s. pytest-benchmark's rounds are not the chip's
# time: each test passes with the analytic verdict of one call.
NAMED = """
import pytest
import torch

def vadd(x, y):
    return x + y

X, Y = torch.randn(1 << 16), torch.randn(1 << 16)

@pytest.mark.roofline(hw="h100", regime="memory", trace=True)
def test_whole_body(benchmark):
    benchmark(vadd, X, Y)

@pytest.mark.roofline(hw="h100", regime="memory", trace=True)
def test_whole_body_pedantic(benchmark):
    benchmark.pedantic(vadd, args=(X, Y), rounds=5, iterations=2)

@pytest.mark.roofline(hw="h100", regime="memory", trace=vadd)
def test_one_function(benchmark):
    benchmark(vadd, X, Y)

@pytest.mark.roofline(hw="h100", regime="memory", trace=vadd)
def test_one_function_pedantic(benchmark):
    benchmark.pedantic(vadd, args=(X, Y), rounds=5, iterations=2)

@pytest.mark.roofline(hw=["host", "h100"], trace=vadd)
def test_here_and_there(benchmark):
    benchmark(vadd, X, Y)
"""
VADD_FLOPS, VADD_BYTES = 1 << 16, 3 * 4 * (1 << 16)


@pytest.mark.parametrize("args", [(), ("-n", "2")], ids=["serial", "two-workers"])
def test_a_named_chip_keeps_its_analytic_verdict_under_pytest_benchmark(
        pytester: pytest.Pytester, host_cache: Path, args: tuple[str, ...]) -> None:
    if args:
        pytest.importorskip("xdist")
    pytester.makepyfile(test_named=NAMED)
    result = pytester.runpytest_subprocess(
        *plugin_args(), *ISOLATE, "--roofline-json=r.json", "--benchmark-min-rounds=3",
        "--benchmark-max-time=0.02", "-rA", *args)
    result.assert_outcomes(passed=5)
    report = json.loads((pytester.path / "r.json").read_text())
    rows = {(r["nodeid"].split("::")[1], r["hw"]): r for r in report["results"]}
    for (name, hw), record in rows.items():
        # one call, whatever the rounds, with trace=True and trace=fn alike
        assert (record["flops"], record["bytes"]) == (VADD_FLOPS, VADD_BYTES), (name, hw)
        assert record["outcome"] != "error", record
        if hw == "h100-sxm":  # not this machine: analytic, no efficiency made up
            assert record["outcome"] in ("passed", "report"), record
            assert "measured_s" not in record, record
    if not args:  # timed serially: set against this machine's roofs, reported elsewhere
        assert rows[("test_here_and_there", "host")]["measured_by"] == "pytest-benchmark median"
        result.stdout.fnmatch_lines(["pytest-benchmark median * timed on this machine:*"])


CHECKED = """
import pytest
import torch

def vadd(x, y):
    return x + y

X, Y = torch.randn(1 << 16), torch.randn(1 << 16)

@pytest.mark.roofline(hw="h100", regime="memory", trace=True)
def test_checked(benchmark):
    reference = X + Y                              # the check's own add, before the kernel
    out = benchmark(vadd, X, Y)
    torch.testing.assert_close(out, reference)     # a comparison: left out already
    assert float((out - Y).abs().max()) < 10       # three ops of the check, after it
"""


@pytest.mark.parametrize("args", [(), ("--benchmark-disable",)], ids=["timed", "disabled"])
def test_a_trace_true_body_counts_its_benchmarked_call_once(
        pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    """The body's correctness check is not the kernel: before, trace=True counted the body's
    reference add and its sub, abs and max beside the benchmarked add (VADD_BYTES, 786,432 B;
    + 786,432 the reference's add and as much the sub, 2 x 262,144 abs, 262,144 + 4 max:
    3,145,732 B in all, 4.0x, measured so). Now the workload is the benchmarked
    call, once (one add of 2**16 fp32: 2**16 FLOPs, 3 x 4 B x 2**16 read and written), and
    the four other ops are named as left out."""
    pytester.makepyfile(test_checked=CHECKED)
    result = pytester.runpytest_subprocess(
        *plugin_args(), *ISOLATE, "--roofline-json=r.json", "--benchmark-min-rounds=3",
        "--benchmark-max-time=0.02", "-rA", *args)
    result.assert_outcomes(passed=1)
    (record,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert (record["flops"], record["bytes"]) == (VADD_FLOPS, VADD_BYTES), record
    result.stdout.fnmatch_lines(["*left out of trace(test_checked):*"
                                 "op outside the benchmarked call x4*"])


def test_trace_fn_runs_under_a_profiler_already_set(pytester: pytest.Pytester) -> None:
    """``trace=fn`` sets no profile function of its own, so cProfile (a C profiler that
    ``sys.setprofile`` chaining cannot call) and the ones coverage and pytest-benchmark set
    stay in place, and the traced function is still followed."""
    pytester.makepyfile(test_named=NAMED)
    pytester.makepyfile(run_profiled="""
import cProfile, sys, pytest
profiler = cProfile.Profile()
profiler.enable()
code = pytest.main(sys.argv[1:])
profiler.disable()
assert sys.getprofile() is None
sys.exit(code)
""")
    result = pytester.run(sys.executable, "run_profiled.py", *plugin_args(), *ISOLATE,
                          "--benchmark-disable", "--roofline-json=r.json", "-k", "one_function")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert {r["flops"] for r in report["results"]} == {VADD_FLOPS}
