"""A Profile: measured kernels set against their roofline bounds, and what was not priced.

Per row (one op and its input shapes, every call of it aggregated): how many calls, the
measured time (the kernels' own device time on a GPU, the op's host time on a CPU), the
roofline bound of the same work, their ratio (the efficiency), the regime and the precision
the bound was priced in. The rows come sorted by the time they lose (measured - bound),
the kernels most worth a look first.

**Each call judged, never only a row's total** (:mod:`pytest_roofline.efficiency`, the one
rule of every layer), against two ceilings: the roof (the bound, what the % reads against)
and the physical limit (:mod:`pytest_roofline.engine.limits`: the data from the last-level
cache, the chip's theoretical peak). A call faster than its physical limit by more than its
allowance (one tick of the trace's clock per kernel it ran, zero-duration kernels included,
or a small fixed fraction of its time, the larger) flags its row ``faster`` with the
fastest call's figure (``160%!``), whatever the row's total says: one 2x-too-fast call
hidden in an average is a missed alarm. A call above its roof but within its limit flags
its row ``above-roof``, a finding shown with its figure (``127% cache``) and never a
failure. The cell says when only some calls are flagged (``160%! 1/6``: 1 call of 6).
A row has an efficiency only where its calls, together, stay under their bound and none
beat its physical limit (a row with some calls above the roof has its calls' together, which
a gate reads); one above it within the allowance is ``at-bound`` with its figure, never
100%.
A row whose bound is 0 (a view, ``t``, ``empty``, a 0-size matmul) is time spent doing no
work: named, never judged by a kernel gate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..efficiency import (
    ABOVE_ROOF,
    AT_BOUND,
    CACHE,
    FASTER,
    NO_WORK,
    TOLERANCE,
    Efficiency,
    efficiency,
    figure,
    percent,
)
from ..text_table import escaped
from ..units import format_time
from .categories import category_of
from .comm_calls import CollectiveCall, summary
from .rules import ProfileError, minimum_for
from .text import render_profile

__all__ = ["ABOVE_ROOF", "AT_BOUND", "CAUSES", "FASTER", "NO_WORK", "TOLERANCE", "KernelRow",
           "Profile", "Unpriced", "cause_of", "judge_calls", "rows_sorted"]


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
    efficiency: float | None  # bound / measured, in (0, 1]; None at or above the bound
    faster: bool = False  # a call (or the total) beat its bound beyond its allowance
    spread: float = 0.0  # IQR / median of the per-call times (0 under four calls)
    likely: str = ""  # for a row faster than its bound: the likely cause
    #: bound / measured of the fastest call against its own bound (None: timed at 0)
    fastest: float | None = None
    faster_calls: float = 0.0  # calls faster than their bound beyond their allowance (a run)
    allowance: float = 0.0  # s, the row's total allowance for noise
    #: what its bound assumed where the trace left out what it needs, each as the profile's
    #: note says it (a convolution's stride before torch 2.1): the lowest bound was taken
    assumed: tuple[str, ...] = ()
    #: where another row of its op has the same shapes, its inputs' strides, which tell them
    #: apart (``input 1 strides 16777216:128:4096:1``, ``contiguous``); else empty
    layout: str = ""
    #: s, the physical limit of its calls together (None: the bound itself)
    limit: float | None = None
    above: bool = False  # a call (or the total) beat its roof, within its physical limit
    above_calls: float = 0.0  # calls above their roof within their limit (a run)
    finding: str = CACHE  # what a finding above the roof is called (cache, peak)
    repeats: int = 1  # the runs its counts are per (calls in words are whole calls)
    #: who gave an op that is not an aten op its formula (``register_op``, ``the tracer's
    #: formula``, ``the ops its inductor name lists`` for torch.compile's Triton kernels);
    #: '' for the tracer's aten table
    formula: str = ""

    @property
    def lost(self) -> float:
        """Measured minus bound: the time this row loses to its roof (s, >= 0)."""
        return max(0.0, self.measured - self.bound)

    @property
    def label(self) -> str:
        op = self.op.removeprefix("aten::").removeprefix("triton::")
        shapes = f"{self.shapes}; {self.layout}" if self.layout else self.shapes
        return f"{op}({shapes})" if shapes else self.op

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes > 0 else None

    @property
    def category(self) -> str:
        """GEMM, attention, normalization, elementwise ... (:mod:`.categories`)."""
        return category_of((self.op, *self.kernels),
                           regime=None if self.no_work else self.regime)

    @property
    def measured_flops(self) -> float:
        """FLOP/s the row ran at (its FLOPs over its measured time)."""
        return self.flops / self.measured if self.measured > 0 else 0.0

    @property
    def no_work(self) -> bool:
        """A bound of 0: time spent doing no work (views, ``empty``, 0-size products)."""
        return not self.bound > 0

    @property
    def judged(self) -> Efficiency:
        """The row's total against its bound and limit (its allowance, the calls')."""
        return Efficiency(bound=self.bound, measured=self.measured, allowance=self.allowance,
                          limit=self.limit, finding=self.finding)

    @property
    def note(self) -> str | None:
        """``faster-than-bound``, ``above-roof``, ``at-bound``, ``no-work`` or None (under
        its bound)."""
        if self.faster:
            return FASTER
        if self.above:
            return ABOVE_ROOF
        return self.judged.note

    @property
    def figure(self) -> float | None:
        """The ratio shown: the fastest flagged call's for a flagged row, else bound /
        measured."""
        return self.fastest if self.faster or self.above else self.judged.ratio

    def flagged(self) -> str:
        """The calls a flagged row's figure is of, in words where not all of them:
        ``1 of 6 calls``; '' where every call (or only the total) is."""
        flagged = self.faster_calls if self.faster else self.above_calls if self.above else 0
        whole, of = round(flagged * self.repeats), round(self.count * self.repeats)
        if not whole or whole >= of:
            return ""
        return f"{whole} of {of} calls"

    def percent(self) -> str:
        """A table cell: ``68%``, ``103%~`` (at the bound), ``127% cache`` (above the roof,
        within the physical limit), ``160%!`` (faster than physics), ``no work``; a flagged
        row whose figure is some of its calls' says how many (``160%! 1/6``)."""
        if self.faster:
            cell = "faster!" if self.fastest is None else percent(self.fastest) + "!"
        elif self.above:
            cell = (f"0 s {self.finding}" if self.fastest is None
                    else f"{percent(self.fastest)} {self.finding}")
        else:
            return self.judged.percent()
        part = self.flagged()
        return f"{cell} {part.replace(' of ', '/').removesuffix(' calls')}" if part else cell

    def cause(self) -> str:
        """Why a row beat its physical limit, most likely first."""
        calls = f"{self.flagged()} " if self.flagged() else ""
        limit = "" if self.limit is None or self.limit >= self.bound else (
            f" and a physical limit of {_us(self.limit)}")
        return (f"{self.label} ran {calls}faster than its bound "
                f"({figure(self.fastest)}): measured "
                f"{_us(self.measured)} for a bound of {_us(self.bound)}{limit} "
                f"({self.regime}-bound, {self.precision}); a lower bound cannot be beaten by "
                f"honest counts: "
                + (self.likely or "its formula overcounts its FLOPs or bytes, or the chip's "
                   "figures or the trace's clock are wrong"))

    def to_dict(self) -> dict[str, Any]:
        note = self.note
        return {"op": self.op, "shapes": self.shapes, "kernels": list(self.kernels),
                "category": self.category,
                "count": self.count, "measured_s": self.measured, "bound_s": self.bound,
                "flops": self.flops, "bytes": self.bytes, "regime": self.regime,
                "precision": self.precision, "efficiency": self.efficiency,
                "ratio": self.figure,
                **({"note": note} if note else {}),
                "cell": self.percent(),
                **({"limit_s": self.limit} if self.limit is not None else {}),
                **({"likely": self.likely, "faster_calls": self.faster_calls}
                   if self.faster else {}),
                **({"above_calls": self.above_calls, "finding": self.finding}
                   if self.above else {}),
                "spread": self.spread, "assumed": list(self.assumed),
                "layout": self.layout, **({"formula": self.formula} if self.formula else {})}


@dataclass(frozen=True)
class Unpriced:
    """Measured time that no formula prices: a compiled region, a custom op, a collective
    without its group size, a kernel launched outside any op. Named, never dropped."""

    name: str
    seconds: float
    count: float
    reason: str

    @property
    def cause(self) -> str:
        """The cause class of its reason (:data:`CAUSES`)."""
        return cause_of(self.reason)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "measured_s": self.seconds, "count": self.count,
                "reason": self.reason, "cause": self.cause}


#: The causes unpriced time is split by, in the order they are listed: kernels whose launch
#: is not in the trace's window, CUDA/HIP graph replays, kernels launched outside any op, ops
#: that are not aten ops (compiled regions, custom ops, collectives), aten ops without a
#: formula, and ops whose recorded inputs do not rebuild a call (or a host copy that cannot
#: be priced on its link), and calls whose main kernel the trace lacks (only a memset or a
#: split-K reduction recorded: :func:`.join.incomplete`), never judged; and the time a core
#: spends issuing an async op or waiting for it (a TPU's ``copy-done``), whose work ran
#: beside other ops.
CAUSES = ("no launch in the trace", "graph replay", "outside any op", "not an aten op",
          "no formula", "inputs not priceable", "incomplete call", "async wait")


def cause_of(reason: str) -> str:
    """The cause (:data:`CAUSES`) a reason of :mod:`.torch.join` or :mod:`.torch.pricing`
    belongs to."""
    if reason == "no launch in the trace":
        return CAUSES[0]
    if reason == "graph replay":
        return CAUSES[1]
    if reason == "launched outside any op":
        return CAUSES[2]
    if reason.endswith("not an aten op") or reason.startswith("torch has no op"):
        return CAUSES[3]
    if reason.startswith("no formula"):
        return CAUSES[4]
    if reason.startswith("incomplete call"):
        return CAUSES[6]
    if reason.startswith("an async op's issue or wait"):
        return CAUSES[7]
    return CAUSES[5]


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
    tick: float = 0.0  # s, the clock tick of the trace's times (0: not known)
    #: where a GPU trace's device time went (:mod:`.timeline`): its span and its parts
    timeline: Mapping[str, float] | None = None
    #: each collective kernel a GPU trace ran (:mod:`.comm_calls`), in the order it started
    collectives: tuple[CollectiveCall, ...] = ()

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
        bound, their sum would hide it, or if together they sit above it)."""
        if not self.rows or self.faster or not self.priced > 0:
            return None
        ratio = sum(r.bound for r in self.rows) / self.priced
        return ratio if 0 < ratio <= 1 else None

    def by_cause(self) -> dict[str, float]:
        """Unpriced seconds by cause (:data:`CAUSES` order; causes with none left out)."""
        sums = dict.fromkeys(CAUSES, 0.0)
        for item in self.unpriced:
            sums[item.cause] += item.seconds
        return {cause: seconds for cause, seconds in sums.items() if seconds > 0}

    def by_category(self) -> dict[str, float]:
        """Measured seconds by category (:mod:`.categories`: GEMM, attention, normalization,
        elementwise, communication, copies ...), priced rows and unpriced time together,
        largest first."""
        sums: dict[str, float] = {}
        for row in self.rows:
            name = row.category
            sums[name] = sums.get(name, 0.0) + row.measured
        for item in self.unpriced:
            name = category_of((item.name,))
            sums[name] = sums.get(name, 0.0) + item.seconds
        return dict(sorted(((k, v) for k, v in sums.items() if v > 0),
                           key=lambda kv: (-kv[1], kv[0])))

    @property
    def idle(self) -> float:
        """Measured time of the rows doing no work (s): views, ``empty``, 0-size products."""
        return sum(r.measured for r in self.rows if r.no_work)

    @property
    def faster(self) -> tuple[KernelRow, ...]:
        """The rows faster than physics: the alarm."""
        return tuple(r for r in self.rows if r.faster)

    @property
    def above(self) -> tuple[KernelRow, ...]:
        """The rows above their roof within their physical limit: findings."""
        return tuple(r for r in self.rows if r.above)

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
                    out.append(escaped(f"faster than physics on {self.hw}: {row.cause()}"))
                continue
            if row.no_work:  # time spent doing no work: no roof to reach
                continue
            need = minimum_for(row, minimum)
            if need is None or row.efficiency is None or row.efficiency >= need:
                continue
            out.append(f"kernel {escaped(row.label)} ran at {_pct(row.efficiency)} of its roof on "
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
                "above_roof": [r.label for r in self.above], "idle_s": self.idle,
                "rows": [r.to_dict() for r in rows], "rows_total": len(self.rows),
                "unpriced": [u.to_dict() for u in self.unpriced],
                "unpriced_by_cause": self.by_cause(), "by_category": self.by_category(),
                "tick_s": self.tick,
                **({"timeline": dict(self.timeline)} if self.timeline else {}),
                **({"collectives": summary(self.collectives)} if self.collectives else {}),
                **({"notes": list(self.notes)} if self.notes else {})}

    def table(self, top: int = 10, width: int | None = 80) -> str:
        """The report: the rows that lose the most time, then what was not priced (in
        *width* columns; None: a row a line)."""
        return render_profile(self.to_dict(top), top=top, width=width)


def _us(seconds: float) -> str:
    return str(format_time(seconds))


def _count(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def judge_calls(bound: float, calls: Sequence[tuple[float, int]], *, tick: float,
                spread: float, limit: float | None = None,
                finding: str = CACHE) -> tuple[KernelRowVerdict, float]:
    """Each call (its measured seconds, the kernels it timed) against its *bound* and its
    physical *limit* (s a call; None: the bound), then the calls together: the verdict of
    a row, and its total allowance (s)."""
    faster_calls = above_calls = 0
    fastest = above_best = 0.0
    zero = above_zero = False
    allowance = 0.0
    for seconds, kernels in calls:
        judged = efficiency(bound, seconds, spread=spread, tick=tick, kernels=kernels,
                            limit=limit, finding=finding)
        allowance += judged.allowance
        ratio = judged.ratio
        if judged.faster:
            faster_calls += 1
            if ratio is None:
                zero = True
            else:
                fastest = max(fastest, ratio)
        elif judged.above_roof:
            above_calls += 1
            if ratio is None:
                above_zero = True
            else:
                above_best = max(above_best, ratio)
    n = len(calls)
    total = Efficiency(bound=bound * n, measured=sum(s for s, _ in calls),
                       allowance=allowance, limit=None if limit is None else limit * n)
    faster = faster_calls > 0 or total.faster
    above = not faster and (above_calls > 0 or total.above_roof)
    if faster:
        shown = None if zero else (fastest if faster_calls else total.ratio)
    elif above:
        shown = None if above_zero else (above_best if above_calls else total.ratio)
    else:
        shown = None
    # a finding above the roof is no reason to drop the row's efficiency: where its calls
    # together stay under their bound, it is theirs (a gate reads it); an alarm has none
    return KernelRowVerdict(efficiency=None if faster else total.value,
                            faster=faster, fastest=shown, faster_calls=faster_calls,
                            above=above, above_calls=above_calls), allowance


@dataclass(frozen=True)
class KernelRowVerdict:
    """A row's verdict: its efficiency, whether a call beat its physical limit (faster) or
    only its roof (above), the flagged calls' best figure and how many calls were flagged."""

    efficiency: float | None
    faster: bool
    fastest: float | None
    faster_calls: int
    above: bool = False
    above_calls: int = 0


def rows_sorted(rows: Sequence[KernelRow]) -> tuple[KernelRow, ...]:
    return tuple(sorted(rows, key=lambda r: (-r.lost, r.label)))


def _pct(fraction: float) -> str:
    """``12.5%``; ``2.3e-06%`` (always this form) for a fraction too small for one decimal."""
    return f"{fraction:.1%}" if fraction >= 0.001 else f"{fraction * 100:.1e}%"
