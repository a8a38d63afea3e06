"""Sweeps: a workload over an array of sizes priced at once, and where a regime changes.

:func:`sweep` prices a workload whose sizes are numpy arrays (``ops.matmul(np.arange(1,
4097), 8192, 8192)``, ``model.decode(batches, 4096)``) in one vectorized pass, by the rules
of :mod:`pytest_roofline.engine.analysis`: every figure of the :class:`Sweep` is an array over the
sweep's points (the regime an array of strings), where :func:`~.analysis.analyze`'s Result
holds plain floats. :func:`crossover` and :func:`knob_hint` find the size at which a regime
starts, by bisection over single points.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import fields
from ..errors import RooflineError, WorkloadError, brief
from ..hardware import Hardware, get_hardware
from .analysis import analyze
from .bounds import divide, latency_notes, program
from .regimes import REGIMES
from .settings import check_analysis, check_names
from .workload import Workload, intensity

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Sweep:
    """The roofline of a workload of arrays on one chip: each figure an array with one value
    per point of the sweep (times in s, FLOP/s, B, FLOP/B), the regime an array of strings,
    ``fits`` an array of bools (None when the workload declares no footprint). Figures of
    the chip (ridge, peak, bandwidth, capacity) are plain floats."""

    workload: str
    hw: str
    dtype: str
    flops: Floats
    bytes: Floats
    link_bytes: Floats
    intensity: Floats
    ridge: float
    peak: float
    bandwidth: float
    t_compute: Floats
    t_memory: Floats
    t_network: Floats
    time: Floats
    regime: NDArray[np.str_]
    attainable: Floats
    footprint: Floats
    capacity: float
    fits: NDArray[np.bool_] | None
    shares: dict[str, Floats]
    flops_per_mac: int = 2
    derate: float = 1.0
    peak_label: str = ""
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        import numpy as np

        shape = np.shape(self.time)
        for name in ("flops", "bytes", "link_bytes", "intensity", "t_compute", "t_memory",
                     "t_network", "time", "regime", "attainable", "footprint"):
            value = getattr(self, name)
            if not isinstance(value, np.ndarray) or value.shape != shape:
                raise WorkloadError(f"sweep {self.workload!r}: {name} must be an array of "
                                    f"shape {shape}, got {brief(value)}")

    def __len__(self) -> int:
        return int(self.time.size)

    def to_dict(self) -> fields.SweepRecord:
        """JSON-ready figures under the record's keys (:mod:`pytest_roofline.fields`), in the
        order of ``fields.RESULT``: each array a list. A sweep keeps no per-kernel figures to
        work out ``tensor_bytes`` and ``workload_intensity`` from."""
        fits = None if self.fits is None else self.fits.tolist()
        record: fields.SweepRecord = {
            "workload": self.workload, "hw": self.hw, "dtype": self.dtype,
            "flops": self.flops.tolist(), "bytes": self.bytes.tolist(),
            "link_bytes": self.link_bytes.tolist(), "intensity": self.intensity.tolist(),
            "dram_intensity": self.intensity.tolist(), "ridge": self.ridge,
            "regime": self.regime.tolist(), "time_s": self.time.tolist(),
            "t_compute_s": self.t_compute.tolist(), "t_memory_s": self.t_memory.tolist(),
            "t_network_s": self.t_network.tolist(), "attainable_flops": self.attainable.tolist(),
            "footprint_B": self.footprint.tolist(), "capacity_B": self.capacity, "fits": fits,
            "flops_per_mac": self.flops_per_mac, "derate": self.derate,
            "peak_label": self.peak_label}
        if self.notes:
            record[fields.NOTES] = list(self.notes)
        return record


def sweep(
    workload: Workload,
    hw: Hardware | str | os.PathLike[str],
    dtype: str | None = None,
    *,
    flops_per_mac: int = 2,
    derate: float = 1.0,
    sparse: bool = False,
) -> Sweep:
    """The roofline of *workload*, whose sizes may be numpy arrays, at every point at once
    (the settings as :func:`~.analysis.analyze`'s). A workload of plain numbers is a sweep
    of one point (arrays of shape ())."""
    import numpy as np

    if not isinstance(workload, Workload):
        raise WorkloadError(f"sweep() needs a Workload, got {brief(workload)} "
                            f"({type(workload).__name__})")
    chip = hw if isinstance(hw, Hardware) else get_hardware(hw)
    check_analysis(flops_per_mac, derate, sparse)
    p = program(workload, chip, dtype, flops_per_mac, derate, sparse)
    footprint = workload.footprint
    try:
        shape = np.broadcast_shapes(np.shape(p.time), np.shape(footprint))
    except ValueError:
        raise WorkloadError(f"workload {brief(workload.name)}: its footprint's shape "
                            f"{np.shape(footprint)} and its figures' {np.shape(p.time)} do "
                            f"not broadcast") from None

    def arr(value: Any) -> Floats:
        return np.array(np.broadcast_to(np.asarray(value, dtype=float), shape))

    capacity = chip.memory_capacity
    fits = None if type(footprint) is float and footprint == 0 else np.array(
        np.broadcast_to(np.asarray(footprint) <= capacity, shape))
    return Sweep(
        workload=workload.name, hw=chip.name, dtype=p.ridge_label.split(":")[1],
        flops=arr(p.flops), bytes=arr(p.bytes), link_bytes=arr(p.link_bytes),
        intensity=arr(intensity(p.flops, p.bytes, workload.name)),
        ridge=p.ridge_peak / chip.memory_bandwidth, peak=p.ridge_peak,
        bandwidth=chip.memory_bandwidth, t_compute=arr(p.t_compute),
        t_memory=arr(p.t_memory), t_network=arr(p.t_network), time=arr(p.time),
        regime=np.array(np.broadcast_to(np.asarray(p.regime), shape)),
        attainable=arr(divide(p.flops, p.time)), footprint=arr(footprint),
        capacity=capacity, fits=fits,
        shares={name: arr(value) for name, value in p.shares.items()},
        flops_per_mac=flops_per_mac, derate=float(derate), peak_label=p.ridge_label,
        notes=latency_notes(workload.kernels, chip))


def crossover(
    build: Callable[[int], Workload],
    hw: Hardware | str,
    *,
    regime: str = "compute",
    lo: int = 1,
    hi: int = 1 << 24,
    dtype: str | None = None,
    **settings: Any,
) -> int | None:
    """The smallest integer x in [lo, hi] at which ``build(x)`` is *regime*-bound.

    Assumes the regime changes once over the range (true of a batch or size sweep of one
    workload). Returns None when *regime* is reached nowhere in the range; *lo* when it holds
    from the start. Example: the batch at which a bf16 matmul turns compute-bound::

        crossover(lambda b: ops.matmul(b, 8192, 8192), "h100")
    """
    if not isinstance(regime, str) or regime not in REGIMES:
        raise RooflineError(f"regime must be one of {', '.join(REGIMES)}, got {brief(regime)}")
    try:
        if isinstance(lo, bool) or isinstance(hi, bool):
            raise TypeError
        low, high = operator.index(lo), operator.index(hi)
    except TypeError:
        low, high = 1, 0
    if low > high:
        raise RooflineError(f"crossover needs whole numbers lo <= hi, got lo={brief(lo)}, "
                            f"hi={brief(hi)}")
    lo, hi = low, high
    if not callable(build):
        raise RooflineError(f"crossover needs a function size -> Workload, got {brief(build)}")
    check_names(settings, "crossover")
    chip = hw if isinstance(hw, Hardware) else get_hardware(hw)

    def holds(x: int) -> bool:
        return bool(analyze(build(x), chip, dtype, **settings).regime == regime)

    if holds(lo):
        return lo
    if not holds(hi):
        return None
    return last_true(lambda x: not holds(x), lo, hi) + 1


def last_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """The last x in [low, high) with *predicate* true, given it holds at *low* and not at
    *high* and changes once in between (bisection: log2(high - low) calls)."""
    while high - low > 1:
        mid = (low + high) // 2
        if predicate(mid):
            low = mid
        else:
            high = mid
    return low


def knob_hint(workload: Workload, hw: Hardware | str, regime: str,
              dtype: str | None = None, **settings: Any) -> str | None:
    """Which value of the workload's size knob makes it *regime*-bound, as a phrase.

    ``"compute-bound from m >= 319"`` or ``"memory-bound up to batch <= 318"``; None when the
    workload has no knob or no value in the knob's range gives *regime*.
    """
    check_names(settings, "knob_hint")
    if not isinstance(workload, Workload):
        raise WorkloadError(f"knob_hint() needs a Workload, got {brief(workload)}")
    knob = workload.knob
    if knob is None:
        return None
    chip = hw if isinstance(hw, Hardware) else get_hardware(hw)

    def regime_at(x: int) -> Any:
        return analyze(knob.build(x), chip, dtype, **settings).regime

    try:
        if regime_at(knob.hi) == regime:
            at = crossover(knob.build, chip, regime=regime, lo=max(knob.lo, 1), hi=knob.hi,
                           dtype=dtype, **settings)
            if at is not None and at <= knob.value and regime_at(knob.value) != regime:
                # the regime changes more than once (on-chip reuse at middling sizes): name
                # the crossing above the current value
                at = crossover(knob.build, chip, regime=regime, lo=knob.value + 1, hi=knob.hi,
                               dtype=dtype, **settings)
            return None if at is None else f"{regime}-bound from {knob.name} >= {at}"
        if regime_at(knob.lo) == regime:
            last = last_true(lambda x: regime_at(x) == regime, knob.lo, knob.value)
            return f"{regime}-bound up to {knob.name} <= {last}"
    except RooflineError:
        return None
    return None
