"""The trace features of the plugin, through pytester: ``trace=True``, ``roofline.trace()``
and ``cross_check=``. Figures are derived by hand on toychip (tests/test_plugin.py: 100
TFLOP/s bf16, 1 TB/s, ridge 100 FLOP/B)."""

from __future__ import annotations

import json

import pytest
from test_plugin import ISOLATE, TOY_SPEC, plugin_args

pytest_plugins = ("pytester",)


torch = pytest.importorskip("torch")


def _warm_up() -> None:
    """In-process pytester runs drop the modules they import when they end, and torch's do
    not survive being imported twice: load what a trace loads (torch._dynamo among them) now."""
    import pytest_roofline as rl

    a = torch.ones(2, 2, dtype=torch.bfloat16)
    rl.trace(lambda a: torch.softmax(a @ a.T, -1), a)
    rl.trace(lambda a: torch.softmax(a @ a.T, -1), a.to("meta"))


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
    result.stdout.fnmatch_lines([
        "*roofline: cross-check: the declared and traced workloads disagree by more than "
        "0.02 on matrix FLOPs*",
        "*matrix FLOPs declared 1.05 MFLOP, traced 524 kFLOP (traced -50.0%)*",
        "*vector FLOPs declared 0 FLOP, traced 0 FLOP*",
    ])


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
    result.stdout.fnmatch_lines([
        "*trace='yes' is not allowed; expected True*",
        "*test_nothing_traced: cross_check=0.02 needs a traced workload (trace=True, or "
        "roofline.trace(fn, *args))",
        "*test_nothing_declared: cross_check=0.5 needs a declared workload*",
        "*test_no_torch_op: trace=True, but the test body ran no torch op*",
        "*test_fits_without_footprint: fits=True needs a footprint, and trace=True records "
        "none*",
    ])
