"""The one row factory both trace readers use (``profiling.rows``): a row's totals are per
run, over the repeats it was recorded for; an alarm's likely cause follows the regime, the
chip's on-chip level and whether the count is exact. Each expected figure is derived beside
it from the calls given (the mutation run over ``profiling/rows.py`` found these unpinned:
docs/mutation.md)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_roofline.hardware import get_hardware
from pytest_roofline.profiling.rows import EXACT, judged_row, likely, precision_of

H100 = get_hardware("h100")
US = 1e-6


def _row(calls: list[tuple[float, int]], *, repeats: int = 1, **kw: Any) -> Any:
    args: dict[str, Any] = dict(op="aten::mm", shapes="64x64", kernels=["gemm"], calls=calls,
                                bound=100 * US, limit=50 * US, flops=1e9, nbytes=1e6,
                                regime="compute", precision="matrix:bf16", tick=1e-9,
                                repeats=repeats, chip=H100, spread=0.0)
    args.update(kw)
    return judged_row(**args)


def test_a_rows_totals_are_per_run_over_its_repeats() -> None:
    """Four calls recorded over two runs (repeats=2): two calls a run. A call's bound is
    100 us and its limit 50 us: 2 x 100 = 200 us of bound and 2 x 50 = 100 us of limit a
    run; measured (10 + 10 + 120 + 140) / 2 = 140 us a run; FLOPs 2 x 1e9, bytes 2 x 1e6;
    the two 10 us calls beat the 50 us limit (faster), one a run."""
    calls = [(10 * US, 1), (10 * US, 1), (120 * US, 1), (140 * US, 1)]
    row = _row(calls, repeats=2)
    assert row.count == 2 and row.repeats == 2
    assert row.measured == pytest.approx(140 * US, rel=1e-12)
    assert row.bound == pytest.approx(200 * US, rel=1e-12)
    assert row.limit == pytest.approx(100 * US, rel=1e-12)
    assert (row.flops, row.bytes) == (2e9, 2e6)
    assert row.faster and row.faster_calls == 1
    once = _row(calls, repeats=1)  # the same calls as one run: every total doubles
    assert (once.count, once.faster_calls) == (4, 2)
    assert once.bound == pytest.approx(2 * row.bound, rel=1e-12)
    assert once.allowance == pytest.approx(2 * row.allowance, rel=1e-12)
    assert row.allowance > 0  # a 1 ns tick a call at least: the halving is seen


def test_calls_above_the_roof_count_per_run() -> None:
    """Calls of 80 us against a 100 us bound and a 50 us limit: above the roof, within the
    limit, a finding; four over two runs: two a run."""
    row = _row([(80 * US, 1)] * 4, repeats=2)
    assert not row.faster and row.above and row.above_calls == 2


def test_the_likely_cause_blames_a_count_only_where_it_may_be_wrong() -> None:
    fast = [(1 * US, 1)] * 4  # 1 us against a 50 us limit: faster than physics
    exact = _row(fast, op="aten::add", kernels=["elementwise_kernel"], regime="memory")
    assert "elementwise" in EXACT and "its tensors' own" in exact.likely
    assert "overcounted" not in exact.likely
    # the same op with an assumption made for its bound: its count may be wrong
    assumed = _row(fast, op="aten::add", kernels=["elementwise_kernel"], regime="memory",
                   assumed=("dtype from its kernels' names",))
    assert "its bytes are overcounted" in assumed.likely
    gemm = _row(fast, regime="memory")  # a GEMM's bytes are not exact
    assert "its bytes are overcounted" in gemm.likely
    said = _row(fast, why="the reader's own reason")
    assert said.likely == "the reader's own reason"
    slow = _row([(200 * US, 1)] * 4)  # under the bound: no alarm, no cause
    assert slow.likely == ""


def test_likely_names_the_regime_the_level_and_the_peak() -> None:
    memory = likely("memory", 1e6, H100, "vector:fp32")
    name = H100.name  # h100-sxm: h100 names it
    assert memory.startswith(f"its 1 MB a call beat {name}'s memory even with 50 MB of it "
                             f"from the l2")  # H100 SXM's L2: 50 MB (its spec)
    bare = SimpleNamespace(name="bare", onchip=())  # a spec that lists no on-chip level
    assert "with every byte from DRAM" in likely("memory", 1e6, bare, "vector:fp32")
    compute = likely("compute", 1e6, H100, "matrix:bf16")
    assert f"{name}'s datasheet peak (matrix:bf16)" in compute
    assert "FLOPs are overcounted" in compute
    assert likely("network", 1e6, H100, "link").startswith(f"it beat {name}'s link")


def test_precision_of_takes_the_kernel_that_sets_most_of_the_bound() -> None:
    kernels = [SimpleNamespace(time=1.0, peak_label="vector:fp32"),
               SimpleNamespace(time=3.0, peak_label="matrix:bf16"),
               SimpleNamespace(time=2.0, peak_label="matrix:fp8")]
    assert precision_of(SimpleNamespace(kernels=kernels, peak_label="x")) == "matrix:bf16"
    assert precision_of(SimpleNamespace(kernels=[], peak_label="matrix:tf32")) == "matrix:tf32"
