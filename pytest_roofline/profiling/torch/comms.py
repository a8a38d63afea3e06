"""A Kineto trace's collective kernels, each with the ``record_param_comms`` op that
launched it (:class:`~..comm_calls.CollectiveCall`), in the order they started.

A communication kernel (:data:`~..timeline.COMMUNICATION`) belongs to the nearest
``record_param_comms`` op around its launch, or to one that is a child of the op that
launched it (``c10d::allreduce_`` records its sizes on a child and launches the kernel
itself); its sizes, group and bound come from that op's arguments
(:mod:`..collectives`). A kernel with no such op, or one whose op records no sizes
(torch before 2.2), is kept with its time and the reason, its name the kind its kernel's
name says (``ncclKernel_AllReduce_RING_LL_Sum_float`` -> ``AllReduce``).
"""

from __future__ import annotations

import re
from typing import Any

from ...engine.analysis import analyze
from .. import collectives
from ..comm_calls import CollectiveCall
from ..timeline import COMMUNICATION
from .trace_file import Op, TraceFile

__all__ = ["calls", "kind_of_kernel", "steps"]

_KIND = re.compile(r"(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)
_COPY = re.compile(r"memcpy|memset", re.IGNORECASE)


def kind_of_kernel(name: str) -> str:
    """``AllReduce`` of ``ncclKernel_AllReduce_RING_LL_Sum_float(...)``; ``collective``
    where the name does not say (``ncclDevKernel_Generic``)."""
    found = _KIND.search(name)
    kind = found.group(1) if found else ""
    return kind if kind and kind.lower() != "generic" else "collective"


def _owners(trace: TraceFile) -> dict[int, Op]:
    """id(kernel) -> the ``record_param_comms`` op it belongs to."""
    out: dict[int, Op] = {}
    stack: list[tuple[Op, Op | None]] = [(root, None) for root in trace.roots]
    while stack:
        op, owner = stack.pop()
        if op.name == collectives.COLLECTIVE_OP:
            owner = op
        child = next((c for c in op.children if c.name == collectives.COLLECTIVE_OP), None)
        own = owner or child
        if own is not None:
            for device in op.launched:
                out.setdefault(id(device), own)
        stack.extend((c, owner) for c in op.children)
    return out


def calls(trace: TraceFile, chip: Any) -> tuple[CollectiveCall, ...]:
    """Each collective kernel of *trace*, priced on *chip*'s link where its op records its
    sizes, in the order the kernels started."""
    kernels = sorted((d for d in trace.timeline if COMMUNICATION.search(d.name)
                      and not _COPY.search(f"{d.category} {d.name}")),
                     key=lambda d: d.start)
    if not kernels:  # no collective: no op tree to walk
        return ()
    owners = _owners(trace)
    priced: dict[tuple[Any, ...], tuple[float | None, str]] = {}
    out = []
    for device in kernels:
        op = owners.get(id(device))
        args = op.args if op is not None else {}
        name = str(args.get("Collective name") or "") or kind_of_kernel(device.name)
        short = device.name.split("(")[0]
        if not args.get("Collective name"):
            why = ("collective sizes not recorded (torch before 2.2)" if op is not None
                   else "no record_param_comms op around its launch")
            out.append(CollectiveCall(name=name, kernel=short, start=device.start,
                                      seconds=device.seconds, why=why))
            continue
        group, source = collectives.group_of(args)
        elements = collectives.data_elements(args)
        width = collectives.element_bytes(args)
        data = None if elements is None or width is None else float(elements * width)
        key = tuple(sorted((k, str(v)) for k, v in args.items()
                           if k not in ("External id", "Ev Idx", "Record function id")))
        if key not in priced:
            workload, _, why = collectives.price(args)
            priced[key] = ((None, why) if workload is None
                           else (float(analyze(workload, chip).time), ""))
        bound, why = priced[key]
        factor = None
        if group is not None:
            factor = collectives.bus_factor(name, group)
            sent = _uneven(args, group)
            if sent is not None and elements:
                factor = sent / elements
        pg = str(args.get("Process Group Name") or "")[:40]
        out.append(CollectiveCall(name=name, kernel=short, start=device.start,
                                  seconds=device.seconds, group=group, group_from=source,
                                  data_bytes=data, factor=factor, bound=bound, why=why,
                                  process_group="" if pg == "0" else pg))
    return tuple(out)


def _uneven(args: Any, group: int) -> float | None:
    """Elements an all-to-all of uneven splits sends (None: even, or not an all-to-all)."""
    workload, label, _ = collectives.price(args)
    if workload is None or "uneven splits" not in label:
        return None
    return float(sum(k.link_bytes for k in workload.kernels)) / (
        collectives.element_bytes(args) or 1)


def steps(trace: TraceFile) -> int:
    """The profiler steps the trace holds (``ProfilerStep#N`` ops), at least 1."""
    return max(1, sum(1 for root in trace.roots if root.name.startswith("ProfilerStep#")))
