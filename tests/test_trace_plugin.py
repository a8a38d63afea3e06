"""The trace features of the plugin, through pytester: ``trace=True``, ``roofline.trace()``
and ``cross_check=``. Figures are derived by hand on toychip (tests/test_plugin.py: 100
TFLOP/s bf16, 1 TB/s, ridge 100 FLOP/B)."""

from __future__ import annotations

import json

import pytest
from test_plugin import ISOLATE, TOY_SPEC, plugin_args
from wrapped import matcher, ours_too_wide

pytest_plugins = ("pytester",)


torch = pytest.importorskip("torch")


def _warm_up() -> None:
    """In-process pytester runs drop the modules they import when they end, and torch's do
    not survive being imported twice: load what a trace loads (torch._dynamo among them) now."""
    import pytest_roofline as rl

    a = torch.ones(2, 2, dtype=torch.bfloat16)
    rl.trace(lambda a: torch.softmax(a @ a.T, -1), a)
    rl.trace(lambda a: torch.softmax(a @ a.T, -1), a.to("meta"))
    torch.testing.assert_close(a, a)  # what it imports on first use, too


_warm_up()


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", toychip=TOY_SPEC)
    pytester.makeini("[pytest]\nroofline_specs = toychip.yaml\n")
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*plugin_args(), *ISOLATE, *args)


BODY = """
import pytest
import torch
from pytest_roofline import ops

def gemm(m):
    a = torch.ones(m, 256, dtype=torch.bfloat16)
    b = torch.ones(256, 256, dtype=torch.bfloat16)
    assert (a @ b).shape == (m, 256)   # the existing kernel test, unchanged
"""


def test_trace_true_gives_an_existing_test_a_verdict(suite: pytest.Pytester) -> None:
    suite.makepyfile(BODY + """
@pytest.mark.roofline(hw="toy", regime="memory", trace=True)
def test_small():
    gemm(4)

@pytest.mark.roofline(hw="toy", regime="compute", trace=True)
def test_small_expected_compute():
    gemm(4)
""")
    result = run(suite, "--roofline-json=out.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["roofline: expected "
                                 "compute-bound on toychip*"])
    records = {r["nodeid"].split("::")[-1]: r
               for r in json.loads((suite.path / "out.json").read_text())["results"]}
    # one mm of [4, 256] @ [256, 256] in bf16; torch.ones are fills (bytes only)
    assert records["test_small"]["flops"] == 2 * 4 * 256 * 256
    assert records["test_small"]["workload"] == "trace(test_small)"


def test_the_fixture_traces_and_adds(suite: pytest.Pytester) -> None:
    suite.makepyfile(BODY + """
@pytest.mark.roofline(hw="toy", regime="memory")
def test_fixture(roofline):
    a = torch.empty(8, 256, dtype=torch.bfloat16, device="meta")
    b = torch.empty(256, 256, dtype=torch.bfloat16, device="meta")
    w = roofline.trace(torch.mm, a, b)
    assert roofline.workload is w and w.flops == 2 * 8 * 256 * 256
    assert w.bytes == ops.matmul(8, 256, 256).bytes
""")
    run(suite).assert_outcomes(passed=1)


def test_cross_check_passes_when_declared_and_traced_agree(suite: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # a row a line
    suite.makepyfile(BODY + """
@pytest.mark.roofline(hw="toy", regime="memory", workload=ops.matmul(4, 256, 256),
                      trace=True, cross_check=0.02)
def test_agree():
    gemm(4)

@pytest.mark.roofline(hw="toy", cross_check="2%")
def test_agree_fixture(roofline):
    roofline.add(ops.softmax(64, 128))
    x = torch.empty(64, 128, dtype=torch.bfloat16, device="meta")
    roofline.trace(lambda x: torch.softmax(x, -1), x)
    assert roofline.workload.name.startswith("softmax")  # the traced one is kept apart
""")
    result = run(suite)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_agree_fixture*xcheck 0.02*ok"])


def test_cross_check_fails_listing_both_counts_per_family(suite: pytest.Pytester) -> None:
    suite.makepyfile(BODY + """
@pytest.mark.roofline(hw="toy", workload=ops.matmul(4, 256, 512), trace=True,
                      cross_check=0.02)
def test_wrong_declaration():
    gemm(4)
""")
    result = run(suite)
    result.assert_outcomes(failed=1)
    matcher(result).fnmatch_lines([
        "*roofline: cross-check: the declared and traced workloads disagree by more than "
        "0.02 on matrix FLOPs*",
        "*matrix FLOPs declared 1.05 MFLOP, traced 524 kFLOP (traced -50.0%)*",
        "*vector FLOPs declared 0 FLOP, traced 0 FLOP*",
    ])
    assert not ours_too_wide(result.outlines)  # the failure and its detail lines wrap


def test_cross_check_needs_both_sides(suite: pytest.Pytester) -> None:
    suite.makepyfile(BODY + """
@pytest.mark.roofline(hw="toy", workload=ops.matmul(4, 256, 512), cross_check=0.02)
def test_nothing_traced():
    gemm(4)

@pytest.mark.roofline(hw="toy", trace=True, cross_check=0.5)
def test_nothing_declared():
    gemm(4)

@pytest.mark.roofline(hw="toy", trace="yes")
def test_bad_trace():
    pass

@pytest.mark.roofline(hw="toy", trace=True)
def test_no_torch_op():
    pass

@pytest.mark.roofline(hw="toy", trace=True, fits=True)
def test_fits_without_footprint():
    gemm(4)
""")
    result = run(suite)
    result.assert_outcomes(failed=4, errors=1)
    matcher(result).fnmatch_lines([
        "*trace='yes' is not allowed; expected True*",
        "*test_nothing_traced: cross_check=0.02 needs a traced workload (trace=True, or "
        "roofline.trace(fn, *args))",
        "*test_nothing_declared: cross_check=0.5 needs a declared workload*",
        "*test_no_torch_op: trace=True, but the test body ran no torch op*",
        "*test_fits_without_footprint: fits=True needs a footprint, and trace=True records "
        "none*",
    ])


SOFTMAX = """
import pytest
import torch

def my_softmax(x):
    return torch.softmax(x, -1)

@pytest.mark.roofline(hw="toy", trace=TRACE)
def test_softmax():
    x = torch.randn(4096, 1024)
    y = my_softmax(x)
    torch.testing.assert_close(y, torch.softmax(x, -1))
"""


@pytest.mark.parametrize(("trace", "softmaxes"), [("my_softmax", 1), ("[my_softmax]", 1),
                                                  ("True", 2)])
def test_trace_fn_measures_the_kernel_not_the_test(suite: pytest.Pytester, trace: str,
                                                   softmaxes: int) -> None:
    # the kernel: softmax of a 4096 x 1024 fp32 tensor reads it and writes it once,
    # 2 x 16.8 MB = 33.6 MB (5 FLOPs an element, as ops.softmax). trace=True records the body
    # but leaves out the randn fill and what assert_close runs; the reference
    # torch.softmax(x, -1) is the body's own op: counted, a second 33.6 MB
    suite.makepyfile(SOFTMAX.replace("TRACE", trace))
    result = run(suite, "--roofline-json=out.json", "-rA")
    result.assert_outcomes(passed=1)
    (record,) = json.loads((suite.path / "out.json").read_text())["results"]
    elements = 4096 * 1024
    assert record["bytes"] == softmaxes * 2 * elements * 4
    assert record["flops"] == softmaxes * 5 * elements
    if trace == "True":  # what was left out is said in the test's report section
        result.stdout.fnmatch_lines(["*left out of trace(test_softmax): RNG fill x1, "
                                     "comparison x*"])


CUSTOM = """
import pytest
import torch

@torch.library.custom_op("pluginlib::fancy", mutates_args=())
def fancy(x: torch.Tensor) -> torch.Tensor:
    return x.clone()

@fancy.register_fake
def _(x):
    return torch.empty_like(x)

@pytest.mark.roofline(hw="toy", regime="memory", trace=True, STRICT)
def test_fancy():
    x = torch.empty(1024, 1024, device="meta")
    fancy(fancy(x))
"""


def test_unknown_ops_are_said_in_the_summary_json_and_markdown(
        suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    suite.makepyfile(CUSTOM.replace(", STRICT", ""))
    result = run(suite, "--roofline-json=out.json", "--roofline-summary=all")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_fancy*ok (2 ops without a formula)"])
    (record,) = json.loads((suite.path / "out.json").read_text())["results"]
    assert record["unknown"] == {"pluginlib::fancy": 2}
    assert record["message"] == "2 ops without a formula: pluginlib::fancy x2"
    assert record["flops"] == 0 and record["bytes"] == 2 * 2 * 1024 * 1024 * 4
    from pytest_roofline.report import markdown

    text = markdown.render(json.loads((suite.path / "out.json").read_text()))
    assert "### Ops without a formula" in text
    assert "`pluginlib::fancy` x2" in text


def test_strict_fails_a_test_whose_trace_holds_an_op_without_a_formula(
        suite: pytest.Pytester) -> None:
    suite.makepyfile(CUSTOM.replace("STRICT", "strict=True").replace("pluginlib", "strictlib"))
    result = run(suite)
    result.assert_outcomes(failed=1)
    matcher(result).fnmatch_lines(["*strict=True: trace(test_fancy): 2 ops without a formula: "
                                   "strictlib::fancy x2; strict tracing counts no op as 0 FLOPs*"
                                   "register_op('strictlib::fancy', formula)*"])


def test_a_failure_line_names_the_ops_without_a_formula(suite: pytest.Pytester) -> None:
    suite.makepyfile(CUSTOM.replace('regime="memory"', 'regime="compute"')
                     .replace(", STRICT", "").replace("pluginlib", "faillib"))
    result = run(suite)
    result.assert_outcomes(failed=1)
    matcher(result).fnmatch_lines(["*roofline: expected compute-bound*"
                                   "(2 ops without a formula: faillib::fancy x2)*"])


@pytest.mark.parametrize("bad", ["3", "'yes'", "[]", "[my_softmax, 3]"])
def test_a_bad_trace_value_is_named(suite: pytest.Pytester, bad: str) -> None:
    suite.makepyfile(SOFTMAX.replace("TRACE", bad))
    result = run(suite)
    result.assert_outcomes(errors=1)
    matcher(result).fnmatch_lines(["*roofline marker on test_softmax: trace=* is not allowed; "
                                   "expected True*"])


def test_a_plugin_hook_gives_traced_ops_their_formulas(suite: pytest.Pytester) -> None:
    # the conftest's hook gives hooklib::fancy a formula: 3 FLOPs an element of its input
    import pytest_roofline as rl

    suite.makeconftest("""
import pytest_roofline as rl

def pytest_roofline_register_ops(config):
    return {"hooklib::fancy": lambda x: rl.Kernel("fancy", flops=3 * x.numel(),
                                                  bytes=8 * x.numel(), unit="vector")}
""")
    suite.makepyfile(CUSTOM.replace(", STRICT", ", strict=True").replace("pluginlib",
                                                                         "hooklib"))
    try:
        result = run(suite, "--roofline-json=out.json")
        result.assert_outcomes(passed=1)
        (record,) = json.loads((suite.path / "out.json").read_text())["results"]
        assert record["flops"] == 2 * 3 * 1024 * 1024 and "unknown" not in record
    finally:
        rl.unregister_op("hooklib::fancy")


def test_trace_takes_a_tracer_with_its_options(suite: pytest.Pytester) -> None:
    # trace=Tracer(...) records the body through the same Tracer as roofline.trace(): its
    # own formulas and strict apply (the mm below: 7 FLOPs by the tracer's formula, not
    # 2·4·256·256)
    suite.makepyfile(BODY + """
from pytest_roofline import Kernel, Tracer

MINE = Tracer(formulas={"aten::mm": lambda a, b: Kernel("mm", 7.0, 8.0)})

@pytest.mark.roofline(hw="toy", trace=MINE)
def test_own_formula():
    gemm(4)

@pytest.mark.roofline(hw="toy", trace=Tracer(strict=True))
def test_strict_tracer():
    torch.linalg.det(torch.ones(4, 4))
""")
    result = run(suite, "--roofline-json=out.json")
    result.assert_outcomes(passed=1, errors=0, failed=1)
    matcher(result).fnmatch_lines(["*strict=True: trace(test_strict_tracer): 1 op without a "
                                   "formula: aten::_linalg_det x1*"])
    records = {r["nodeid"].split("::")[-1]: r
               for r in json.loads((suite.path / "out.json").read_text())["results"]}
    assert records["test_own_formula"]["flops"] == 7.0
