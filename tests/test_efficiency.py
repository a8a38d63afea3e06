"""The one rule that sets a measured time against its bound (pytest_roofline.efficiency):
four outcomes, an allowance capped at the timer's tick or a small fraction, one spread."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_roofline.efficiency import (
    AT_BOUND,
    FASTER,
    NO_WORK,
    SPREAD_CAP,
    TOLERANCE,
    efficiency,
    figure,
    fraction,
    percent,
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
