"""The physical limit: the second ceiling a measured time is judged by.

The roofline bound (:mod:`.bounds`) charges every byte to off-chip memory (DRAM, HBM) and
every FLOP to the peak of its precision: the roof users know, and what the % of roof reads
against. A real run can beat it honestly: data kept in the last-level cache between two
kernels never crosses DRAM, and a calibrated roof, timed by a few kernels on a busy moment,
can sit under what the chip can do. So the *alarm* (a run faster than physics, meaning a
count or a clock is wrong) is set against a second, lower ceiling, the least time the work
can take on this chip:

* **memory**: the fastest place the data could come from. Of the ``b`` bytes a call moves,
  those that fit in the last-level cache (the chip's largest on-chip level, capacity ``C``,
  bandwidth ``B_llc`` where the spec publishes one) come from there, the rest from DRAM
  (bandwidth ``B``)::

      t_memory >= max(b / B_llc, (b - C) / B)

  Without a published cache bandwidth the first term is 0: only the bytes beyond the cache
  count, which can only lower the limit (a missing figure never raises it). A calibrated
  chip's cache bandwidths are timed roofs, not limits, and are left out the same way; its
  cache size is the one the OS reports (``provenance.limits.llc_B``).
* **compute**: the chip's theoretical peak. A published chip's peaks are its datasheet's
  (already theoretical: units x FLOPs per clock x boost clock), so the limit equals the
  roof. A calibrated CPU's are in ``provenance.limits.peaks`` (cores x FMA lanes x the
  highest clock, :mod:`pytest_roofline.measuring.ceilings`); a precision with none there
  has no compute limit (0), never the timed roof. A calibrated GPU keeps none: its GEMM
  roof, which a call above it raises (``measuring.recheck``), stays its limit.
* **network**: the link time, as the bound prices it (no cache holds a collective).

A kernel's limit is the largest of the three, a kernel and its epilogue kernels taken as
one (their bytes together); a program's is the sum over its kernels, never above its bound.
The limit ignores ``derate`` and a per-thread memory roof: it is the chip's, not a setting's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..hardware import Hardware
from .fusion import onchip_level

__all__ = ["cache_bytes", "limit_of", "theoretical_ratio"]

_INF = float("inf")


def _limits(chip: Hardware) -> Mapping[str, Any]:
    value = (chip.provenance or {}).get("limits")
    return value if isinstance(value, Mapping) else {}


def calibrated(chip: Hardware) -> bool:
    """Whether *chip*'s roofs were timed on a machine (a calibration), not published."""
    return bool((chip.provenance or {}).get("device"))


def cache_bytes(chip: Hardware) -> tuple[float, float | None]:
    """(capacity in B, bandwidth in B/s or None) of the last-level cache the limit counts:
    the OS's size on a calibrated chip (with no bandwidth: a timed one is a roof), else the
    spec's largest on-chip level; (0, None) where neither says."""
    level = onchip_level(chip)
    if calibrated(chip):
        size = _limits(chip).get("llc_B")
        if isinstance(size, (int, float)) and not isinstance(size, bool) and 0 < size < _INF:
            return max(float(size), level.capacity if level else 0.0), None
        return (level.capacity if level else 0.0), None
    if level is None:
        return 0.0, None
    return level.capacity, level.bandwidth


def theoretical_ratio(chip: Hardware, label: str, roof: float) -> float:
    """Theoretical peak over the roof's *roof* FLOP/s for a peak *label* (``matrix:fp32``, or
    ``a + b`` for a kernel and its epilogue: the largest ratio of the parts): 1 on a published
    chip; on a calibrated one, from ``provenance.limits.peaks``, never below 1, and infinite
    (no compute limit) for a precision it has no figure for."""
    if not calibrated(chip):
        return 1.0
    peaks = _limits(chip).get("peaks")
    if not isinstance(peaks, Mapping):
        # a GPU's calibration keeps no theoretical peaks: its GEMM roof, which a faster call
        # raises (measuring.recheck), is its limit, as before there were two ceilings
        return 1.0 if (chip.provenance or {}).get("device") != "cpu" else _INF
    worst = 1.0
    for part in label.split(" + "):
        theoretical = peaks.get(part.partition(":")[2] or part)
        if not (isinstance(theoretical, (int, float)) and not isinstance(theoretical, bool)
                and 0 < theoretical < _INF) or not roof > 0:
            return _INF
        worst = max(worst, float(theoretical) / roof)
    return worst


def limit_of(result: Any, chip: Hardware) -> float:
    """The physical limit (s) of *result* (an :class:`~pytest_roofline.engine.analysis.
    Result` of *chip*): see the module docstring. 0 for no work; never above its bound."""
    kernels = tuple(result.kernels)
    capacity, llc_bandwidth = cache_bytes(chip)
    dram = chip.memory_bandwidth
    derate = float(getattr(result, "derate", 1.0) or 1.0)
    total = 0.0
    for kernel, moved in _groups(kernels):
        count = float(kernel.count)
        if not count > 0:
            continue
        per_call = moved / count
        t_memory = count * max(per_call / llc_bandwidth if llc_bandwidth else 0.0,
                               max(0.0, per_call - capacity) / dram)
        ratio = theoretical_ratio(chip, str(kernel.peak_label), float(kernel.peak))
        t_compute = float(kernel.t_compute) * derate / ratio
        t_network = float(kernel.t_network) * derate
        total += max(t_compute, t_memory, t_network)
    return min(total, float(result.time))


def _groups(kernels: tuple[Any, ...]) -> Iterable[tuple[Any, float]]:
    """Each kernel that carries a time, with the bytes of it and its epilogue kernels (an
    epilogue names the last kernel before it of that name, as the bounds do)."""
    moved: dict[int, float] = {}
    last: dict[str, int] = {}
    for i, kernel in enumerate(kernels):
        host = None if kernel.epilogue_of is None else last.get(kernel.epilogue_of)
        if host is None:
            last[kernel.name] = i
            moved[i] = float(kernel.bytes)
        else:
            moved[host] += float(kernel.bytes)
    return ((kernels[i], nbytes) for i, nbytes in moved.items())
