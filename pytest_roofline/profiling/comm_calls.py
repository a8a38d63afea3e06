"""One collective's kernel as a rank ran it: what a job's ranks are compared by.

Per communication kernel of a trace (NCCL/RCCL), in the order it started on the device: the
collective's name (its recorded ``Collective name``, else the kind its kernel's name says:
``AllReduce``, ``SendRecv``), the kernel, its start on the rank's own clock and its
duration, and where the trace records its sizes, its own process group, the size
nccl-tests' algorithm bandwidth divides and its bus-bandwidth factor, with its bound on the
link roof. Algorithm and bus bandwidth are as nccl-tests defines them (its
doc/PERFORMANCE.md): algbw = size / time; busbw = algbw x 2(n-1)/n for an all-reduce,
x (n-1)/n for an all-gather, a reduce-scatter and an all-to-all, x 1 for the rest (an
all-to-all of uneven splits: x what the rank sends over its input).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CollectiveCall", "summary"]


@dataclass(frozen=True)
class CollectiveCall:
    """A collective kernel of one rank (times in s, its start in us on the rank's clock)."""

    name: str
    kernel: str
    start: float  # us, the trace's clock
    seconds: float
    group: int | None = None  # ranks of its own process group (None: not recorded)
    group_from: str = ""  # "recorded", "inferred from its message sizes", ""
    data_bytes: float | None = None  # nccl-tests' size (None: not recorded)
    factor: float | None = None  # nccl-tests' bus-bandwidth factor
    bound: float | None = None  # s on the link roof (None: not priced)
    why: str = ""  # why it is not priced
    #: its process group's name (``Process Group Name``; '' unrecorded or the default, 0)
    process_group: str = ""

    @property
    def end(self) -> float:
        """us on the rank's clock."""
        return self.start + self.seconds * 1e6

    @property
    def algbw(self) -> float | None:
        """Algorithm bandwidth, B/s (nccl-tests: size / time)."""
        if self.data_bytes is None or not self.seconds > 0:
            return None
        return self.data_bytes / self.seconds

    @property
    def busbw(self) -> float | None:
        """Bus bandwidth, B/s (nccl-tests: algbw x its factor)."""
        algbw = self.algbw
        return None if algbw is None or self.factor is None else algbw * self.factor

    @property
    def roof(self) -> float | None:
        """Its bound over its time: the share of the link roof it ran at (None: unpriced or
        timed at 0)."""
        if self.bound is None or not self.seconds > 0:
            return None
        return self.bound / self.seconds


def summary(calls: tuple[CollectiveCall, ...] | list[CollectiveCall]) -> list[dict[str, object]]:
    """The calls of each collective (its name, kernel, group and size) together: their
    count and time, nccl-tests' algorithm and bus bandwidth of the total (size over time),
    and the share of the link roof (bound over time; None where unpriced), longest first."""
    groups: dict[tuple[Any, ...], list[CollectiveCall]] = {}
    for call in calls:
        key = (call.name, call.kernel, call.group, call.group_from, call.data_bytes, call.why)
        groups.setdefault(key, []).append(call)
    out: list[dict[str, object]] = []
    for (name, kernel, group, source, data, why), items in groups.items():
        seconds = sum(c.seconds for c in items)
        bounds = [c.bound for c in items]
        algbw = None if data is None or not seconds > 0 else float(data) * len(items) / seconds
        factor = items[0].factor
        out.append({
            "name": name, "kernel": kernel, "group": group, "group_from": source,
            "calls": len(items), "measured_s": seconds, "data_bytes": data,
            "algbw_Bps": algbw,
            "busbw_Bps": None if algbw is None or factor is None else algbw * factor,
            "bound_s": None if any(b is None for b in bounds) else sum(
                b for b in bounds if b is not None),
            "roof": None if any(b is None for b in bounds) or not seconds > 0 else sum(
                b for b in bounds if b is not None) / seconds,
            **({"why": why} if why else {})})
    return sorted(out, key=lambda row: -float(row["measured_s"]))  # type: ignore[arg-type]
