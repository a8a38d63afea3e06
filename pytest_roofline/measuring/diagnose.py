"""A measured time against a roofline: efficiency, and a measurement faster than the bound.

A roofline time is a lower bound: no honest run of the same work on the same chip is faster.
A measurement faster than the bound by more than its allowance
(:mod:`pytest_roofline.efficiency`: the larger of its timer's tick and a small fraction,
widened by its spread up to a cap) therefore means one of two things, and the message names
both: the declared workload overcounts (FLOPs or bytes), or its data stayed in a cache whose
roof the analysis did not use (the bound prices every byte at the memory roof). The working
set is set against the chip's cache sizes to tell which is likely. Against a calibrated chip
a third cause is named: a calibration taken on a busy machine has roofs that are too low.
"""

from __future__ import annotations

from typing import Any

from .. import units
from ..efficiency import FASTER, TOLERANCE, Efficiency, efficiency, figure, fraction

__all__ = ["FASTER", "TOLERANCE", "efficiency_failure", "explain_faster", "is_faster",
           "judged", "roof_threads_note"]


def judged(result: Any, spread: float = 0.0) -> Efficiency | None:
    """*result*'s measurement against its bound (an :class:`~pytest_roofline.efficiency.
    Efficiency`), or None when it holds no measurement."""
    measured = getattr(result, "measured", None)
    if measured is None or not float(measured) >= 0:
        return None
    return efficiency(float(result.time), float(measured), spread=float(spread))


def is_faster(result: Any, spread: float = 0.0) -> bool:
    """Whether *result*'s measurement beat its bound by more than its allowance."""
    verdict = judged(result, spread)
    return verdict is not None and verdict.faster


def _caches(chip: Any) -> list[tuple[str, float, float | None]]:
    levels = getattr(chip, "onchip", ()) or ()
    return [(lv.name, float(lv.capacity), lv.bandwidth) for lv in levels]


def explain_faster(result: Any, chip: Any = None, spread: float = 0.0,
                   rechecked: str | None = None) -> str:
    """The 'faster than the bound' message: both explanations and the working set, then,
    against a calibration, the third (a roof measured on a busy machine) or, when the roof
    was measured again (*rechecked*, see :mod:`.recheck`), what that found."""
    fmt, si = units.format_time, units.si
    working = float(result.footprint) if float(result.footprint or 0) > 0 else float(
        result.bytes)
    what = "footprint" if float(result.footprint or 0) > 0 else "bytes moved"
    caches = _caches(chip)
    if caches:
        sizes = ", ".join(f"{name} {si(cap, 'B')}" for name, cap, _ in caches)
        holding = next(((n, c, b) for n, c, b in caches if working <= c), None)
        if holding is None:
            where = f"working set {si(working, 'B')} ({what}) is larger than every cache " \
                    f"({sizes}), so a cache explains it only if the data is reused within a " \
                    f"smaller piece: check the counts first"
        else:
            faster = f" (measured {si(holding[2], 'B/s')})" if holding[2] else ""
            where = f"working set {si(working, 'B')} ({what}) fits in {holding[0]} " \
                    f"{si(holding[1], 'B')}{faster} of the caches {sizes}: a benchmark that " \
                    f"repeats on warm data runs from there; use data larger than the " \
                    f"last-level cache, or a chip spec whose roof is that cache"
    else:
        where = f"working set {si(working, 'B')} ({what}); {result.hw} lists no cache sizes"
    return (f"measured {fmt(float(result.measured))} is faster than the roofline bound "
            f"{fmt(float(result.time))} on {result.hw} ({result.dtype}"
            f"{roof_threads_note(result).replace(' (', ', ').rstrip(')')}) by "
            f"{1 - float(result.measured) / float(result.time):.0%} of the bound "
            f"({_figure(result)}), beyond its allowance for noise "
            f"({fraction(spread):.0%}), so no efficiency is given. A lower bound "
            f"cannot be beaten by honest counts: "
            f"either the workload overcounts its FLOPs ({si(float(result.flops), 'FLOP')}) "
            f"or bytes ({si(float(result.bytes), 'B')}), or its data stayed in a cache whose "
            f"roof the analysis did not use: {where}."
            + (f" {rechecked}" if rechecked else
               f" {result.hw} is a calibration: if it was measured while the machine was "
               f"busy, its roofs are too low; measure again with pytest-roofline calibrate."
               if getattr(chip, "provenance", None) else ""))


def _figure(result: Any) -> str:
    measured = float(result.measured)
    return figure(float(result.time) / measured if measured > 0 else None)


def roof_threads_note(result: Any) -> str:
    """' (1-thread memory roof)' when a per-thread roof of a calibration was used, else ''."""
    threads = getattr(result, "roof_threads", None)
    if threads is None or str(getattr(result, "regime", "memory")) != "memory":
        return ""  # a compute-bound result's bound is its peak, not the memory roof
    return f" ({threads}-thread memory roof)"


def efficiency_failure(result: Any, minimum: float, spread: float = 0.0) -> str | None:
    """The failure line when *result*'s efficiency is below *minimum* (None when it holds)."""
    if result.efficiency is None or float(result.efficiency) >= minimum:
        return None
    fmt = units.format_time
    return (f"expected efficiency >= {minimum * 100:g}% on {result.hw} ({result.dtype}), but "
            f"measured {fmt(float(result.measured))} (spread {spread:.0%}) against a roofline "
            f"bound of {fmt(float(result.time))} ({result.regime}-bound): "
            f"{short_of(float(result.efficiency), minimum)} of the roof"
            f"{roof_threads_note(result)}.")


def short_of(value: float, minimum: float) -> str:
    """*value* as a percentage to a tenth, cut rather than rounded where rounding would
    reach *minimum* (0.1995 against 0.2 reads 19.9%, never 20.0%)."""
    import math

    text = f"{value:.1%}"
    if value < minimum and float(text[:-1]) >= minimum * 100:
        text = f"{math.floor(value * 1000) / 10:.1f}%"
    return text
