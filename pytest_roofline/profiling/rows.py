"""The one place a judged row is built, whichever reader timed its calls.

A reader (the Kineto join, the XSpace reader, a graph replay, a host copy) hands over what
it measured (each call's seconds and the kernels it timed) and what the work is (its
priced :class:`~pytest_roofline.engine.analysis.Result`, or a bound of its own); here the
calls are judged against the two ceilings (the roof and the physical limit of
:mod:`pytest_roofline.engine.limits`, through :func:`.model.judge_calls`), the likely cause
of an alarm is named, and the :class:`~.model.KernelRow` is built. No reader decides any of
this on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..efficiency import finding_for as finding_of
from ..efficiency import spread as spread_of
from ..engine.fusion import onchip_level
from ..engine.limits import calibrated
from ..units import si
from .categories import category_of
from .model import KernelRow, judge_calls

__all__ = ["judged_row", "likely", "precision_of"]


def judged_row(*, op: str, shapes: str, kernels: Sequence[str],
               calls: Sequence[tuple[float, int]], bound: float, limit: float | None,
               flops: float, nbytes: float, regime: str, precision: str, tick: float,
               repeats: int, chip: Any, spread: float | None = None,
               why: str | None = None, assumed: tuple[str, ...] = (),
               layout: str = "", formula: str = "") -> KernelRow:
    """The row of *calls* (seconds, kernels timed) of one op: *bound* and *limit* are a
    call's (s), *flops* and *nbytes* a call's; totals are per run (over *repeats*). *why*
    replaces the likely cause of an alarm :func:`likely` would name."""
    count = len(calls)
    if spread is None:
        spread = spread_of([seconds for seconds, _ in calls], 4)
    verdict, allowance = judge_calls(bound, calls, tick=tick, spread=spread, limit=limit,
                                     finding=finding_of(regime))
    cause = ""
    if verdict.faster:
        exact = not assumed and category_of((op, *kernels), regime=regime) in EXACT
        cause = why if why is not None else likely(regime, nbytes, chip, precision,
                                                   exact=exact)
    return KernelRow(
        op=op, shapes=shapes, kernels=tuple(kernels), count=count / repeats,
        measured=sum(seconds for seconds, _ in calls) / repeats, bound=bound * count / repeats,
        flops=flops * count / repeats, bytes=nbytes * count / repeats, regime=regime,
        precision=precision, efficiency=verdict.efficiency, faster=verdict.faster,
        spread=spread, likely=cause, fastest=verdict.fastest,
        faster_calls=verdict.faster_calls / repeats, allowance=allowance / repeats,
        assumed=assumed, layout=layout,
        limit=None if limit is None else limit * count / repeats, above=verdict.above,
        above_calls=verdict.above_calls / repeats, finding=finding_of(regime),
        repeats=repeats, formula=formula)


#: Categories whose bytes are their tensors' own, read and written once (an elementwise
#: op, a copy, a fill): their count is exact, so an alarm on them never blames it.
EXACT = ("elementwise", "copies")


def likely(regime: str, nbytes: float, chip: Any, precision: str, *,
           exact: bool = False) -> str:
    """The likely cause of a row faster than its physical limit. The limit already lets
    the data come from the last-level cache and the work run at the chip's theoretical
    peak, so a cache is never the cause: a count too high, a precision lower than priced,
    or figures (the chip's, the trace's clock) that are not the run's. An *exact* count
    (bytes that are its tensors' own, nothing assumed) is never the one blamed."""
    level = onchip_level(chip)
    if regime == "memory":
        held = (f"even with {si(level.capacity, 'B')} of it from the {level.name}"
                if level is not None else "with every byte from DRAM")
        if exact:
            return (f"its {si(nbytes, 'B')} a call, its tensors' own, beat {chip.name}'s "
                    f"memory {held}: it ran on a faster part than {chip.name}, or the "
                    f"trace's clock is off")
        return (f"its {si(nbytes, 'B')} a call beat {chip.name}'s memory {held}: its bytes "
                f"are overcounted, or it ran on a faster part than {chip.name}, or the "
                f"trace's clock is off")
    if regime == "compute":
        which = "theoretical peak" if calibrated(chip) else "datasheet peak"
        return (f"it beat {chip.name}'s {which} ({precision}): its FLOPs are overcounted, "
                f"or it ran in a lower precision than priced")
    return (f"it beat {chip.name}'s link: its bytes are overcounted, or the link in the "
            f"chip's spec is slower than the one it ran on")


def precision_of(result: Any) -> str:
    """The peak of the kernel that sets most of the bound (``matrix:tf32``)."""
    kernels = list(result.kernels)
    if not kernels:
        return str(result.peak_label)
    main = max(kernels, key=lambda k: float(k.time))
    return str(main.peak_label)
