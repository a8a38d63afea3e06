"""A measured time against its roofline bound: the one rule every layer judges by.

A roofline time is a lower bound: no honest run of the same work on the same chip is faster.
Two ceilings judge a measurement (:mod:`pytest_roofline.engine.limits` works out the second):

* **the roof**, what the % reads against: the memory the work is priced on (DRAM) and the
  peak of its precision, the roofline bound users know;
* **the physical limit**, what the alarm reads against: the fastest place its data could
  come from (what fits in the last-level cache at that cache's bandwidth, the rest from
  DRAM) and the chip's theoretical peak (on a calibrated CPU: cores x FMA lanes x the
  highest clock, not a timed roof). It is never above the roof; without cache figures it is
  the roof itself.

So a measurement sets against its bound in one of five ways, decided here for the measured
test (``analyze(..., measured=)``), the per-kernel profile and the judging of both alike:

* **no work** (a bound of 0: a view, ``t``, ``empty``, a 0-size matmul): time spent doing no
  work; no efficiency, nothing to judge.
* **under the bound** (measured >= bound): the efficiency, bound / measured, in (0, 1].
* **at the bound** (faster than the bound, but by less than the measurement's allowance):
  no efficiency either; its figure (``103%``) is shown as it is, marked, never as 100%.
* **above the roof** (faster than the bound by more than the allowance, but not than the
  physical limit): a finding, never a failure: the data came from a cache the roof charges
  to DRAM (``127% cache``), or a calibrated roof was measured low (``121% peak``).
* **faster than physics** (faster than the physical limit by more than the allowance): the
  alarm, "faster than the bound", with its figure against the roof (``160%!``): the counts
  are too high, or the trace's clock or the chip's figures are wrong.

**The allowance** for the timer and the device's noise is the larger of

* one tick of the timer per kernel timed (a trace's clock: whole microseconds in older
  traces, 32 ns on an H200's; a kernel timed at 0 still gets its tick), and
* a small fixed fraction of the measured time: :data:`TOLERANCE` (the repeatability of a
  calibration on a quiet device), widened by the measurement's spread (IQR / median of its
  samples) up to :data:`SPREAD_CAP` and never beyond, so no noisy run hides a kernel
  several times faster than physics, and a loaded machine (``-n 2``) and a quiet one judge
  the same run alike.

:func:`spread` is the one spread every measurement reports (IQR / median).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: The fixed fraction of a measured time allowed for noise: a calibration's repeatability on a
#: quiet device.
TOLERANCE = 0.05
#: The most a measurement's spread widens that fraction to.
SPREAD_CAP = 0.10
#: The record notes (JSON) of a run faster than its bound, at it within noise, and of one
#: doing no work.
FASTER = "faster-than-bound"
AT_BOUND = "at-bound"
NO_WORK = "no-work"
#: The record note of a run above its roof but within its physical limit: a finding.
ABOVE_ROOF = "above-roof"
#: The word a table cell gives a finding above the roof: data from a cache (memory-bound
#: work), or a roof measured lower than the chip's theoretical peak (compute-bound work).
CACHE, PEAK = "cache", "peak"


def finding_for(regime: str) -> str:
    """What a run above its roof within its limit is called: compute-bound work beat a roof
    measured under the theoretical peak (:data:`PEAK`); the rest read data from a cache."""
    return PEAK if regime == "compute" else CACHE


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values."""
    n = len(sorted_values)
    pos = q * (n - 1)
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def spread(samples: Sequence[float], minimum: int = 1) -> float:
    """IQR / median of *samples* (any order); 0 under *minimum* samples or a median of 0."""
    if len(samples) < max(1, minimum):
        return 0.0
    values = sorted(float(s) for s in samples)
    median = quantile(values, 0.5)
    if not median > 0:
        return 0.0
    return (quantile(values, 0.75) - quantile(values, 0.25)) / median


def fraction(spread: float = 0.0) -> float:
    """The share of a measured time allowed for noise: TOLERANCE, widened by *spread* up to
    SPREAD_CAP."""
    value = float(spread) if spread == spread else 0.0  # NaN: no spread
    return min(SPREAD_CAP, max(TOLERANCE, value))


@dataclass(frozen=True, slots=True)
class Efficiency:
    """A bound (s) against a measured time (s), with the allowance (s) of the measurement
    and the physical limit (s, at most the bound; None: the bound itself)."""

    bound: float
    measured: float
    allowance: float
    limit: float | None = None
    #: what a finding above the roof is called in a cell: :data:`CACHE` or :data:`PEAK`
    finding: str = CACHE

    @property
    def floor(self) -> float:
        """The physical limit (s): the least time the work can take; the alarm's ceiling."""
        return self.bound if self.limit is None else min(self.limit, self.bound)

    @property
    def no_work(self) -> bool:
        """A bound of 0: the time was spent doing no work."""
        return not self.bound > 0

    @property
    def ratio(self) -> float | None:
        """bound / measured: the share of the roof reached (above 1: faster than the bound);
        None for a measured time of 0."""
        return self.bound / self.measured if self.measured > 0 else None

    @property
    def faster(self) -> bool:
        """Faster than the physical limit by more than the allowance: the alarm (a count or
        a clock is wrong)."""
        floor = self.floor
        return floor > 0 and floor > self.measured + self.allowance

    @property
    def above_roof(self) -> bool:
        """Faster than the bound by more than the allowance, within the physical limit: a
        finding (a cache, a roof measured low), never a failure."""
        return (self.bound > 0 and self.bound > self.measured + self.allowance
                and not self.faster)

    @property
    def at_bound(self) -> bool:
        """Faster than the bound within the allowance: at the roof, within noise."""
        return self.bound > 0 and self.measured < self.bound <= self.measured + self.allowance

    @property
    def value(self) -> float | None:
        """The efficiency: bound / measured where the run is under its bound, else None
        (no work, at the bound, or faster)."""
        if self.no_work or self.bound > self.measured:
            return None
        return self.bound / self.measured

    @property
    def note(self) -> str | None:
        """:data:`FASTER`, :data:`ABOVE_ROOF`, :data:`AT_BOUND`, :data:`NO_WORK` or None
        (under the bound)."""
        if self.no_work:
            return NO_WORK
        if self.faster:
            return FASTER
        return ABOVE_ROOF if self.above_roof else AT_BOUND if self.at_bound else None

    def percent(self) -> str:
        """A table cell: ``68%``; ``103%~`` at the bound within noise; ``127% cache`` above
        the roof within the physical limit; ``160%!`` faster than physics; ``faster!`` for a
        time of 0 beyond its tick; ``no work``."""
        if self.no_work:
            return "no work"
        ratio = self.ratio
        if ratio is None:
            return "faster!" if self.faster else f"0 s {self.finding}" if self.above_roof \
                else "0 s~"
        if self.above_roof:
            return f"{percent(ratio)} {self.finding}"
        mark = "!" if self.faster else "~" if self.at_bound else ""
        return percent(ratio) + mark

    def describe(self) -> str:
        """``68% of the roof``; ``at the bound within noise: 103% of it``; ``faster than the
        bound: 160% of it``; ``time spent doing no work``."""
        if self.no_work:
            return "time spent doing no work"
        ratio = self.ratio
        if self.faster:
            return f"faster than the bound: {figure(ratio)}"
        if self.above_roof:
            return (f"above the roof within the physical limit ({self.finding}): "
                    f"{figure(ratio)}")
        if self.at_bound:
            return f"at the bound within noise: {figure(ratio)}"
        return f"{percent(ratio or 0.0)} of the roof"


def efficiency(bound: float, measured: float, *, spread: float = 0.0, tick: float = 0.0,
               kernels: int = 1, limit: float | None = None,
               finding: str = CACHE) -> Efficiency:
    """*measured* seconds (timing *kernels* kernels on a clock of *tick* seconds, with the
    given *spread*) against a *bound* in seconds and its physical *limit* (s; None: the
    bound), see the module docstring."""
    bound, measured = max(0.0, float(bound)), max(0.0, float(measured))
    allowance = max(max(0.0, float(tick)) * max(1, int(kernels)), fraction(spread) * measured)
    floor = None if limit is None else min(bound, max(0.0, float(limit)))
    return Efficiency(bound=bound, measured=measured, allowance=allowance, limit=floor,
                      finding=finding)


def percent(ratio: float) -> str:
    """A ratio as a short figure: ``68%``; ``0.5%`` under 1%; ``2.3e-04%`` under 0.1%;
    ``25x``, ``9e+04x`` from 10 times on (a table cell stays narrow)."""
    if ratio >= 10:
        return f"{ratio:.0f}x" if ratio < 1000 else f"{ratio:.0e}x"
    if 0 < ratio < 0.001:
        return f"{ratio * 100:.1e}%"
    return f"{ratio:.0%}" if ratio >= 0.01 or ratio == 0 else f"{ratio:.1%}"


def figure(ratio: float | None) -> str:
    """A ratio above 1 in words: ``160% of it``, ``3,068 times it``; ``measured 0, beyond
    one timer tick`` for None."""
    if ratio is None:
        return "measured 0, beyond one timer tick"
    return f"{percent(ratio)} of it" if ratio < 10 else f"{ratio:,.0f} times it"
