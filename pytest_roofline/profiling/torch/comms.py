"""A Kineto trace's collective kernels, each with the ops that launched it
(:class:`~..comm_calls.CollectiveCall`), in the order they started.

A communication kernel (:data:`~..timeline.COMMUNICATION`) belongs to the collective's ops
around its launch (``c10d::allreduce_``, ``record_param_comms``, ``nccl:all_reduce``:
:mod:`.comm_ops`); its sizes, group and bound come from what they record
(:mod:`..collectives`), its algorithm from its own name. A kernel with no such op, or whose
ops name no collective, is kept with its time and the reason, its name the kind its kernel's
name says (``ncclKernel_AllReduce_RING_LL_Sum_float`` -> ``AllReduce``).
"""

from __future__ import annotations

import re
from typing import Any

from ...engine.analysis import analyze
from .. import collectives
from ..comm_calls import CollectiveCall
from ..timeline import COMMUNICATION
from . import comm_ops
from .comm_ops import kind_of_kernel
from .trace_file import Op, TraceFile

__all__ = ["NO_LAUNCH", "calls", "kind_of_kernel", "steps"]

#: Why a collective kernel whose launch the trace does not hold is not priced.
NO_LAUNCH = ("its launch is not in the trace (it began before the profiler's window): no op "
             "records its sizes")
_COPY = re.compile(r"memcpy|memset", re.IGNORECASE)


def _owners(trace: TraceFile) -> dict[int, list[Op]]:
    """id(kernel) -> the collective's ops around its launch (:func:`.comm_ops.chain_of`)."""
    out: dict[int, list[Op]] = {}
    stack: list[tuple[Op, tuple[Op, ...]]] = [(root, ()) for root in trace.roots]
    while stack:
        op, ancestors = stack.pop()
        if op.launched:
            chain = [o for o in comm_ops.chain_of(op, ancestors) if comm_ops.is_comm_op(o.name)]
            if chain:
                for device in op.launched:
                    out.setdefault(id(device), chain)
        stack.extend((c, (*ancestors, op)) for c in op.children)
    return out


def calls(trace: TraceFile, chip: Any) -> tuple[CollectiveCall, ...]:
    """Each collective kernel of *trace*, priced on *chip*'s link where the ops around it
    record its sizes (:mod:`.comm_ops`), in the order the kernels started."""
    kernels = sorted((d for d in trace.timeline if COMMUNICATION.search(d.name)
                      and not _COPY.search(f"{d.category} {d.name}")),
                     key=lambda d: d.start)
    if not kernels:  # no collective: no op tree to walk
        return ()
    owners = _owners(trace)
    priced: dict[tuple[Any, ...], tuple[float | None, str, float | None]] = {}
    out = []
    for device in kernels:
        chain = owners.get(id(device))
        short = device.name.split("(")[0]
        args = comm_ops.collective_args(chain, short, trace.distributed) if chain else {}
        name = str(args.get("Collective name") or "") or kind_of_kernel(device.name)
        if not args.get("Collective name"):
            why = collectives.NOT_NAMED if chain else NO_LAUNCH if \
                device.args.get("correlation") not in trace.launch_times else \
                "no collective op around its launch"
            out.append(CollectiveCall(name=name, kernel=short, start=device.start,
                                      seconds=device.seconds, why=why))
            continue
        group, source = collectives.group_of(args)
        elements = collectives.data_elements(args)
        width = collectives.element_bytes(args)
        data = None if elements is None or width is None else float(elements * width)
        key = (short, *sorted((k, str(v)) for k, v in args.items()
                              if k not in ("External id", "Ev Idx", "Record function id")))
        if key not in priced:
            workload, label, why = collectives.price(args, short)
            sent = None
            if workload is not None and "uneven splits" in label:
                sent = float(sum(k.link_bytes for k in workload.kernels)) / (width or 1)
            priced[key] = ((None, why, None) if workload is None
                           else (float(analyze(workload, chip).time), "", sent))
        bound, why, sent = priced[key]
        factor = None
        if group is not None:
            factor = collectives.bus_factor(name, group)
            if sent is not None and elements:
                factor = sent / elements
        pg = str(args.get("Process Group Name") or "")[:40]
        out.append(CollectiveCall(name=name, kernel=short, start=device.start,
                                  seconds=device.seconds, group=group, group_from=source,
                                  data_bytes=data, factor=factor, bound=bound, why=why,
                                  process_group="" if pg == "0" else pg))
    return tuple(out)


def steps(trace: TraceFile) -> int:
    """The profiler steps the trace holds (``ProfilerStep#N`` ops), at least 1."""
    return max(1, sum(1 for root in trace.roots if root.name.startswith("ProfilerStep#")))
