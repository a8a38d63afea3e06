"""Timing, efficiency and the measured figures in reports (plain tests, no timing asserted).

Nothing here asserts how fast anything runs: the figures under test are computed from
samples the tests choose, so the expected numbers follow from the definitions (median,
interquartile range, roofline time over measured time) and hold exactly.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pytest_roofline as rl
import pytest_roofline.measuring
from pytest_roofline.errors import RooflineError
from pytest_roofline.hardware import Hardware, MemoryLevel, is_dynamic
from pytest_roofline.judging.marker import MarkerError, parse
from pytest_roofline.measuring import diagnose
from pytest_roofline.measuring.timing import MeasureError, Measurement, Timer, measure, synchronize
from pytest_roofline.report import markdown, plot, rules, table

# A chip with round figures: 1 TFLOP/s fp32, 100 GB/s, caches of 32 KiB / 1 MiB / 32 MiB.
CHIP = Hardware(
    name="roundchip", memory_bandwidth=100e9, memory_capacity=16e9, matrix={"fp32": 1e12},
    default_dtype="fp32", vector_fallback="matrix",
    onchip=(MemoryLevel("L1d", 32 * 1024, 1e12), MemoryLevel("L2", 1 << 20, 5e11),
            MemoryLevel("L3", 32 << 20, 2e11)))


# -- Measurement and the timer -----------------------------------------------------------------


def test_measurement_is_the_median_and_the_iqr_over_it() -> None:
    # samples 1..5 s: median 3, quartiles 2 and 4 (linear interpolation) -> spread 2/3
    m = Measurement.from_samples([5.0, 1.0, 3.0, 2.0, 4.0], warmup=1)
    assert m.time == 3.0 and m.best == 1.0 and m.repeats == 5
    assert m.spread == pytest.approx(2 / 3)
    assert m.to_dict() == {"time_s": 3.0, "spread": pytest.approx(2 / 3), "best_s": 1.0,
                           "repeats": 5}


@given(st.lists(st.floats(1e-9, 1e3), min_size=1, max_size=50))
def test_measurement_median_lies_within_the_samples(samples: list[float]) -> None:
    m = Measurement.from_samples(samples)
    assert min(samples) <= m.time <= max(samples)
    assert m.best == min(samples) and m.spread >= 0


@pytest.mark.parametrize("samples", [[], [0.0, 0.0, 0.0]])
def test_measurement_refuses_no_time(samples: list[float]) -> None:
    with pytest.raises(MeasureError):
        Measurement.from_samples(samples)


def test_timer_warms_up_then_repeats_and_passes_arguments() -> None:
    calls: list[tuple[Any, ...]] = []

    def kernel(a: int, *, b: int) -> int:
        calls.append((a, b))
        return a + b

    m = Timer(warmup=2, repeats=7, min_time=0.0)(kernel, 1, b=2)
    assert len(calls) == 2 + 7 and set(calls) == {(1, 2)}
    assert m.repeats == 7 and m.warmup == 2 and m.time > 0


def test_timer_runs_until_min_time() -> None:
    import time

    m = Timer(warmup=0, repeats=1, min_time=0.02)(time.sleep, 0.005)
    # timed calls until 0.02 s of them, the last one crossing it (each sleeps >= 5 ms)
    assert sum(m.samples) >= 0.02 and sum(m.samples[:-1]) < 0.02  # samples are sorted


@pytest.mark.parametrize("settings", [{"warmup": -1}, {"repeats": 0}, {"min_time": -1.0},
                                      {"repeats": 5, "max_repeats": 2}, {"repeats": True}])
def test_timer_refuses_bad_settings(settings: dict[str, Any]) -> None:
    with pytest.raises(MeasureError) as info:
        Timer(**settings)
    assert isinstance(info.value, RooflineError)


def test_measure_refuses_what_is_not_callable() -> None:
    with pytest.raises(MeasureError, match="needs a callable"):
        measure(42)  # type: ignore[arg-type]


def test_measure_is_public_and_callable() -> None:
    m = rl.measure(sorted, [3, 1, 2])
    assert isinstance(m, rl.Measurement) and m.time > 0
    assert rl.Measurement is Measurement and callable(rl.measure)


def test_synchronize_blocks_jax_style_results_and_torch_devices(
        monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []

    class Array:
        def block_until_ready(self) -> Array:
            events.append("jax")
            return self

    cuda = types.SimpleNamespace(is_initialized=lambda: True,
                                 synchronize=lambda: events.append("torch"))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    synchronize(Array())
    assert events == ["jax", "torch"]
    Timer(warmup=0, repeats=2, min_time=0.0)(Array)
    # each timed call: a sync before the clock starts and one after the call
    assert events[2:].count("torch") == 4 and events[2:].count("jax") == 2


# -- efficiency in the analysis ------------------------------------------------------------------


def test_analyze_sets_measured_and_efficiency() -> None:
    work = rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32")  # 12 GB
    r = rl.analyze(work, CHIP, measured=0.24)
    # bound: 12e9 B / 100e9 B/s = 0.12 s, measured 0.24 s -> half the roof
    assert r.time == pytest.approx(0.12) and r.efficiency == pytest.approx(0.5)
    assert r.to_dict()["measured_s"] == 0.24 and r.to_dict()["efficiency"] == pytest.approx(0.5)
    plain = rl.analyze(work, CHIP)
    assert plain.measured is None and plain.efficiency is None
    assert "efficiency" not in plain.to_dict()


def test_analyze_takes_a_measurement() -> None:
    m = Measurement.from_samples([0.24, 0.24, 0.24])
    r = rl.analyze(rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32"), CHIP,
                   measured=m)
    assert r.measured == 0.24


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "1 s", True])
def test_analyze_refuses_a_bad_measured_time(bad: Any) -> None:
    with pytest.raises(RooflineError, match="measured must be a time"):
        rl.analyze(rl.ops.matmul(64, 64, 64, dtype="fp32"), CHIP, measured=bad)


# -- faster than the bound ---------------------------------------------------------------------


def test_faster_than_the_bound_needs_more_than_the_capped_allowance() -> None:
    work = rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32")  # bound 0.12 s
    assert not diagnose.is_faster(rl.analyze(work, CHIP, measured=0.12))
    assert not diagnose.is_faster(rl.analyze(work, CHIP, measured=0.12 / 1.04))  # 4% < 5%
    assert diagnose.is_faster(rl.analyze(work, CHIP, measured=0.12 / 1.2))
    # a spread widens the 5% up to 10%, never further: a run 20% under the bound is flagged
    # whatever its spread (a loaded machine's 30% included); one 8% under it is not, with a
    # spread of 10%
    assert diagnose.is_faster(rl.analyze(work, CHIP, measured=0.12 / 1.2), spread=0.3)
    assert not diagnose.is_faster(rl.analyze(work, CHIP, measured=0.12 / 1.08), spread=0.1)
    assert diagnose.is_faster(rl.analyze(work, CHIP, measured=0.12 / 1.08), spread=0.0)


def test_analyze_never_returns_an_efficiency_above_one() -> None:
    # bound 0.12 s (1e9 fp32 adds, 12 GB at 100 GB/s): measured at 0.12 / 1.04 is within the
    # 5% allowance: at the bound, with its figure (104%), never an efficiency of 1; at
    # 0.12 / 1.83 (the figure a calibration under load produced) it is faster than the bound
    work = rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32")
    assert rl.analyze(work, CHIP, measured=0.24).efficiency == pytest.approx(0.5)
    within = rl.analyze(work, CHIP, measured=0.12 / 1.04)
    assert within.efficiency is None and within.notes == (
        "at the bound within noise: 104% of it (measured 0.115 s, bound 0.12 s), so no "
        "efficiency is given",)
    beyond = rl.analyze(work, CHIP, measured=0.12 / 1.83)
    assert beyond.efficiency is None and "faster than the bound: 183% of it" in beyond.notes[0]
    assert beyond.to_dict()["efficiency"] is None
    # a Measurement's own spread widens the allowance up to 10%, never beyond: 1.09x inside
    # a 30% spread is at the bound, 1.2x is faster than it
    m = Measurement.from_samples([0.08, 0.11, 0.11, 0.13])  # median 0.11, spread ~14%
    assert m.spread > 0.1
    assert rl.analyze(work, CHIP, measured=m).efficiency is None
    assert "at the bound within noise: 109% of it" in rl.analyze(work, CHIP, measured=m).notes[0]
    fast = Measurement.from_samples([0.08, 0.1, 0.1, 0.13])  # median 0.1: 120%
    assert "faster than the bound: 120% of it" in rl.analyze(work, CHIP, measured=fast).notes[0]


@given(st.floats(min_value=1e-6, max_value=1e3))
def test_analyze_efficiency_is_a_fraction_for_any_measured_time(seconds: float) -> None:
    work = rl.ops.elementwise(10**6, inputs=2, outputs=1, dtype="fp32")
    efficiency = rl.analyze(work, CHIP, measured=seconds).efficiency
    assert efficiency is None or 0 < efficiency <= 1


@given(st.floats(min_value=1e-6, max_value=1e3), st.integers(min_value=16, max_value=8192))
def test_mfu_is_a_fraction_no_larger_than_the_efficiency(seconds: float, n: int) -> None:
    from pytest_roofline.judging.mfu import mfu

    gemm = rl.ops.matmul(n, n, n, dtype="fp32")
    result = rl.analyze(gemm, CHIP, measured=seconds)
    utilization = mfu(result, gemm)
    if result.efficiency is None:
        assert utilization is None
    else:
        assert utilization is not None and 0 < utilization <= result.efficiency <= 1


def test_faster_message_names_both_causes_and_the_cache_holding_the_data() -> None:
    # 20000 fp32 adds: 240 kB moved, which fits in the 1 MiB L2 of the chip
    work = rl.ops.elementwise(20000, inputs=2, outputs=1, dtype="fp32")
    r = rl.analyze(work, CHIP, measured=1e-7)
    text = diagnose.explain_faster(r, CHIP)
    assert "faster than the roofline bound" in text and "by 96%" in text  # 1 - 0.1/2.4
    assert "overcounted, or data in a cache" in text
    assert "working set 240 kB fits in L2 1.05 MB" in text  # 20000 x 3 x 4 B; 1 MiB
    assert "docs/measure.md: Faster than the bound" in text  # the advice at length


def test_faster_message_is_a_headline_and_its_docs_section_exists() -> None:
    """The failure line is a headline of at most 240 characters (260 when both the timing
    and the calibration were loaded); the section it names holds the advice at length."""
    from pathlib import Path

    work = rl.ops.elementwise(20000, inputs=2, outputs=1, dtype="fp32")
    loaded = CHIP.replace(provenance={"device": "cpu", "conditions": {"other_cores": 1.0}})
    r = rl.analyze(work, loaded, measured=1e-7)
    for chip, others, most in ((CHIP, None, 240), (CHIP, 1.25, 240), (loaded, 1.25, 260)):
        text = diagnose.explain_faster(r, chip, 0.1, other_cores=others)
        assert len(text) <= most, (len(text), text)
    docs = (Path(__file__).parents[1] / "docs" / "measure.md").read_text(encoding="utf-8")
    assert "### Faster than the bound" in docs


def test_a_failure_says_the_call_was_timed_under_load() -> None:
    """An injected load: 1.25 other cores busy while the call was timed (LOADED is 0.25)
    and 1.0 while the calibration was measured; 0.1 of a core is no load."""
    slow = rl.analyze(rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32"), CHIP,
                      measured=1.0)
    line = diagnose.efficiency_failure(slow, 0.5, other_cores=1.25)
    assert line is not None and "other cores busy: 1.2 when timed" in line
    assert "busy" not in str(diagnose.efficiency_failure(slow, 0.5, other_cores=0.1))
    assert "busy" not in str(diagnose.efficiency_failure(slow, 0.5))
    loaded = CHIP.replace(provenance={"device": "cpu", "conditions": {"other_cores": 1.0}})
    both = diagnose.efficiency_failure(slow, 0.5, chip=loaded, other_cores=1.25)
    assert "other cores busy: 1.2 when timed, 1.0 when calibrated" in str(both)
    alone = diagnose.efficiency_failure(slow, 0.5, chip=loaded, other_cores=0.0)
    assert "other cores busy: 1.0 when calibrated" in str(alone) and "timed" not in str(alone)
    # an older calibration records only whether it was quiet
    unquiet = CHIP.replace(provenance={"device": "cpu", "conditions": {"quiet": False}})
    assert "calibrated under load" in str(diagnose.efficiency_failure(slow, 0.5, chip=unquiet))
    work = rl.ops.elementwise(20000, inputs=2, outputs=1, dtype="fp32")
    fast = rl.analyze(work, loaded, measured=1e-7)
    text = diagnose.explain_faster(fast, loaded, other_cores=1.25)
    assert "other cores busy: 1.2 when timed, 1.0 when calibrated" in text
    assert "busy" not in diagnose.explain_faster(fast, CHIP, other_cores=0.1)


def test_faster_message_when_the_data_fits_no_cache() -> None:
    r = rl.analyze(rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32"), CHIP,
                   measured=1e-3)
    assert "working set 12 GB larger than every cache" in diagnose.explain_faster(r, CHIP)


def test_the_judgement_passes_the_load_of_its_timing_to_the_failure() -> None:
    """The plugin's path: judge() is given the cores other processes kept busy while the
    call was timed (here injected: 1.25) and the failure line and the record carry it."""
    from pytest_roofline.judging.verdict import judge

    work = rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32")
    expectation = parse({"hw": CHIP, "min_efficiency": 0.5})
    results = [rl.analyze(work, CHIP, measured=1.0)]  # 12 GB at 1 TB/s: 12 ms, 1.2%
    loaded = judge(expectation, work, analyzed=lambda: results, other_cores=1.25)
    [check] = loaded.checks
    assert "other cores busy: 1.2 when timed" in check.message
    assert loaded.fields[0][1]["measured_other_cores"] == 1.25
    quiet = judge(expectation, work, analyzed=lambda: results, other_cores=0.0)
    assert "busy" not in quiet.checks[0].message


def test_efficiency_failure_gives_both_times() -> None:
    r = rl.analyze(rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32"), CHIP,
                   measured=1.2)
    line = diagnose.efficiency_failure(r, 0.5)
    assert line is not None and "1.2 s" in line and "120 ms" in line and "10.0%" in line
    assert diagnose.efficiency_failure(r, 0.1) is None


# -- the marker --------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [(0.5, 0.5), ("50%", 0.5), (1, 1.0)])
def test_marker_min_efficiency(value: Any, expected: float) -> None:
    exp = parse({"hw": CHIP, "flops": 1, "bytes": 1, "min_efficiency": value})
    assert exp.min_efficiency == expected and exp.checks
    assert "eff>=" in exp.describe()


@pytest.mark.parametrize("value", [0, 1.5, -0.1, "fast", True])
def test_marker_refuses_a_bad_min_efficiency(value: Any) -> None:
    with pytest.raises(MarkerError, match="min_efficiency"):
        parse({"hw": CHIP, "flops": 1, "bytes": 1, "min_efficiency": value})


def test_calibrated_names_are_resolved_on_demand() -> None:
    assert is_dynamic("host") and is_dynamic("cuda:0") and is_dynamic("CUDA-1")
    assert is_dynamic("cuda") and not is_dynamic("h100") and not is_dynamic("hostile")


# -- reports -----------------------------------------------------------------------------------


def _record(nodeid: str, measured: float | None, efficiency: float | None,
            **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "nodeid": nodeid, "hw": "roundchip", "dtype": "fp32", "flops": 1e9, "bytes": 1e9,
        "intensity": 1.0, "ridge": 10.0, "regime": "memory", "time_s": 0.01,
        "t_memory_s": 0.01, "outcome": "report", "expected": None}
    if measured is not None:
        record.update(measured_s=measured, efficiency=efficiency)
    record.update(extra)
    return record


def test_headroom_ranks_by_time_share_times_missing_efficiency() -> None:
    # shares: a 0.6 s of 1.0 s, b 0.3 s, c 0.1 s; headroom = share x (1 - efficiency):
    # a 0.6 x 0.9 = 54%, b 0.3 x 0.5 = 15%, c 0.1 x 0 = 0%
    records = [_record("t::c", 0.1, 1.0), _record("t::a", 0.6, 0.1), _record("t::b", 0.3, 0.5),
               _record("t::unmeasured", None, None)]
    lines = table.headroom(records)
    order = [line.split()[0] for line in lines[2:]]
    assert order == ["t::a", "t::b", "t::c"]
    assert "54.0%" in lines[2] and "15.0%" in lines[3] and "0.0%" in lines[4]


def test_summary_shows_measured_columns_only_with_measurements() -> None:
    measured = [_record("t::a", 0.02, 0.5), _record("t::b", None, None)]
    lines = table.summary(measured, extra_columns=table.MEASURED_COLUMNS)
    assert "% roof" in lines[0] and "50%" in lines[1] + lines[2]
    assert table.has_measured(measured) and not table.has_measured([_record("x", None, None)])
    # a run above its bound with its figure (bound 10 ms / measured 1 ms), marked, never an
    # efficiency and never 100%; an old report's efficiency of 2.1 reads "faster!"
    fast = _record("t::f", 0.001, None, measured_note="faster-than-bound")
    assert table.percent_of_roof(fast) == "10x!"
    near = _record("t::n", 0.0097, None, measured_note="at-bound")
    assert table.percent_of_roof(near) == "103%~"
    assert table.percent_of_roof({"efficiency": 2.1}) == "faster!"
    assert table.percent_of_roof({"efficiency": None, "measured_note": "faster-than-bound"}
                                 ) == "faster!"


def test_markdown_shows_measured_and_percent_of_roof() -> None:
    text = markdown.render([_record("t::a", 0.02, 0.5)])
    assert "| measured | % of roof |" in text and "| 20 ms | 50% |" in text
    assert "% of roof" not in markdown.render([_record("t::a", None, None)])


def test_chart_points_carry_the_measured_performance() -> None:
    [chart] = plot.charts([_record("t::a", 0.02, 0.5)])
    [point] = chart.points
    assert point.measured == pytest.approx(1e9 / 0.02) and point.efficiency == 0.5


def test_chart_of_a_calibrated_chip_uses_the_records_not_this_machine() -> None:
    record = _record("t::a", 0.02, 0.5, hw="host")
    [chart] = plot.charts([record])  # must not calibrate this machine
    assert chart.bandwidth == pytest.approx(1e9 / 0.01)


def test_chart_draws_measured_points(tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    out = plot.write([_record("t::a", 0.02, 0.5)], tmp_path / "chart.png")
    assert out.stat().st_size > 0


def test_efficiency_rule_compares_measured_efficiency() -> None:
    [rule] = rules.parse_rules("efficiency:10%")
    base = _record("t::a", 0.02, 0.8)
    # 0.8 -> 0.7 is a fall of 12.5% of the baseline value: over 10%
    assert rule.check(base, _record("t::a", 0.02, 0.7)) is not None
    # 0.8 -> 0.75 is 6.25%: within
    assert rule.check(base, _record("t::a", 0.02, 0.75)) is None
    assert rule.check(base, _record("t::a", None, None)) is None  # not measured: not checked
    [points] = rules.parse_rules("efficiency:0.05")
    assert points.check(base, _record("t::a", 0.02, 0.74)) is not None


def test_synchronize_waits_for_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    stream = types.SimpleNamespace(synchronize=lambda: events.append("cupy"))
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(get_current_stream=lambda: stream))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    synchronize(None)
    assert events == ["cupy"]


@given(flops=st.floats(1.0, 1e15), nbytes=st.floats(1.0, 1e12),
       measured=st.floats(1e-9, 1e3))
def test_efficiency_is_the_bound_over_the_measured_time(flops: float, nbytes: float,
                                                        measured: float) -> None:
    r = rl.analyze(rl.Workload(flops=flops, bytes=nbytes, dtype="fp32"), CHIP,
                   measured=measured)
    ratio = float(r.time) / measured
    if ratio <= 1:
        assert r.efficiency == pytest.approx(ratio)
    else:  # at the bound within noise, or faster: no efficiency, never a clamped 1
        assert r.efficiency is None
        if abs(ratio - 1.05) > 1e-9:  # the allowance: 5% of the measured time
            assert ("faster than the bound" if ratio > 1.05 else
                    "at the bound within noise") in r.notes[-1]
    assert r.measured == measured and r.to_dict()["measured_s"] == measured


@given(st.lists(st.tuples(st.floats(1e-6, 10.0), st.floats(0.0, 1.0)), min_size=1,
                max_size=20))
def test_headroom_shares_add_up_and_rank_descending(rows: list[tuple[float, float]]) -> None:
    records = [_record(f"t::k{i}", t, e) for i, (t, e) in enumerate(rows)]
    lines = table.headroom(records, top=len(records))
    values = [float(line.split()[-1].rstrip("%")) for line in lines[2:]]
    assert values == sorted(values, reverse=True)
    assert sum(values) <= 100.0 + 0.05 * len(values)  # rounded to 0.1%


def test_terminal_chart_marks_the_measured_point() -> None:
    from pytest_roofline.report import ascii_plot

    text = ascii_plot.render([_record("t::a", 0.05, 0.2)])
    assert "@" in text and "measured 20% of roof (@)" in text
    assert "@" not in ascii_plot.render([_record("t::a", None, None)])


def test_faster_than_a_calibration_names_a_busy_calibration() -> None:
    calibrated = CHIP.replace(provenance={"device": "cpu"})
    r = rl.analyze(rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32"), calibrated,
                   measured=1e-3)
    assert "pytest-roofline calibrate" in diagnose.explain_faster(r, calibrated)
    assert "calibrate" not in diagnose.explain_faster(r, CHIP)


# -- per-thread memory roofs -------------------------------------------------------------------

# CHIP with a calibration's per-thread table: 1 thread reaches 40 GB/s, 2 threads 100 GB/s.
THREADED = CHIP.replace(memory_by_threads={2: 100e9, 1: 40e9})
ADD_12GB = rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32")  # 12 GB moved


def _timed(seconds: float, parallelism: float | None) -> Measurement:
    return Measurement(time=seconds, spread=0.0, best=seconds, samples=(seconds,),
                       parallelism=parallelism)


def test_parallelism_is_the_median_cpu_time_over_wall_time() -> None:
    # CPU/wall per sample: 1.0, 2.0, 1.9 -> median 1.9
    m = Measurement.from_samples([1.0, 1.0, 1.0], cpu=[1.0, 2.0, 1.9])
    assert m.parallelism == pytest.approx(1.9)
    assert m.to_dict()["parallelism"] == pytest.approx(1.9)
    assert Measurement.from_samples([1.0]).parallelism is None  # no CPU times: unknown


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "1", True])
def test_measurement_refuses_a_bad_parallelism(bad: Any) -> None:
    with pytest.raises(MeasureError, match="parallelism"):
        _timed(1.0, bad)


def test_a_python_loop_keeps_at_most_one_core_busy() -> None:
    # One thread's CPU time cannot exceed the wall time; 0.1 covers clock granularity.
    m = measure(lambda: sum(i * i for i in range(20000)))
    assert m.parallelism is not None and 0 < m.parallelism <= 1.1


def test_combined_measurements_add_times_and_keep_the_largest_parallelism() -> None:
    from pytest_roofline.measuring.timing import combined

    both = combined([_timed(1.0, 1.0), _timed(2.0, 1.8)])
    assert both.time == 3.0 and both.parallelism == 1.8
    assert combined([_timed(1.0, 1.0), _timed(2.0, None)]).parallelism is None
    with pytest.raises(MeasureError):
        combined([])


@pytest.mark.parametrize(("parallelism", "threads", "bandwidth"), [
    (None, None, 100e9), (0.3, 1, 40e9), (1.0, 1, 40e9), (1.1, 1, 40e9), (1.2, 2, 100e9),
    (2.0, 2, 100e9), (2.1, 2, 100e9), (3.0, None, 100e9)])
def test_memory_roof_is_that_of_the_threads_kept_busy(
        parallelism: float | None, threads: int | None, bandwidth: float) -> None:
    # the smallest calibrated count >= parallelism - 0.1; above every count, the chip's roof
    assert THREADED.memory_roof(parallelism) == (threads, bandwidth)
    assert CHIP.memory_roof(parallelism) == (None, 100e9)  # no table: always the chip's roof


def test_a_single_threaded_measurement_is_set_against_the_single_thread_roof() -> None:
    # 1 thread: bound 12e9 B / 40e9 B/s = 0.3 s; measured 0.6 s -> efficiency 0.5
    one = rl.analyze(ADD_12GB, THREADED, measured=_timed(0.6, 1.0))
    assert one.time == pytest.approx(0.3) and one.efficiency == pytest.approx(0.5)
    assert one.roof_threads == 1 and one.bandwidth == 40e9
    assert one.to_dict()["roof_threads"] == 1
    # 2 threads: bound 0.12 s -> efficiency 0.2
    two = rl.analyze(ADD_12GB, THREADED, measured=_timed(0.6, 2.0))
    assert two.time == pytest.approx(0.12) and two.roof_threads == 2
    # a bare number says nothing of threads, and an unmeasured analysis is the chip's bound
    for r in (rl.analyze(ADD_12GB, THREADED, measured=0.6), rl.analyze(ADD_12GB, THREADED)):
        assert r.time == pytest.approx(0.12) and r.roof_threads is None
        assert "roof_threads" not in r.to_dict()


def test_a_compute_bound_measurement_keeps_the_peak_of_every_core() -> None:
    # 1e12 FLOPs of 2048^3-like intensity: compute-bound; only the memory roof is per thread
    gemm = rl.ops.matmul(8192, 8192, 8192, dtype="fp32")
    r = rl.analyze(gemm, THREADED, measured=_timed(10.0, 1.0))
    assert r.regime == "compute" and r.peak == 1e12
    assert r.time == pytest.approx(2 * 8192**3 / 1e12)


def test_the_failure_line_names_the_per_thread_roof() -> None:
    r = rl.analyze(ADD_12GB, THREADED, measured=_timed(3.0, 1.0))
    line = diagnose.efficiency_failure(r, 0.5)
    assert line is not None and "1-thread memory roof" in line and "300 ms" in line
    faster = diagnose.explain_faster(rl.analyze(ADD_12GB, THREADED, measured=_timed(0.1, 1.0)))
    assert "1-thread memory roof" in faster


@pytest.mark.parametrize(("table", "match"), [
    ({0: 1e9}, "thread count"), ({1: 2e11}, "at most memory.bandwidth"),
    ({1: -1.0}, "at most memory.bandwidth"), ({True: 1e9}, "thread count")])
def test_a_bad_per_thread_table_is_refused(table: dict[Any, float], match: str) -> None:
    from pytest_roofline.errors import SpecError

    with pytest.raises(SpecError, match=match):
        CHIP.replace(memory_by_threads=table)


def test_a_measurement_taken_here_is_refused_against_a_chip_this_machine_is_not() -> None:
    """measure() timed this CPU: against a published H100 it is no efficiency at all. A
    number of seconds (a published measurement) is the caller's figure and is allowed."""
    w = rl.ops.elementwise(1000, dtype="fp64")
    m = measure(sum, range(100))
    assert m.here and not Measurement.from_samples([1e-3]).here
    with pytest.raises(RooflineError, match="against h100-sxm is refused: the call was timed "
                                            "on this machine"):
        rl.analyze(w, "h100", measured=m)
    assert rl.analyze(w, "h100", measured=m.time).efficiency is not None
    # the user's own spec is taken at its word. Its roofs are far above any CPU's (16 kB at
    # 10 TB/s: 1.6 ns), so no timing of sum(range(100)) (about 1.5 us) can beat its bound; at
    # 10 GB/s the bound was 1.6 us, and a quick run read "faster than the bound"
    mine = Hardware(name="my-box", memory_bandwidth=1e13, memory_capacity=1e10,
                    matrix={"fp64": 1e14}, default_dtype="fp64", vector_fallback="matrix")
    assert rl.analyze(w, mine, measured=m).efficiency is not None
    other = mine.replace(provenance={"device": "cpu", "model": "Some Other CPU 9000"})
    with pytest.raises(RooflineError, match="calibration of another machine's CPU"):
        rl.analyze(w, other, measured=m)


def test_vector_work_in_a_precision_the_host_lacks_names_the_dtype_to_give() -> None:
    """ops.elementwise(1024) on host said 'set vector_fallback: matrix', which a calibrated
    spec already sets: the fix is the op's dtype."""
    host = Hardware(name="host-like", memory_bandwidth=1e10, memory_capacity=1e10,
                    matrix={"fp64": 1e11, "fp32": 2e11}, default_dtype="fp64",
                    vector_fallback="matrix")
    with pytest.raises(RooflineError, match=r"host-like has no bf16 peak: its vector work runs "
                                            r"on the matrix units \(vector_fallback: matrix\), "
                                            r"which list fp64, fp32; give the op one of those "
                                            r"precisions \(dtype='fp64'\)"):
        rl.analyze(rl.ops.elementwise(1024), host)


def test_mfu_is_model_matrix_flops_over_time_and_peak() -> None:
    from pytest_roofline.engine.workload import total
    from pytest_roofline.judging.mfu import mfu

    # a 4096^3 fp32 GEMM (2 * 4096^3 = 137.4 GFLOP) measured at 0.5 s on a 1 TFLOP/s chip:
    # MFU = 137.4e9 / (0.5 s * 1e12 FLOP/s) = 0.2749
    gemm = rl.ops.matmul(4096, 4096, 4096, dtype="fp32")
    assert mfu(rl.analyze(gemm, CHIP, measured=0.5), gemm) == pytest.approx(2 * 4096**3 / 0.5e12)
    assert mfu(rl.analyze(gemm, CHIP), gemm) is None  # not measured
    # the forward recomputed for the backward counts as hardware FLOPs, not model FLOPs
    again = rl.Workload([rl.Kernel("recompute.mm", 2 * 4096**3, 1e8, dtype="fp32")])
    step = total([gemm, again], name="step")
    assert mfu(rl.analyze(step, CHIP, measured=1.0), step) == pytest.approx(2 * 4096**3 / 1e12)
    # vector work alone has no model FLOPs
    add = rl.ops.elementwise(10**6, dtype="fp32")
    assert mfu(rl.analyze(add, CHIP, measured=1.0), add) is None


def test_mfu_never_reads_above_the_efficiency() -> None:
    from pytest_roofline.judging.mfu import mfu

    # A GEMM is compute-bound: its bound is its matrix peak's time, 2*4096^3 / 1e12 = 0.1374 s.
    # Measured 2% under it (within the 5% a calibration repeats to) it is at the bound, with
    # no efficiency and no MFU (a host summary once showed MFU 109% beside 100% of roof);
    # just over the bound both read below 1. At half the bound: no MFU at all.
    gemm = rl.ops.matmul(4096, 4096, 4096, dtype="fp32")
    bound = rl.analyze(gemm, CHIP).time
    near = rl.analyze(gemm, CHIP, measured=0.98 * bound)
    assert near.efficiency is None and mfu(near, gemm) is None
    over = rl.analyze(gemm, CHIP, measured=1.02 * bound)
    assert over.efficiency == pytest.approx(1 / 1.02)
    assert mfu(over, gemm) is not None and mfu(over, gemm) <= over.efficiency
    faster = rl.analyze(gemm, CHIP, measured=0.5 * bound)
    assert faster.efficiency is None and mfu(faster, gemm) is None
