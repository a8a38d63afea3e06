"""Per-kernel breakdown of an analyzed workload: where the time goes and why.

One table, used by the command line, the plugin's report section and anyone with a Result:
name, count, FLOPs, where its bytes go (``DRAM bytes``: off-chip traffic; ``on chip``: the
handoffs the chip's on-chip memory keeps, not charged to DRAM), its DRAM intensity, the peak
that priced the FLOPs, time, regime, share.
A count that is an expected value (the experts a batch routes to, on average) reads ``~230.4``
and a line under the table says so.
A kernel that moves no memory bytes (a fused softmax) shows "on chip" for its intensity. A
kernel that runs fused epilogues is named with them (``conv3 + add + relu``) and carries their
time, its peak reading ``matrix:int8 + vector:bf16``; the epilogue kernels follow it, named
``(in conv3)``, with their FLOPs and bytes and no time of their own.
"""

from __future__ import annotations

import os
from typing import Any

from .. import units
from ..errors import WorkloadError
from ..hardware import Hardware
from ..text_table import render, wrap_line
from ..units import flop_per_byte
from .analysis import KernelResult, Result, analyze
from .workload import Workload, is_array

HEADERS = ("kernel", "count", "FLOPs", "DRAM bytes", "on chip", "FLOP/B", "peak", "time",
           "regime", "share")


def breakdown(result: Result | Workload, hw: Hardware | str | os.PathLike[str] | None = None,
              dtype: str | None = None, *, sort: bool = False,
              **settings: Any) -> list[KernelResult]:
    """The kernels of a Result (or of a Workload analyzed on *hw*), each with its totals over
    its repetitions, its regime and its share of the time. ``sort=True`` puts the largest
    share first."""
    if isinstance(result, Workload):
        if hw is None:
            raise WorkloadError("breakdown(workload) needs the hardware: breakdown(w, 'h100')")
        result = analyze(result, hw, dtype, **settings)
    if not isinstance(result, Result):
        raise WorkloadError(f"breakdown needs a Result or a Workload, got "
                            f"{type(result).__name__}")
    rows = list(result.kernels)
    if sort:
        if any(is_array(k.share) for k in rows):
            raise WorkloadError("breakdown(sort=True) needs a single workload, not a sweep")
        rows.sort(key=lambda k: -float(k.share))
    return rows


def format_breakdown(result: Result, *, sort: bool = True,
                     width: int | None = None) -> list[str]:
    """The breakdown as table lines (largest share of the time first by default). In *width*
    columns when given: kernel names are shortened in the middle, then the ``on chip`` and
    ``FLOP/B`` columns left out, the peak labels cut, and as a last resort each kernel's
    name takes a line of its own above its figures."""
    kernels = breakdown(result, sort=sort)
    if any(is_array(k.time) for k in kernels):
        raise WorkloadError("format_breakdown needs a single workload, not a sweep")
    si, fmt = units.si, units.format_time
    rows = [[_label(k), _count(float(k.count)), si(float(k.flops), "FLOP"),
             si(float(k.bytes), "B"),
             si(float(k.onchip_bytes), "B") if float(k.onchip_bytes) > 0 else "-",
             "on chip" if k.intensity is None else flop_per_byte(float(k.intensity)), k.peak_label,
             fmt(float(k.time)), str(k.regime),
             f"{float(k.share):.1%}"] for k in kernels]
    lines = render(HEADERS, rows, align="lrrrrrlrlr", width=width, shrink=0, min_shrunk=24,
                   optional=(4, 5), squeeze=(6,), min_squeezed=11)
    if any(row[1].startswith("~") for row in rows):
        note = ("~N: an expected count, not a whole number of launches (the experts a "
                "batch's tokens route to, on average)")
        lines += wrap_line(note, width)
    return lines


def _count(count: float) -> str:
    """``32``; ``~230.4`` for an expected count (an average over routings)."""
    if count == int(count):
        return f"{count:g}"
    return f"~{count:.1f}" if count >= 10 else f"~{count:.3g}"


def _label(kernel: KernelResult) -> str:
    """``host + epilogue + ...`` for a host kernel, ``name (in host)`` for an epilogue."""
    if kernel.epilogue_of is not None:
        return f"{kernel.name} (in {kernel.epilogue_of})"
    if not kernel.fused:
        return kernel.name
    prefix = kernel.name + "."
    return " + ".join((kernel.name, *(n[len(prefix):] if n.startswith(prefix) else n
                                      for n in kernel.fused)))
