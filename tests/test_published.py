"""No published measurement beats its bound, and the bounds stay useful (see published.py)."""

from __future__ import annotations

import statistics

import pytest
from published import CASES, Case


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_published_measurement_beats_its_bound(case: Case) -> None:
    efficiency = case.efficiency()
    print(f"{case.name}: efficiency {efficiency:.1%} ({case.source})")
    assert 0 < efficiency <= 1.0, (
        f"{case.name}: the measurement ({case.measured:g} {case.unit}) beats the bound "
        f"({case.bound():g} {case.unit}): a term is overcounted")


def test_the_table_covers_enough_chips_and_families() -> None:
    assert len(CASES) >= 20
    assert len({c.hw for c in CASES}) >= 4
    assert len({c.family for c in CASES}) >= 3
    assert all("http" in c.source for c in CASES)


def test_bounds_stay_useful_on_exactly_modelled_cases() -> None:
    # Charging nothing would also be a bound, and a worthless one: real systems reach
    # 40-90% of a useful one.
    efficiencies = sorted(c.efficiency() for c in CASES if c.exact)
    median = statistics.median(efficiencies)
    print(f"median efficiency {median:.1%} over {len(efficiencies)} cases, "
          f"range {efficiencies[0]:.1%}..{efficiencies[-1]:.1%}")
    assert 0.40 <= median <= 0.90
