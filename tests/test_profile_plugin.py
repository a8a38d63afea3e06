"""roofline.profile() in tests: min_kernel_efficiency, the faster-than-physics guard, the
reports (pytester runs).

The verdicts cannot turn on noise: the chips are made up, one a million times faster than
anything real (every kernel reaches a tiny share of its roof) and one a million times slower
(every kernel beats its bound).
"""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points

import pytest
from wrapped import ours_too_wide, unwrap

torch = pytest.importorskip("torch")
pytest_plugins = ("pytester",)


def _warm_profiler() -> None:
    """An in-process pytester run drops the modules first imported during it; torch's
    profiler and what exporting a trace loads do not survive a second import, so one tiny
    profile loads them here, once, before any run."""
    import os
    import tempfile

    import torch.profiler

    with torch.profiler.profile(record_shapes=True) as prof:
        torch.ones(2) + 1
    with tempfile.TemporaryDirectory() as folder:
        prof.export_chrome_trace(os.path.join(folder, "warm.json"))


_warm_profiler()

ISOLATE = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark")
FAST = """\
name: fastchip
default_dtype: fp32
vector_fallback: matrix
sources: {made-up: "a chip faster than anything real, for tests"}
memory: {capacity: 80 GB, bandwidth: 1 PB/s, source: made-up}
matrix: {fp32: 1 EFLOP/s, source: made-up}
"""
SLOW = """\
name: slowchip
default_dtype: fp32
vector_fallback: matrix
sources: {made-up: "a chip slower than anything real, for tests"}
memory: {capacity: 80 GB, bandwidth: 1 MB/s, source: made-up}
matrix: {fp32: 1 GFLOP/s, source: made-up}
onchip:
  - {name: L2, capacity: 1 MiB, bandwidth: 2 MB/s, source: made-up}
"""
TESTS = """
import pytest, torch

def mlp(x, w1, w2):
    return torch.relu(x @ w1) @ w2

def args():
    return torch.randn(64, 128), torch.randn(128, 256), torch.randn(256, 128)

@pytest.mark.roofline(hw="fast.yaml", min_kernel_efficiency={"aten::mm": 0.5})
def test_below(roofline):
    profile = roofline.profile(mlp, *args())
    assert profile.rows

@pytest.mark.roofline(hw="fast.yaml", min_kernel_efficiency={"*softmax*": 0.5})
def test_no_kernel_matches(roofline):
    roofline.profile(mlp, *args())

@pytest.mark.roofline(hw="slow.yaml")
def test_faster(roofline):
    roofline.profile(mlp, *args())

@pytest.mark.roofline(hw="slow.yaml", allow_faster=True)
def test_faster_allowed(roofline):
    roofline.profile(mlp, *args())

@pytest.mark.roofline(hw="fast.yaml", min_kernel_efficiency=0.5)
def test_no_profile(roofline):
    roofline.add(flops=1, bytes=1)

@pytest.mark.roofline(hw="fast.yaml", min_kernel_efficiency=2)
def test_bad_limit(roofline):
    pass
"""


def plugin_args() -> list[str]:
    installed = any(ep.value == "pytest_roofline.plugin.hooks"
                    for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "pytest_roofline.plugin.hooks"]


def test_kernel_efficiency_guard_and_reports(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", fast=FAST, slow=SLOW)
    pytester.makepyfile(test_kernels=TESTS)
    result = pytester.runpytest_inprocess(*ISOLATE, *plugin_args(),
                                          "--roofline-json=report.json", "-p", "no:randomly")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 3 and outcomes.get("passed") == 2
    assert outcomes.get("errors") == 1
    # failures, kernels and summary in 80 columns (torch's profiler logs its own lines)
    assert not ours_too_wide(line for line in result.outlines if not line.startswith("USDT:"))
    text = "\n".join(unwrap(result.outlines))  # the wrapped failures read whole
    # the failure names the kernel, its efficiency and its bound
    assert "roofline: kernel matmul(64x128f32,128x256f32) ran at " in text
    assert "of its roof on fastchip, below 50%" in text and "bound 0.229 ns" in text
    assert "roofline: faster than physics on slowchip: matmul(" in text
    assert "min_kernel_efficiency=0.5 needs a profiled call" in text
    assert "min_kernel_efficiency=2 is not allowed" in text
    # the summary: each profiled test's kernels, within 80 columns, and which roof was used
    # a kernel faster than its bound shows its figure (a million times slower chip: "...x!")
    assert "Profiled kernels losing the most time" in text
    assert re.search(r"\d(e\+\d\d)?x!", text), text
    assert "% roof on fastchip: matrix:fp32 peak" in text
    report = json.loads((pytester.path / "report.json").read_text())
    records = {r["nodeid"].split("::")[1]: r for r in report["results"]}
    below = records["test_below"]["profile"][0]
    assert below["hw"] == "fastchip" and below["rows"] and below["priced_share"] > 0.9
    assert all(r["efficiency"] is None or r["efficiency"] <= 1
               for rec in records.values() for p in rec.get("profile", [])
               for r in p["rows"])
    assert records["test_faster_allowed"]["profile"][0]["faster"]
    assert records["test_faster"]["outcome"] == "failed"
