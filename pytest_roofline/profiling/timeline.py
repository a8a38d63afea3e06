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

Where the host's launches are known (a Kineto trace's runtime events, by correlation id), the
idle time is split by the work that ends each gap (the device work that starts when it
ends): **host-bound** (``idle_host_s``) where its launch came after the gap began (nothing
was queued: the device waited on the host), **waiting** (``idle_waiting_s``) where it was
launched before (queued, and held back: by another stream's event, a collective's peers, a
dependency), and ``idle_unknown_s`` where its launch is not in the trace (it began before
the trace's window): the three add up to ``idle_s``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
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


def timeline(devices: Iterable[Any], launches: Mapping[Any, float] | None = None
             ) -> dict[str, float] | None:
    """The parts of the device time of *devices* (a trace's ``Device`` events: ``name``,
    ``category``, ``start`` in us, ``seconds``, ``stream``, ``args``), summed over the
    trace's devices; None without any. With *launches* (correlation id -> the host's launch,
    us), the idle time split as the module docstring says."""
    by_device: dict[Any, list[Any]] = {}
    for work in devices:
        stream = getattr(work, "stream", None)
        by_device.setdefault(stream[0] if isinstance(stream, tuple) else stream,
                             []).append(work)
    if not by_device:
        return None
    parts = dict.fromkeys(("span_s", "compute_s", "exposed_communication_s",
                           "overlapped_communication_s", "copies_s", "idle_s"), 0.0)
    if launches is not None:
        parts.update(dict.fromkeys(("idle_host_s", "idle_waiting_s", "idle_unknown_s"), 0.0))
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
        if launches is not None:
            for kind, seconds in _idle(works, first, last, launches).items():
                parts[f"idle_{kind}_s"] += seconds
    return parts


def _idle(works: Sequence[Any], first: float, last: float,
          launches: Mapping[Any, float]) -> dict[str, float]:
    """A device's gaps (s) by what ended each: host-bound, waiting or unknown."""
    busy = _union((float(w.start), float(w.start) + float(w.seconds) / _US) for w in works)
    launched: dict[float, float] = {}  # a start -> the earliest launch of what starts then
    for work in works:
        args = getattr(work, "args", None)
        at = launches.get(args.get("correlation")) if isinstance(args, Mapping) else None
        if at is not None:
            start = float(work.start)
            launched[start] = min(at, launched.get(start, at))
    out = {"host": 0.0, "waiting": 0.0, "unknown": 0.0}
    for begin, end in _minus([(first, last)], busy):
        at = launched.get(end)
        kind = "unknown" if at is None else "host" if at > begin else "waiting"
        out[kind] += (end - begin) * _US
    return out
