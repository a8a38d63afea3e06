"""Comparing reports: regressions, new and vanished results, exactness.

Records come from real analyses of ``ops.matmul(m, 8192, 8192)`` in bf16. Its intensity is
2*m*8192*8192 FLOP over 2*(m*8192 + 8192*8192 + m*8192) B = m*8192 / (8192 + 2m) FLOP/B.
On h100-sxm (989.4 TFLOP/s bf16 dense over 3.35 TB/s: ridge 295.3 FLOP/B, whitepaper figures
in specs/hardware/h100-sxm.yaml) that crosses the ridge between m = 318 (295.09 FLOP/B) and
m = 319 (295.95 FLOP/B): the smallest parameter change that moves a test across the ridge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import analyze, ops
from pytest_roofline.report.compare import Comparison, check_record, compare, index
from pytest_roofline.report.records import key, load_report, make_record, make_report, write_report
from pytest_roofline.report.rules import parse_rules


def record(nodeid: str, m: int, hw: str = "h100", expected: tuple[str, ...] | None = None,
           **extra: Any) -> dict[str, Any]:
    result = analyze(ops.matmul(m, 8192, 8192), hw)
    rec = make_record(nodeid, result, expected, "report" if expected is None else "passed")
    rec.update(extra)
    return rec


def report(*records: dict[str, Any]) -> dict[str, Any]:
    return make_report(records, {"flops_per_mac": 2, "derate": 1.0})


def test_the_ridge_crossing_used_here_is_where_the_formula_says() -> None:
    assert record("t", 318)["regime"] == "memory"
    assert record("t", 319)["regime"] == "compute"
    assert record("t", 318)["intensity"] == pytest.approx(318 * 8192 / (8192 + 636), rel=1e-12)


def test_one_step_across_the_ridge_is_a_regression_with_no_threshold() -> None:
    result = compare(report(record("t.py::test_a", 319)), report(record("t.py::test_a", 318)))
    assert result.failed
    (reg,) = result.regressions
    assert reg.rule == "regime"
    assert (reg.base, reg.new) == ("compute", "memory")
    assert reg.key == ("t.py::test_a", "h100-sxm", "bf16")
    assert reg.message == ("h100-sxm (bf16): regime changed from compute to memory; intensity "
                           "296.0 -> 295.1 FLOP/B, ridge 295.3 FLOP/B (rule regime: a change "
                           "of bottleneck always counts)")
    assert reg.line.startswith("t.py::test_a: h100-sxm (bf16): regime changed")


def test_a_change_of_regime_in_either_direction_counts() -> None:
    result = compare(report(record("t", 32)), report(record("t", 4096)))
    assert [(r.base, r.new) for r in result.regressions] == [("memory", "compute")]


def test_rules_apply_on_top_of_the_regime_check_each_one() -> None:
    # m 4096 -> 2048: both compute-bound; intensity 2048.0 -> 1365.3 (-33.3%), time halves.
    base, new = report(record("t", 4096)), report(record("t", 2048))
    assert not compare(base, new).failed
    assert not compare(base, new, ["intensity:40%"]).failed
    result = compare(base, new, ["intensity:10%", "time:5%"])
    assert [r.rule for r in result.regressions] == ["intensity:10%"]
    assert result.regressions[0].message == (
        "h100-sxm (bf16): intensity fell from 2048.0 FLOP/B to 1365.3 FLOP/B (-33.3%), over "
        "the limit of 10% (rule intensity:10%)")
    assert result.regressions[0].base == pytest.approx(2048.0)
    # the reverse change: time doubles
    back = compare(new, base, parse_rules(["time:5%"]))
    assert [r.rule for r in back.regressions] == ["time:5%"]
    assert "time bound rose from" in back.regressions[0].message


def test_new_vanished_unchanged_and_changed_are_told_apart() -> None:
    base = report(record("t::same", 64), record("t::grew", 4096), record("t::gone", 8))
    new = report(record("t::same", 64), record("t::grew", 8192), record("t::added", 8))
    result = compare(base, new, ["intensity:10%"], base="main")
    assert not result.failed
    assert result.unchanged == (("t::same", "h100-sxm", "bf16"),)
    assert result.changed == (("t::grew", "h100-sxm", "bf16"),)
    assert result.new == (("t::added", "h100-sxm", "bf16"),)
    assert result.vanished == (("t::gone", "h100-sxm", "bf16"),)
    assert result.compared == 2
    assert result.summary() == ("no regression in 2 results compared; 1 unchanged, 1 changed "
                                "within the rules; 1 new, 1 vanished")
    lines = result.lines()
    assert "New since the baseline, not compared (1):" in lines
    assert "  t::gone on h100-sxm (bf16)" in lines


def test_a_report_compared_with_itself_through_json_is_exactly_unchanged(tmp_path: Path) -> None:
    original = report(*(record(f"t::m{m}", m, hw) for m in (1, 7, 319, 5000)
                        for hw in ("h100", "a100")))
    write_report(tmp_path / "r.json", original)
    loaded = load_report(tmp_path / "r.json")
    loaded["machine"] = {"python": "0.0", "platform": "elsewhere", "node": "other"}
    loaded["datetime"] = "2000-01-01T00:00:00+00:00"
    result = compare(original, loaded, ["intensity:0%", "time:0%", "flops:0%", "bytes:0%"])
    assert not result.failed
    assert len(result.unchanged) == 8 and not result.changed and not result.warnings


def test_per_chip_results_are_keyed_by_test_chip_and_precision() -> None:
    base = report(record("t", 4096, "h100"), record("t", 4096, "a100"))
    # m = 200: memory-bound on h100 (ridge 295.3) but compute-bound on a100 (ridge 153.0)
    new = report(record("t", 200, "h100"), record("t", 200, "a100"))
    result = compare(base, new)
    assert [r.key[1] for r in result.regressions] == ["h100-sxm"]


def test_check_record_gives_the_plugin_one_tests_messages() -> None:
    baseline = index([record("t::a", 4096), record("t::b", 4096)])
    assert check_record(baseline, record("t::a", 4096), ["time:1%"]) == []
    messages = check_record(baseline, record("t::b", 32), parse_rules(["intensity:10%"]))
    assert len(messages) == 2
    assert messages[0].startswith("h100-sxm (bf16): regime changed from compute to memory")
    assert "rule intensity:10%" in messages[1]
    assert check_record(baseline, record("t::new", 32)) == []  # new: listed, never failed


def test_repeated_keys_in_one_report_are_matched_in_order() -> None:
    base = report(record("t", 4096), record("t", 32))
    new = report(record("t", 4096), record("t", 16))
    keys = list(index(base["results"]))
    assert keys[1][0] == "t #2"
    assert not compare(base, new).failed
    assert compare(base, report(record("t", 4096), record("t", 1000))).regressed == (
        ("t #2", "h100-sxm", "bf16"),)


def test_losing_the_memory_fit_always_counts() -> None:
    base = report(record("t", 64, footprint_B=70e9, capacity_B=80e9, fits=True))
    new = report(record("t", 64, footprint_B=90e9, capacity_B=80e9, fits=False))
    (reg,) = compare(base, new).regressions
    assert reg.rule == "fits"
    assert reg.message == ("h100-sxm (bf16): no longer fits in memory: footprint 70 GB -> 90 GB, "
                           "capacity 80 GB (rule fits)")


def test_unlike_settings_and_changed_specs_are_warned_about() -> None:
    base = report(record("t", 64))
    halved = record("t", 64)
    halved.update(flops_per_mac=1, ridge=halved["ridge"] / 2)
    result = compare(base, report(halved))
    assert any("FLOPs per multiply-accumulate 2, this run 1" in w for w in result.warnings)
    assert any("the ridge of h100-sxm (bf16) moved from 295.3 to 147.7" in w
               for w in result.warnings)


def test_records_without_figures_are_compared_without_crashing() -> None:
    broken = {"nodeid": "t", "hw": "h100-sxm", "dtype": "bf16", "flops": None, "bytes": None,
              "intensity": None, "ridge": None, "regime": None, "time_s": None,
              "outcome": "error"}
    result = compare(report(record("t", 64)), [broken], ["intensity:1%", "time:1%"])
    assert not result.failed and result.changed == (key(broken),)


def test_a_comparison_serialises_to_json() -> None:
    result = compare(report(record("t", 4096)), report(record("t", 32)), ["intensity:10%"],
                     base="main")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["failed"] is True and data["base"] == "main"
    assert data["checks"] == ["regime", "fits", "intensity:10%"]
    assert [r["rule"] for r in data["regressions"]] == ["regime", "intensity:10%"]
    assert isinstance(result, Comparison) and result.for_test("t") == result.regressions
