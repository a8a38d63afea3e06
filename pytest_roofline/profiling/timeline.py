"""Where a GPU's time went: compute, communication (hidden behind compute or exposed),
copies, and idle, from a trace's device events.

Each device (its trace process) is read on its own over its span, from its first event's
start to its last one's end; the kinds are the union of the intervals of its events:

* **communication**: NCCL/RCCL kernels (:data:`COMMUNICATION`);
* **copies**: memcpy and memset events (a copy between the host and the device, or within
  it);
* **compute**: every other kernel.

The parts share the span out without overlap, compute first: ``compute`` (time some compute
kernel ran), ``exposed communication`` (communication with no compute beside it),
``copies`` (copies with neither), and ``idle`` (nothing ran: the device waited on the host,
or on another rank): they add up to the span. ``overlapped communication`` (communication
hidden behind compute) is told apart from it as HolisticTraceAnalysis and TraceLens report
it. Times are in s; a trace with no device event has no timeline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["COMMUNICATION", "timeline"]

#: Kernel names of collective libraries' kernels.
COMMUNICATION = re.compile(r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|sendrecv",
                           re.IGNORECASE)
_US = 1e-6

Interval = tuple[float, float]


def _union(spans: Iterable[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _length(spans: Sequence[Interval]) -> float:
    return sum(end - start for start, end in spans)


def _minus(spans: Sequence[Interval], cut: Sequence[Interval]) -> list[Interval]:
    """*spans* less *cut* (both merged, sorted)."""
    out: list[Interval] = []
    j = 0
    for start, end in spans:
        while j < len(cut) and cut[j][1] <= start:
            j += 1
        k, at = j, start
        while k < len(cut) and cut[k][0] < end:
            if cut[k][0] > at:
                out.append((at, cut[k][0]))
            at = max(at, cut[k][1])
            k += 1
        if at < end:
            out.append((at, end))
    return out


def timeline(devices: Iterable[Any]) -> dict[str, float] | None:
    """The parts of the device time of *devices* (a trace's ``Device`` events: ``name``,
    ``category``, ``start`` in us, ``seconds``, ``stream``), summed over the trace's
    devices; None without any."""
    by_device: dict[Any, list[Any]] = {}
    for work in devices:
        stream = getattr(work, "stream", None)
        by_device.setdefault(stream[0] if isinstance(stream, tuple) else stream,
                             []).append(work)
    if not by_device:
        return None
    parts = dict.fromkeys(("span_s", "compute_s", "exposed_communication_s",
                           "overlapped_communication_s", "copies_s", "idle_s"), 0.0)
    for works in by_device.values():
        kinds: dict[str, list[Interval]] = {"compute": [], "communication": [], "copies": []}
        first, last = float("inf"), float("-inf")
        for work in works:
            start = float(work.start)
            end = start + float(work.seconds) / _US
            first, last = min(first, start), max(last, end)
            kind = ("copies" if re.search(r"memcpy|memset", f"{work.category} {work.name}",
                                          re.IGNORECASE)
                    else "communication" if COMMUNICATION.search(work.name) else "compute")
            kinds[kind].append((start, end))
        compute = _union(kinds["compute"])
        comm = _union(kinds["communication"])
        exposed = _minus(comm, compute)
        copies = _minus(_minus(_union(kinds["copies"]), compute), _union(exposed))
        span = max(0.0, last - first)
        parts["span_s"] += span * _US
        parts["compute_s"] += _length(compute) * _US
        parts["exposed_communication_s"] += _length(exposed) * _US
        parts["overlapped_communication_s"] += (_length(comm) - _length(exposed)) * _US
        parts["copies_s"] += _length(copies) * _US
        parts["idle_s"] += max(0.0, span - _length(compute) - _length(exposed)
                               - _length(copies)) * _US
    return parts
