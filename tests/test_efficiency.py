"""The one rule that sets a measured time against its bound (pytest_roofline.efficiency):
four outcomes, an allowance capped at the timer's tick or a small fraction, one spread."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_roofline.efficiency import (
    AT_BOUND,
    CACHE,
    FASTER,
    NO_WORK,
    PEAK,
    SPREAD_CAP,
    TOLERANCE,
    efficiency,
    figure,
    finding_for,
    fraction,
    percent,
    quantile,
    spread,
)
from pytest_roofline.measuring.timing import Measurement


@pytest.mark.parametrize(("bound", "measured", "note", "value", "cell"), [
    (0.5, 1.0, None, 0.5, "50%"),          # under the bound: the efficiency
    (1.0, 1.0, None, 1.0, "100%"),         # exactly at it: 100% is earned, not clamped
    (1.03, 1.0, AT_BOUND, None, "103%~"),  # 3% over, within 5%: its figure, marked
    (1.6, 1.0, FASTER, None, "160%!"),     # beyond: a finding, with its figure
    (3000.0, 1.0, FASTER, None, "3e+03x!"),
    (0.0, 1.0, NO_WORK, None, "no work"),  # a view: time spent doing no work
])
def test_four_outcomes_each_with_its_figure(bound: float, measured: float, note: str | None,
                                            value: float | None, cell: str) -> None:
    judged = efficiency(bound, measured)
    assert judged.note == note and judged.value == value and judged.percent() == cell


def test_the_words_of_each_outcome() -> None:
    assert efficiency(1.6, 1.0).describe() == "faster than the bound: 160% of it"
    assert efficiency(1.03, 1.0).describe() == "at the bound within noise: 103% of it"
    assert efficiency(0.68, 1.0).describe() == "68% of the roof"
    assert efficiency(0.0, 1.0).describe() == "time spent doing no work"
    assert efficiency(3068.0, 1.0).describe() == "faster than the bound: 3,068 times it"
    # a time of 0 beyond one tick has no ratio to show
    zero = efficiency(5e-6, 0.0, tick=1e-6)
    assert zero.faster and zero.ratio is None and zero.percent() == "faster!"
    assert zero.describe() == "faster than the bound: measured 0, beyond one timer tick"
    assert figure(None) == "measured 0, beyond one timer tick"


def test_a_tick_a_kernel_zero_duration_kernels_included() -> None:
    # three kernels timed at 0 on a 1 us clock: up to 3 us of work may hide in them
    assert not efficiency(2.9e-6, 0.0, tick=1e-6, kernels=3).faster
    assert efficiency(3.1e-6, 0.0, tick=1e-6, kernels=3).faster
    assert efficiency(1.1e-6, 0.0, tick=1e-6, kernels=1).faster


@given(spread_=st.floats(0, 1e6, allow_nan=False))
def test_the_fraction_is_capped_whatever_the_spread(spread_: float) -> None:
    assert TOLERANCE <= fraction(spread_) <= SPREAD_CAP
    assert efficiency(1.0, 1.0 / (1 + SPREAD_CAP) * 0.99, spread=spread_).faster


def test_nan_spread_is_no_spread() -> None:
    assert fraction(float("nan")) == TOLERANCE


def test_one_spread_for_a_measurement_and_a_profile_row() -> None:
    samples = [0.08, 0.1, 0.12, 0.13]
    # IQR / median by linear quantiles: (0.1225 - 0.095) / 0.11
    assert spread(samples) == pytest.approx((0.1225 - 0.095) / 0.11)
    assert Measurement.from_samples(samples).spread == spread(samples)
    assert spread(samples[:3], 4) == 0.0  # a profile row needs four calls
    assert spread([0.0, 0.0]) == 0.0


@pytest.mark.parametrize(("ratio", "text"), [(0.68, "68%"), (0.005, "0.5%"),
                                             (0.00023, "2.3e-02%"), (0.0, "0%"),
                                             (1.57, "157%"), (25.0, "25x"),
                                             (87000.0, "9e+04x")])
def test_percent_stays_narrow(ratio: float, text: str) -> None:
    assert percent(ratio) == text


# -- what the mutation run (tools/mutate.py, docs/mutation.md) found no test for ---------------

def test_the_allowance_is_5_percent_widened_by_the_spread_to_10() -> None:
    """The figures themselves (the test above holds for any constants): 5% of the measured
    time with no spread, the spread itself between 5% and 10%, 10% beyond."""
    assert fraction() == 0.05 and fraction(0.0) == 0.05
    assert fraction(0.08) == 0.08
    assert fraction(1.0) == 0.10 and fraction(0.5) == 0.10
    # no spread given: 5%, so 7% over the bound is beyond it (10% would be within)
    assert efficiency(1.07, 1.0).note == FASTER
    assert efficiency(1.07, 1.0, spread=0.1).note == AT_BOUND


def test_one_tick_for_one_kernel_by_default() -> None:
    # measured 0 on a 1 us clock, bound 1.5 us: one kernel hides at most 1 us, so faster
    assert efficiency(1.5e-6, 0.0, tick=1e-6).faster
    assert not efficiency(1.5e-6, 0.0, tick=1e-6, kernels=2).faster


def test_the_ratio_is_bound_over_measured() -> None:
    judged = efficiency(1.0, 4.0)          # a quarter of the roof
    assert judged.ratio == 0.25 and judged.value == 0.25 and judged.percent() == "25%"


def test_spread_at_its_minimum_count_and_of_one_sample() -> None:
    samples = [0.08, 0.1, 0.12, 0.13]
    assert spread(samples, 4) == spread(samples) > 0   # four calls: a row has its spread
    assert spread([0.1]) == 0.0                        # one sample: no spread, no error
    assert quantile([1.0, 2.0, 3.0], 1.0) == 3.0 and quantile([5.0], 0.5) == 5.0


def test_percent_switches_at_10x_and_at_a_thousandth() -> None:
    assert percent(10.0) == "10x" and percent(9.99) == "999%"
    assert percent(0.001) == "0.1%" and percent(0.00099) == "9.9e-02%"
    assert percent(0.01) == "1%" and percent(0.0099) == "1.0%"
    assert percent(999.0) == "999x" and percent(1000.0) == "1e+03x"
    assert figure(10.0) == "10 times it" and figure(9.5) == "950% of it"


def test_a_finding_above_the_roof_is_peak_for_compute_and_cache_otherwise() -> None:
    assert finding_for("compute") == PEAK == "peak"
    assert finding_for("memory") == CACHE == "cache" and finding_for("network") == CACHE


def test_an_efficiency_is_a_frozen_value_with_slots() -> None:
    import dataclasses

    judged = efficiency(0.5, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        judged.bound = 2.0  # type: ignore[misc]
    assert not hasattr(judged, "__dict__")


def test_exactly_at_the_allowance_is_at_the_bound() -> None:
    """Bound 1.0625 s against 1 s measured with a spread of 6.25%: the allowance is 0.0625 s,
    exactly (binary fractions), so the bound is at the edge of it: at the bound, whether or
    not a physical limit under it is given; beyond the edge, above the roof."""
    from pytest_roofline.efficiency import ABOVE_ROOF

    assert efficiency(1.0625, 1.0, spread=0.0625).allowance == 0.0625
    assert efficiency(1.0625, 1.0, spread=0.0625).note == AT_BOUND
    assert efficiency(1.0625, 1.0, spread=0.0625, limit=0.9).note == AT_BOUND
    assert efficiency(1.07, 1.0, spread=0.0625, limit=0.9).note == ABOVE_ROOF
    # the same under a second (0.5 s measured, allowance 0.03125 s)
    assert efficiency(0.53125, 0.5, spread=0.0625).note == AT_BOUND
    assert efficiency(0.535, 0.5, spread=0.0625, limit=0.45).note == ABOVE_ROOF


def test_the_physical_limit_is_never_above_the_bound() -> None:
    from pytest_roofline.efficiency import Efficiency

    assert Efficiency(bound=1.0, measured=1.0, allowance=0.0, limit=2.0).floor == 1.0
    assert Efficiency(bound=1.0, measured=1.0, allowance=0.0, limit=0.5).floor == 0.5
    # efficiency() keeps a given limit between 0 and the bound
    assert efficiency(1.0, 1.0, limit=2.0).limit == 1.0
    assert efficiency(1.0, 1.0, limit=0.5).limit == 0.5
    assert efficiency(1.0, 1.0, limit=-1.0).limit == 0.0
