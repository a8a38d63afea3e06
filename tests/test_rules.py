"""Compare rules: the grammar, the errors, and when a rule counts a change as a regression."""

from __future__ import annotations

import re

import pytest

from pytest_roofline.errors import RooflineError, RuleError
from pytest_roofline.report.rules import (
    GRAMMAR,
    METRICS,
    Rule,
    describe,
    parse_rule,
    parse_rules,
    relative_change,
)


@pytest.mark.parametrize(
    ("text", "metric", "threshold", "relative"),
    [
        ("intensity:10%", "intensity", 10.0, True),
        ("time:5%", "time", 5.0, True),
        ("time:0%", "time", 0.0, True),
        ("TIME : 2.5 %", "time", 2.5, True),
        ("intensity:5", "intensity", 5.0, False),
        ("intensity:5 FLOP/B", "intensity", 5.0, False),
        ("time:2us", "time", 2e-6, False),
        ("time:1.5 ms", "time", 1.5e-3, False),
        ("flops:1GFLOP", "flops", 1e9, False),
        ("bytes:64MB", "bytes", 64e6, False),
        ("bytes:1GiB", "bytes", 2.0**30, False),  # binary prefix kept apart from decimal
        ("footprint:1 GB", "footprint", 1e9, False),
    ],
)
def test_parse_rule_reads_metric_limit_and_kind(text: str, metric: str, threshold: float,
                                                relative: bool) -> None:
    rule = parse_rule(text)
    assert (rule.metric, rule.relative) == (metric, relative)
    assert rule.threshold == pytest.approx(threshold, rel=1e-12)


def test_a_rule_prints_as_written_and_equal_rules_compare_equal() -> None:
    assert str(parse_rule("time: 2 us")) == "time:2us"
    assert parse_rule("intensity:10%") == Rule("intensity", 10.0, relative=True)
    assert str(Rule("time", 5.0, relative=True)) == "time:5%"
    assert str(Rule("intensity", 5.0, relative=False)) == "intensity:5"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("intensity", "no METRIC:LIMIT"),
        ("intens:10%", "Did you mean 'intensity'"),
        ("regime:1%", "always checked"),
        ("intensity:-5%", "must be >= 0"),
        ("intensity:ten", "neither a percentage nor a number of FLOP/B"),
        ("intensity:5 GB", "neither a percentage"),
        ("time:fast", "cannot parse 'fast'"),
        ("bytes:2 TFLOP/s", "not a data size"),
        ("time:5 GB", "not a time"),
        # efficiency is at most 1 (100% of the roof): a fall of 2 never happens, so the
        # rule would never fire; 2% was meant
        ("efficiency:2", "'efficiency:2%'"),
        ("efficiency:1", "a fall of 1 points of roof never happens"),
        ("time:inf%", "'inf%' is not a percentage"),
    ],
)
def test_a_bad_rule_names_itself_and_the_grammar(text: str, says: str) -> None:
    with pytest.raises(RuleError) as info:
        parse_rule(text)
    message = str(info.value)
    assert repr(text) in message
    assert says in message
    assert GRAMMAR in message


def test_rule_error_is_both_a_roofline_error_and_a_value_error() -> None:
    with pytest.raises(RooflineError):
        parse_rule("bogus")
    with pytest.raises(ValueError):
        parse_rule("bogus")


def test_a_rule_object_validates_itself() -> None:
    with pytest.raises(RuleError, match="unknown rule metric 'speed'"):
        Rule("speed", 1.0, relative=True)
    with pytest.raises(RuleError, match="finite number >= 0"):
        Rule("time", -1.0, relative=True)
    with pytest.raises(RuleError, match="finite number >= 0"):
        Rule("time", float("nan"), relative=False)


def test_parse_rules_keeps_every_value_of_a_repeated_option_and_splits_commas() -> None:
    found = parse_rules(["intensity:10%,time:5%", "bytes:1%", "intensity:10%"])
    assert [str(r) for r in found] == ["intensity:10%", "time:5%", "bytes:1%"]
    assert parse_rules(None) == ()
    assert parse_rules("time:1%") == (Rule("time", 1.0, relative=True),)
    with pytest.raises(RuleError, match="no rule in it"):
        parse_rules([" , "])


def test_describe_lists_the_built_in_checks_first() -> None:
    assert describe(parse_rules(["time:5%"])) == "regime, fits, time:5%"


# -- when a rule breaks -----------------------------------------------------------------------


def test_intensity_rule_fails_only_when_intensity_falls_by_more_than_the_limit() -> None:
    rule = parse_rule("intensity:10%")
    assert rule.check({"intensity": 100.0}, {"intensity": 90.0}) is None  # exactly 10%: kept
    assert rule.check({"intensity": 100.0}, {"intensity": 89.9}) is not None
    assert rule.check({"intensity": 100.0}, {"intensity": 500.0}) is None  # a rise is fine


def test_the_message_names_baseline_value_new_value_change_limit_and_rule() -> None:
    # matmul 4096^3 in bf16: 2*4096^3 FLOP over 3*4096^2*2 B = 1365.3 FLOP/B;
    # matmul 32x8192x8192: 2*32*8192^2 / (2*(2*32*8192 + 8192^2)) = 31.75 FLOP/B.
    base = {"intensity": 2 * 4096**3 / (3 * 4096**2 * 2)}
    new = {"intensity": 32 * 8192 / (8192 + 64)}
    message = parse_rule("intensity:10%").check(base, new)
    assert message == ("intensity fell from 1365.3 FLOP/B to 31.8 FLOP/B (-97.7%), over the "
                       "limit of 10% (rule intensity:10%)")


def test_time_rule_fails_when_the_bound_time_rises() -> None:
    rule = parse_rule("time:5%")
    assert rule.check({"time_s": 100e-6}, {"time_s": 105e-6}) is None
    message = rule.check({"time_s": 100e-6}, {"time_s": 110e-6})
    assert message == ("time bound rose from 100 us to 110 us (+10.0%), over the limit of 5% "
                       "(rule time:5%)")
    assert rule.check({"time_s": 100e-6}, {"time_s": 50e-6}) is None


def test_absolute_rules_compare_amounts_in_the_metric_unit() -> None:
    assert parse_rule("time:2us").check({"time_s": 10e-6}, {"time_s": 11.9e-6}) is None
    message = parse_rule("time:2us").check({"time_s": 10e-6}, {"time_s": 12.5e-6})
    assert message is not None and "over the limit of 2 us (rule time:2us)" in message
    assert parse_rule("intensity:5").check({"intensity": 50.0}, {"intensity": 45.0}) is None
    assert parse_rule("intensity:5").check({"intensity": 50.0}, {"intensity": 44.0})
    assert parse_rule("bytes:1MB").check({"bytes": 10e6}, {"bytes": 11.5e6})


def test_a_zero_limit_fails_on_any_worsening_because_figures_are_exact() -> None:
    rule = parse_rule("flops:0%")
    assert rule.check({"flops": 1e9}, {"flops": 1e9}) is None
    assert rule.check({"flops": 1e9}, {"flops": 1e9 + 1}) is not None


def test_records_without_a_number_are_not_checked() -> None:
    rule = parse_rule("intensity:1%")
    assert rule.check({"intensity": None}, {"intensity": 1.0}) is None
    assert rule.check({}, {"intensity": 1.0}) is None
    assert rule.check({"intensity": 5.0}, {"intensity": True}) is None


def test_relative_change_spells_out_its_limits() -> None:
    assert relative_change(100.0, 90.0) == pytest.approx(-10.0)
    assert relative_change(0.0, 1.0) == float("inf")
    assert relative_change(float("inf"), 5.0) == -100.0
    assert relative_change(3.0, 3.0) == 0.0
    # a time that was zero and is not any more breaks any relative limit
    assert parse_rule("time:50%").check({"time_s": 0.0}, {"time_s": 1e-9}) is not None


def test_every_metric_reads_a_field_that_records_have() -> None:
    from pytest_roofline.report.records import REQUIRED

    fields = {m.field for m in METRICS.values()}
    # footprint_B and efficiency are optional: absent when unknown / not measured
    assert fields - {"footprint_B", "efficiency"} <= set(REQUIRED)


@pytest.mark.parametrize(("rule", "offered"), [
    ("time:5", "'time:5%' (a share of the baseline value) or 'time:5ms' (an amount)"),
    ("bytes:64", "'bytes:64%' (a share of the baseline value) or 'bytes:64MB' (an amount)"),
    ("footprint: 1", "'footprint:1%'"),
    ("flops:2", "'flops:2GFLOP'"),
])
def test_a_bare_number_on_a_dimensioned_metric_asks_for_a_unit_or_a_percentage(
        rule: str, offered: str) -> None:
    """`time:5` meant 5 seconds, which never fires on a millisecond workload."""
    with pytest.raises(RuleError, match=re.escape(f"bad compare rule {rule!r}: ")) as info:
        parse_rules([rule])
    assert "needs a unit or a percentage" in str(info.value) and offered in str(info.value)
    assert parse_rules(["intensity:5"])[0].threshold == 5.0  # FLOP/B, its only unit


def test_a_bad_limit_quotes_the_rule_as_typed() -> None:
    with pytest.raises(RuleError, match=re.escape("bad compare rule 'time:1e400%': the limit "
                                                  "must be a finite number >= 0, got inf")):
        parse_rules(["time:1e400%"])
