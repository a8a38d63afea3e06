"""Per-kernel breakdown of an analyzed workload: where the time goes and why."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .. import units
from ..analysis import Result, analyze
from ..errors import WorkloadError
from ..hardware import Hardware
from ..workload import Number, Workload, is_array


@dataclass(frozen=True)
class Row:
    """One kernel of the program, totals over its *count* repetitions."""

    name: str
    count: Number
    flops: Number
    bytes: Number
    link_bytes: Number
    intensity: Number
    regime: Any
    time: Number
    share: Number
    peak: str  # which peak priced its FLOPs, e.g. "matrix:bf16" or "vector:fp32"


def breakdown(result: Result | Workload, hw: Hardware | str | os.PathLike[str] | None = None,
              dtype: str | None = None, *, sort: bool = False, **settings: Any) -> list[Row]:
    """Rows (name, count, FLOPs, bytes, intensity, regime, time, share) of a Result, or of a
    Workload analyzed on *hw*. ``sort=True`` puts the largest share of time first."""
    if isinstance(result, Workload):
        if hw is None:
            raise WorkloadError("breakdown(workload) needs the hardware: breakdown(w, 'h100')")
        result = analyze(result, hw, dtype, **settings)
    if not isinstance(result, Result):
        raise WorkloadError(f"breakdown needs a Result or a Workload, got "
                            f"{type(result).__name__}")
    rows = [Row(k.name, k.count, k.flops, k.bytes, k.link_bytes, k.intensity, k.regime, k.time,
                k.share, k.peak_label) for k in result.kernels]
    if sort:
        if any(is_array(r.share) for r in rows):
            raise WorkloadError("breakdown(sort=True) needs a single workload, not a sweep")
        rows.sort(key=lambda r: -float(r.share))
    return rows


def format_breakdown(result: Result | list[Row], *, sort: bool = True) -> str:
    """A plain-text table of :func:`breakdown`'s rows (largest share first by default)."""
    rows = breakdown(result, sort=sort) if isinstance(result, Result) else list(result)
    if any(is_array(r.time) for r in rows):
        raise WorkloadError("format_breakdown needs a single workload, not a sweep")
    header = ("kernel", "count", "FLOPs", "bytes", "FLOP/B", "regime", "time", "share", "peak")
    table = [header] + [(
        r.name, f"{float(r.count):g}", units.si(float(r.flops)), units.si(float(r.bytes), "B"),
        f"{float(r.intensity):.3g}", str(r.regime), units.format_time(float(r.time)),
        f"{100 * float(r.share):.1f}%", r.peak) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
             for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
