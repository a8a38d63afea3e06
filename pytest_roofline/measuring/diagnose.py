"""A measured time against a roofline: efficiency, and a measurement faster than the bound.

A roofline time is a lower bound: no honest run of the same work on the same chip is faster.
A measurement faster than the bound by more than its allowance
(:mod:`pytest_roofline.efficiency`: the larger of its timer's tick and a small fraction,
widened by its spread up to a cap) therefore means one of two things, and the message names
both: the declared workload overcounts (FLOPs or bytes), or its data stayed in a cache whose
roof the analysis did not use (the bound prices every byte at the memory roof). The working
set is set against the chip's cache sizes to tell which is likely. Against a calibrated chip
a third cause is named: a calibration taken on a busy machine has roofs that are too low.

The failure line is a headline of a few words per cause; the advice at length is the section
"Faster than the bound" of docs/measure.md, which the line names. That line and the
efficiency failure say when other processes kept cores busy while the call was timed or
while the calibration was measured (:func:`load_note`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .. import units
from ..efficiency import FASTER, TOLERANCE, Efficiency, efficiency, finding_for
from .cpu import LOADED

__all__ = ["FASTER", "FASTER_DOCS", "TOLERANCE", "efficiency_failure", "explain_faster",
           "is_faster", "judged", "load_note", "roof_threads_note"]


def judged(result: Any, spread: float = 0.0) -> Efficiency | None:
    """*result*'s measurement against its bound (an :class:`~pytest_roofline.efficiency.
    Efficiency`), or None when it holds no measurement."""
    measured = getattr(result, "measured", None)
    if measured is None or not float(measured) >= 0:
        return None
    limit = getattr(result, "limit", None)
    return efficiency(float(result.time), float(measured), spread=float(spread),
                      limit=None if limit is None else float(limit),
                      finding=finding_for(str(getattr(result, "regime", ""))))


def is_faster(result: Any, spread: float = 0.0) -> bool:
    """Whether *result*'s measurement beat its physical limit (the bound, where it has none)
    by more than its allowance."""
    verdict = judged(result, spread)
    return verdict is not None and verdict.faster


def _caches(chip: Any) -> list[tuple[str, float, float | None]]:
    levels = getattr(chip, "onchip", ()) or ()
    return [(lv.name, float(lv.capacity), lv.bandwidth) for lv in levels]


#: The section of docs/measure.md that explains a measurement faster than its bound at length.
FASTER_DOCS = "docs/measure.md: Faster than the bound"


def explain_faster(result: Any, chip: Any = None, spread: float = 0.0,
                   rechecked: str | None = None, other_cores: float | None = None) -> str:
    """The 'faster than the bound' failure line: a headline of about 240 characters at most
    (260 with both loads named: measured against bound, by how much, the two causes in a
    few words, the working set against the cache that holds it, the load while it was
    timed or calibrated) naming the section of docs/measure.md that explains it at
    length. When the roof was measured again (*rechecked*, see :mod:`.recheck`), what
    that found follows it. *spread* is taken for the caller's symmetry with
    :func:`efficiency_failure`: the allowance it widens is the summary's and the docs' to
    explain."""
    del spread
    fmt, si = units.format_time, units.si
    working = float(result.footprint) if float(result.footprint or 0) > 0 else float(
        result.bytes)
    caches = _caches(chip)
    holding = next(((n, c) for n, c, _ in caches if working <= c), None)
    if not caches:
        where = f"{result.hw} lists no caches"
    elif holding is None:
        where = f"working set {si(working, 'B')} larger than every cache"
    else:
        where = f"working set {si(working, 'B')} fits in {holding[0]} {si(holding[1], 'B')}"
    load = load_note(chip, other_cores)
    if not rechecked and getattr(chip, "provenance", None) and "calibrated" not in load:
        load = "; ".join(x for x in (load, "stale roofs? pytest-roofline calibrate") if x)
    threads = roof_threads_note(result).replace(" (", ", ").rstrip(")")
    limit = getattr(result, "limit", None)
    beyond = (f" (limit {fmt(float(limit))})"
              if limit is not None and 0 < float(limit) < float(result.time) else "")
    return (f"measured {fmt(float(result.measured))} is faster than the roofline bound "
            f"{fmt(float(result.time))}{beyond} on {result.hw} ({result.dtype}{threads}) by "
            f"{1 - float(result.measured) / float(result.time):.0%}: overcounted, or data "
            f"in a cache ({where}){'; ' + load if load else ''}; {FASTER_DOCS}."
            + (f" {rechecked}" if rechecked else ""))


def load_note(chip: Any, other_cores: float | None) -> str:
    """A few words on the load beside a measurement: other processes kept cores busy while
    the call was timed (*other_cores*) or while *chip* (a calibration) was measured
    (``other cores busy: 1.2 when timed, 1.0 when calibrated``); '' when
    neither was loaded, or neither is known."""
    timed = other_cores is not None and float(other_cores) >= LOADED
    then = calibration_load(chip)
    conditions = (getattr(chip, "provenance", None) or {}).get("conditions") or {}
    calibrated = (then >= LOADED if then is not None else
                  isinstance(conditions, dict) and conditions.get("quiet") is False)
    if not (timed or calibrated):
        return ""
    if not timed:
        return ("calibrated under load" if then is None else
                f"other cores busy: {then:.1f} when calibrated")
    words = f"other cores busy: {float(other_cores or 0):.1f} when timed"
    if calibrated:
        words += ", calibrated under load" if then is None else f", {then:.1f} when calibrated"
    return words


def roof_threads_note(result: Any) -> str:
    """' (1-thread memory roof)' when a per-thread roof of a calibration was used, else ''."""
    threads = getattr(result, "roof_threads", None)
    if threads is None or str(getattr(result, "regime", "memory")) != "memory":
        return ""  # a compute-bound result's bound is its peak, not the memory roof
    return f" ({threads}-thread memory roof)"


def efficiency_failure(result: Any, minimum: float, spread: float = 0.0, *,
                       chip: Any = None, other_cores: float | None = None) -> str | None:
    """The failure line when *result*'s efficiency is below *minimum* (None when it holds),
    saying when the call was timed, or *chip* (a calibration) measured, under load."""
    if result.efficiency is None or float(result.efficiency) >= minimum:
        return None
    fmt = units.format_time
    return (f"expected efficiency >= {minimum * 100:g}% on {result.hw} ({result.dtype}), but "
            f"measured {fmt(float(result.measured))} (spread {spread:.0%}) against a roofline "
            f"bound of {fmt(float(result.time))} ({result.regime}-bound): "
            f"{short_of(float(result.efficiency), minimum)} of the roof"
            f"{roof_threads_note(result)}"
            + (f"; {load}." if (load := load_note(chip, other_cores)) else "."))


def short_of(value: float, minimum: float) -> str:
    """*value* as a percentage to a tenth, cut rather than rounded where rounding would
    reach *minimum* (0.1995 against 0.2 reads 19.9%, never 20.0%)."""
    text = f"{value:.1%}"
    if value < minimum and float(text[:-1]) >= minimum * 100:
        text = f"{math.floor(value * 1000) / 10:.1f}%"
    return text


def calibration_load(chip: Any) -> float | None:
    """The cores other processes kept busy while *chip* (a calibration) was measured."""
    conditions = (getattr(chip, "provenance", None) or {}).get("conditions") or {}
    value = conditions.get("other_cores") if isinstance(conditions, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and value >= 0 else None
