"""A Profile: measured kernels set against their roofline bounds, and what was not priced.

Per row (one op and its input shapes, every call of it aggregated): how many calls, the
measured time (the kernels' own device time on a GPU, the op's host time on a CPU), the
roofline bound of the same work, their ratio (the efficiency), the regime and the precision
the bound was priced in. The rows come sorted by the time they lose (measured - bound),
the kernels most worth a look first.

**Never an efficiency above 1.** A bound is a lower bound: a row measured faster than it
by more than the measurement's own slack (its spread across calls, :data:`TOLERANCE`, and
one tick of the trace's clock per call where the trace records whole microseconds) has no
efficiency (``None``); it is flagged ``faster`` with the likely cause. Inside that slack the
efficiency reads 1.0 (at the roof, within what the clock can tell).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .rules import ProfileError, minimum_for

#: Slack above the bound before a row counts as faster than physics: the repeatability of a
#: kernel's time over calls on a quiet device (that of a calibration, diagnose.TOLERANCE).
TOLERANCE = 0.05
FASTER = "faster-than-bound"


@dataclass(frozen=True)
class KernelRow:
    """One op's calls (same inputs), with the kernels they launched. Times are totals, s."""

    op: str  # the recorded op, aten::addmm
    shapes: str  # its inputs, 64x256 fp32, 256x512 fp32
    kernels: tuple[str, ...]  # the traced kernels it prices, then the device kernels it ran
    count: float
    measured: float
    bound: float
    flops: float
    bytes: float
    regime: str
    precision: str  # the peak its bound used, matrix:tf32, vector:fp32
    efficiency: float | None  # bound / measured, at most 1; None when faster than bound
    faster: bool = False
    spread: float = 0.0  # IQR / median of the per-call times (0 under four calls)
    likely: str = ""  # for a row faster than its bound: the likely cause

    @property
    def lost(self) -> float:
        """Measured minus bound: the time this row loses to its roof (s, >= 0)."""
        return max(0.0, self.measured - self.bound)

    @property
    def label(self) -> str:
        op = self.op.removeprefix("aten::").removeprefix("triton::")
        return f"{op}({self.shapes})" if self.shapes else self.op

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes > 0 else None

    @property
    def measured_flops(self) -> float:
        """FLOP/s the row ran at (its FLOPs over its measured time)."""
        return self.flops / self.measured if self.measured > 0 else 0.0

    def cause(self) -> str:
        """Why a row beat its bound, most likely first."""
        return (f"{self.label} measured {_us(self.measured)} for a bound of "
                f"{_us(self.bound)} ({self.regime}-bound, {self.precision}); a lower bound "
                f"cannot be beaten by honest counts: "
                + (self.likely or "its formula overcounts its FLOPs or bytes, or its data "
                   "stayed in a cache that the bound charges to memory"))

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "shapes": self.shapes, "kernels": list(self.kernels),
                "count": self.count, "measured_s": self.measured, "bound_s": self.bound,
                "flops": self.flops, "bytes": self.bytes, "regime": self.regime,
                "precision": self.precision, "efficiency": self.efficiency,
                **({"note": FASTER, "likely": self.likely} if self.faster else {}),
                "spread": self.spread}


@dataclass(frozen=True)
class Unpriced:
    """Measured time that no formula prices: a compiled region, a custom op, a collective
    without its group size, a kernel launched outside any op. Named, never dropped."""

    name: str
    seconds: float
    count: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "measured_s": self.seconds, "count": self.count,
                "reason": self.reason}


@dataclass(frozen=True)
class Profile:
    """A measured call or trace, per kernel, against one chip's roofline."""

    hw: str
    source: str  # the trace file, or profile(<fn>)
    on_device: bool  # kernel times from the device (GPU); else host op times (CPU)
    total: float  # s of measured time shared out (per call of the profiled function)
    rows: tuple[KernelRow, ...]
    unpriced: tuple[Unpriced, ...]
    repeats: int = 1
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if any(r.efficiency is not None and not (0 <= r.efficiency <= 1) for r in self.rows):
            raise ProfileError("a profile row's efficiency must lie in [0, 1]")

    @property
    def priced(self) -> float:
        """Measured time of the priced rows (s)."""
        return sum(r.measured for r in self.rows)

    @property
    def priced_share(self) -> float:
        """The share of the measured time that was priced."""
        return self.priced / self.total if self.total > 0 else 0.0

    @property
    def efficiency(self) -> float | None:
        """Bound over measured time of the priced rows together (None if any beat its
        bound: their sum would hide it)."""
        if not self.rows or self.faster:
            return None
        return min(1.0, sum(r.bound for r in self.rows) / self.priced) if self.priced else None

    @property
    def faster(self) -> tuple[KernelRow, ...]:
        return tuple(r for r in self.rows if r.faster)

    @property
    def max_efficiency(self) -> float | None:
        values = [r.efficiency for r in self.rows if r.efficiency is not None]
        return max(values) if values else None

    def top(self, n: int = 10) -> tuple[KernelRow, ...]:
        """The *n* rows that lose the most time (faster-than-bound rows first)."""
        return tuple(sorted(self.rows, key=lambda r: (not r.faster, -r.lost))[:n])

    def check(self, minimum: float | Mapping[str, float], *, allow_faster: bool = False
              ) -> list[str]:
        """Failure lines: each row below its minimum efficiency (one fraction, or kernel-name
        patterns to fractions: a row takes the first pattern its op or a kernel matches),
        and each row faster than its bound unless *allow_faster*."""
        out: list[str] = []
        for row in self.rows:
            if row.faster:
                if not allow_faster:
                    out.append(f"faster than physics on {self.hw}: {row.cause()}")
                continue
            need = minimum_for(row, minimum)
            if need is None or row.efficiency is None or row.efficiency >= need:
                continue
            out.append(f"kernel {row.label} ran at {_pct(row.efficiency)} of its roof on "
                       f"{self.hw}, below {need:.0%}: measured {_us(row.measured)} over "
                       f"{_count(row.count)} call(s), bound {_us(row.bound)} "
                       f"({row.regime}-bound, {row.precision})")
        return out

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        rows = self.top(top) if top else self.top(len(self.rows))
        return {"hw": self.hw, "source": self.source, "on_device": self.on_device,
                "measured_s": self.total, "priced_s": self.priced,
                "priced_share": self.priced_share, "efficiency": self.efficiency,
                "max_efficiency": self.max_efficiency, "repeats": self.repeats,
                "faster": [r.label for r in self.faster],
                "rows": [r.to_dict() for r in rows], "rows_total": len(self.rows),
                "unpriced": [u.to_dict() for u in self.unpriced],
                **({"notes": list(self.notes)} if self.notes else {})}

    def table(self, top: int = 10, width: int = 80) -> str:
        """The report: the rows that lose the most time, then what was not priced."""
        from .text import render_profile

        return render_profile(self.to_dict(top), top=top, width=width)


def _us(seconds: float) -> str:
    from ..units import format_time

    return str(format_time(seconds))


def _count(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def efficiency_of(bound: float, measured: float, count: float, spread: float,
                  tick: float) -> tuple[float | None, bool]:
    """(efficiency, faster) of a row: bound / measured at most 1; (None, True) when the
    bound beats the measurement beyond its slack (see the module docstring)."""
    if measured <= 0:
        return (None, bound > 0)
    slack = max(TOLERANCE, spread)
    if bound > (measured + count * tick) * (1 + slack):
        return None, True
    return min(1.0, bound / measured), False


def rows_sorted(rows: Sequence[KernelRow]) -> tuple[KernelRow, ...]:
    return tuple(sorted(rows, key=lambda r: (-r.lost, r.label)))


def _pct(fraction: float) -> str:
    """``12.5%``; ``2.3e-06%`` (always this form) for a fraction too small for one decimal."""
    return f"{fraction:.1%}" if fraction >= 0.001 else f"{fraction * 100:.1e}%"
