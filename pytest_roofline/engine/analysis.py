"""Roofline analysis: a workload on a chip -> times per resource, intensity, ridge, regime.

Rules (the same for every caller, deterministic on any machine):

* Each kernel is bounded on its own. Its compute time is FLOPs over the peak of the unit it
  runs on in its precision; its memory time is bytes over the memory bandwidth; its network
  time is link bytes over the link bandwidth (one direction, every link of that kind unless
  the kernel names a count), plus the link's per-step latency for each of the kernel's
  ``link_steps`` (a collective's sequential steps; the latency is 0 where none is
  published). A collective that a fabric may reduce in the network (``Kernel.link_options``)
  takes the least bytes and steps of the algorithms its link's spec lists. The kernel takes
  the largest of the three (perfect overlap), and that resource is the kernel's regime.
  Ties go to compute, then memory.
* A program's time is the sum of its kernels' times. Its intensity is total FLOPs over total
  memory bytes. Its regime is the resource that holds the largest share of the time, each
  kernel's time counting for the resource that bounds it.
* A kernel and the kernels that run in its epilogue (``Kernel.epilogue_of``, see
  :mod:`pytest_roofline.engine.fusion`) are timed as one: the larger of their matrix-unit time,
  their vector-unit time and their memory time. The host kernel carries that time; the
  epilogue kernels keep their FLOPs and bytes at no time of their own.
* Off-chip bytes exclude the handoffs that stay on chip (``fusion.kept_on_chip``: a tensor
  passed straight to the next kernel that fits in the chip's largest on-chip memory). Where
  the spec publishes that memory's bandwidth, every byte the kernel moves (off-chip and kept)
  also crosses it, and the memory time is the larger of the two (a hierarchical roofline).
* ``ridge`` is the matrix-unit peak of the precision the matrix work is priced in (that of
  the matrix kernel with the most FLOPs; *dtype* only where no matrix kernel names one) over
  the memory bandwidth (for fp32 on a chip whose matrix units have no fp32 path, the fp32
  vector peak), so the ridge and the times never disagree. A program of vector work only
  (a norm, a softmax, an elementwise chain) is compared with the vector peak of the
  precision its largest vector kernel is priced in (an fp32 layernorm on an H100: 66.9
  TFLOP/s / 3.35 TB/s = 20.0 FLOP/B, not bf16's matrix ridge of 295.3). ``dtype`` and
  ``peak_label`` name that precision and peak (``"vector:fp32"``).
* FLOP convention: 2 FLOPs per multiply-accumulate (the vendors'). ``flops_per_mac=1`` halves
  every FLOP count and every peak alike, so intensities and ridges halve while times and
  regimes do not change.
* ``derate`` (0 < derate <= 1) scales every roof alike: it changes times, never a regime.
* Every figure of a result is finite and >= 0. Zero work (no FLOPs, no bytes) is a defined
  result: 0 s, intensity 0, attainable 0 FLOP/s, compute-bound by the tie rule. A program that
  does FLOPs but moves no memory bytes has no finite intensity and is a WorkloadError; a kernel
  inside a program may move none (a fused softmax stays on chip): its ``intensity`` is None.
  Figures too large for a float (sizes near 2**53 multiplied together) are a WorkloadError.
* ``measured`` (seconds a real run took) adds ``efficiency`` = roofline time / measured time,
  in (0, 1] (the rule: :mod:`pytest_roofline.efficiency`). A run faster than its bound has
  none (None, never a clamped 1): within the measurement's allowance it is at the bound,
  beyond it the workload overcounts, or its data stayed in a faster cache (``measuring.
  diagnose`` says which); ``Result.notes`` gives the figure. A measurement naming the cores
  it kept busy (``Measurement.parallelism``) on a calibration with a memory roof per thread
  count is set against that many threads' roof (``Hardware.memory_roof``, named by
  ``Result.roof_threads``): numpy's elementwise loops run on one core. Compute peaks stay
  every core's; a bare number of seconds is set against the chip's own roofs.
  ``limit`` is the run's physical limit (:mod:`pytest_roofline.engine.limits`): a run above
  its roof but within the limit is a finding (a cache, a roof measured low), never a
  failure; only a run faster than the limit is "faster than the bound".
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Protocol, cast

from .. import fields
from ..efficiency import Efficiency, efficiency
from ..errors import RooflineError, WorkloadError, brief
from ..hardware import Hardware, foreign_to_this_machine, get_hardware
from .bounds import latency_notes, program
from .limits import limit_of
from .regimes import REGIMES as REGIMES
from .settings import check_analysis
from .workload import Number, Workload, intensity, is_array


class Timed(Protocol):
    """Anything with a measured ``time`` in s, such as ``pytest_roofline.Measurement`` (whose
    optional ``parallelism``, cores kept busy, picks a per-thread memory roof)."""

    @property
    def time(self) -> float: ...


class KernelResult(NamedTuple):
    """One kernel's roofline on the chip (totals over its repetitions); plain floats."""

    name: str
    count: float  # type: ignore[assignment]  # the field, not tuple.count
    flops: float
    bytes: float
    link_bytes: float
    intensity: float | None  # None: the kernel moves no memory bytes (it stays on chip)
    peak: float
    peak_label: str
    t_compute: float
    t_memory: float
    t_network: float
    time: float
    regime: str
    share: float  # fraction of the program's time
    fused: tuple[str, ...] = ()  # kernels run in this kernel's epilogue (timed with it)
    onchip_bytes: float = 0.0  # handoff bytes kept on chip, not charged to off-chip memory
    epilogue_of: str | None = None  # the kernel this one runs in (its time is counted there)


class Result(NamedTuple):
    """The roofline of a workload on one chip, every figure a plain float (times in s, FLOP/s,
    B, FLOP/B) and the regime a string. An immutable record built by :func:`analyze` through
    its constructor; a workload of arrays is a :class:`~pytest_roofline.engine.sweeps.Sweep`."""

    workload: str
    hw: str
    dtype: str
    flops: float
    bytes: float
    link_bytes: float
    intensity: float
    ridge: float
    peak: float
    bandwidth: float
    t_compute: float
    t_memory: float
    t_network: float
    time: float
    regime: str
    attainable: float
    footprint: float
    capacity: float
    fits: bool | None  # None when the workload declares no footprint
    shares: dict[str, float]
    kernels: tuple[KernelResult, ...]
    flops_per_mac: int = 2
    derate: float = 1.0
    peak_label: str = ""  # which peak sets the ridge, e.g. "matrix:bf16" or "vector:fp32"
    measured: float | None = None  # s, a timed run of the same work (None: not measured)
    efficiency: float | None = None  # time / measured: the fraction of the roof reached
    roof_threads: int | None = None  # the measured memory roof of this many threads was used
    #: what the figures rest on beyond the chip's published roofs (a measured link latency)
    notes: tuple[str, ...] = ()
    #: s, the physical limit of a measured run (:mod:`pytest_roofline.engine.limits`): the
    #: least time the work can take, what "faster than physics" is judged by (None: not
    #: measured)
    limit: float | None = None

    @property
    def bound_times(self) -> dict[str, float]:
        return {"compute": self.t_compute, "memory": self.t_memory, "network": self.t_network}

    @property
    def tensor_bytes(self) -> float:
        """Every byte the kernels read and write (B): the off-chip ``bytes`` plus the
        handoffs this chip's on-chip memory keeps (``KernelResult.onchip_bytes``)."""
        kept = sum((k.onchip_bytes for k in self.kernels), 0.0)
        return self.bytes + kept

    @property
    def workload_intensity(self) -> float:
        """The workload's intensity over all its tensor traffic (FLOP/B), the same on every
        chip. ``intensity`` is the DRAM intensity on this chip, after on-chip reuse: the
        handoffs its on-chip memory holds are not DRAM traffic, so it is higher wherever a
        chip keeps more on chip (ResNet-50 at batch 32: 140 over all tensors, 4320 of DRAM
        traffic on an H100 whose 50 MB L2 holds the activations)."""
        tensor = self.tensor_bytes
        if tensor == self.bytes:
            return self.intensity
        return float(intensity(self.flops, tensor, self.workload))

    def to_dict(self) -> fields.Record:
        """JSON-ready figures, under the record's keys (:mod:`pytest_roofline.fields`): those
        of ``fields.RESULT``, in its order."""
        record: fields.Record = {
            "workload": self.workload, "hw": self.hw, "dtype": self.dtype,
            "flops": self.flops, "bytes": self.bytes, "link_bytes": self.link_bytes,
            "intensity": self.intensity, "dram_intensity": self.intensity,
            "tensor_bytes": self.tensor_bytes, "workload_intensity": self.workload_intensity,
            "ridge": self.ridge, "regime": self.regime, "time_s": self.time,
            "t_compute_s": self.t_compute, "t_memory_s": self.t_memory,
            "t_network_s": self.t_network, "attainable_flops": self.attainable,
            "footprint_B": self.footprint, "capacity_B": self.capacity, "fits": self.fits,
            "flops_per_mac": self.flops_per_mac, "derate": self.derate,
            "peak_label": self.peak_label}
        if self.measured is not None:  # fields.MEASURED
            record["measured_s"] = self.measured
            record["efficiency"] = self.efficiency
            record["limit_s"] = self.limit
        if self.roof_threads is not None:
            record[fields.ROOF_THREADS] = self.roof_threads
        if self.notes:
            record[fields.NOTES] = list(self.notes)
        return record


def _kernel_intensity(flops: Number, nbytes: Number, name: str) -> Any:
    """A kernel's intensity (a float, or an array in a sweep), or None when it moves no memory
    bytes (it stays on chip)."""
    if type(nbytes) is float and nbytes > 0 and type(flops) is float:  # the common case
        ratio = flops / nbytes
        if ratio < float("inf"):
            return ratio  # (one that overflows: intensity's error, below)
    if not (type(flops) is float and type(nbytes) is float) and (
            is_array(flops) or is_array(nbytes)):
        import numpy as np

        if np.any((np.asarray(nbytes) <= 0) & (np.asarray(flops) > 0)):
            return None
    elif nbytes <= 0 and flops > 0:
        return None
    return intensity(flops, nbytes, name)


def analyze(
    workload: Workload,
    hw: Hardware | str | os.PathLike[str],
    dtype: str | None = None,
    *,
    flops_per_mac: int = 2,
    derate: float = 1.0,
    sparse: bool = False,
    measured: float | Timed | None = None,
) -> Result:
    """The roofline of *workload* on *hw* (a Hardware, a name or a spec path): a
    :class:`Result` of plain floats. A workload of numpy arrays (a sweep) is
    :func:`pytest_roofline.engine.sweeps.sweep`'s: here it is a WorkloadError saying so.

    *dtype* is the precision of kernels that name none (default: the chip's default, bf16 on
    most), and of the ridge only where no matrix kernel names one. Kernels that name a
    precision keep it. *measured* (s, or anything with a ``time``
    in s such as a ``Measurement``) sets ``Result.measured`` and ``Result.efficiency``. A
    Measurement timed on this machine is set only against this machine (a calibration such
    as ``host``, or a chip it holds): any other chip is a RooflineError saying why. See the
    module docstring for the rules.
    """
    if not isinstance(workload, Workload):
        raise WorkloadError(f"analyze() needs a Workload, got {brief(workload)} "
                            f"({type(workload).__name__})")
    chip = hw if isinstance(hw, Hardware) else get_hardware(hw)
    check_analysis(flops_per_mac, derate, sparse)
    seconds = None if measured is None else _measured(measured)
    if seconds is not None and getattr(measured, "here", False) is True:
        reason = foreign_to_this_machine(chip)
        if reason is not None:
            raise RooflineError(f"a measurement against {chip.name} is refused: {reason}")
    roof_threads, published = None, chip
    if seconds is not None and chip.memory_by_threads:
        roof_threads, bandwidth = chip.memory_roof(_parallelism(measured))
        if roof_threads is not None and bandwidth != chip.memory_bandwidth:
            chip = chip.replace(memory_bandwidth=bandwidth, memory_by_threads={})
    p = program(workload, chip, dtype, flops_per_mac, derate, sparse)
    time, footprint = p.time, workload.footprint
    if not (type(time) is float and type(footprint) is float):
        raise WorkloadError(f"workload {brief(workload.name)} holds arrays (a sweep): "
                            f"analyze() prices one point; pytest_roofline.sweep() takes "
                            f"arrays")
    rows, hosts = p.rows, p.hosts
    kernels = tuple([
        KernelResult(
            name=row.name, count=row.count, flops=row.flops, bytes=row.bytes,
            link_bytes=row.link_bytes,
            intensity=_kernel_intensity(row.flops, row.bytes, row.name),
            peak=row.peak, peak_label=row.label, t_compute=row.t_compute,
            t_memory=row.t_memory, t_network=row.t_network, time=row.time, regime=row.regime,
            share=row.time / time if time > 0 else 0.0,
            fused=tuple(workload.kernels[j].name for j in hosts[i]) if i in hosts else (),
            onchip_bytes=row.kept, epilogue_of=kernel.epilogue_of)
        for i, (row, kernel) in enumerate(zip(rows, workload.kernels, strict=True))])
    capacity = chip.memory_capacity
    flops = p.flops
    result = Result(
        workload=workload.name, hw=chip.name, dtype=p.ridge_label.partition(":")[2],
        flops=flops, bytes=p.bytes, link_bytes=p.link_bytes,
        intensity=(kernels[0].intensity if len(kernels) == 1  # the one kernel's figures
                   and kernels[0].intensity is not None
                   else cast(float, intensity(flops, p.bytes, workload.name))),
        ridge=p.ridge_peak / chip.memory_bandwidth,
        peak=p.ridge_peak, bandwidth=chip.memory_bandwidth, t_compute=p.t_compute,
        t_memory=p.t_memory, t_network=p.t_network, time=time, regime=p.regime,
        attainable=flops / time if time > 0 else 0.0, footprint=footprint, capacity=capacity,
        fits=None if footprint == 0 else footprint <= capacity, shares=p.shares,
        kernels=kernels, flops_per_mac=flops_per_mac, derate=float(derate),
        peak_label=p.ridge_label, measured=seconds, roof_threads=roof_threads,
        notes=latency_notes(workload.kernels, chip))
    if seconds is None:
        return result
    limit = limit_of(result, published)
    return result._replace(
        limit=limit, efficiency=efficiency_of(time, seconds, measured, limit=limit),
        notes=result.notes + _faster_note(time, seconds, measured, limit))


def efficiency_of(time: float, seconds: float, measured: Any = None, *,
                  limit: float | None = None) -> float | None:
    """Roofline time over measured time where the run is under its bound; None where it is
    not (no work, at the bound within noise, above it or faster than physics): never a
    figure clamped to 1. The rule, and its allowance for noise, is
    :mod:`pytest_roofline.efficiency`'s."""
    return _judged(time, seconds, measured, limit).value


def _judged(time: float, seconds: float, measured: Any, limit: float | None) -> Efficiency:
    spread = getattr(measured, "spread", 0.0)
    return efficiency(time, seconds, spread=float(spread) if isinstance(
        spread, (int, float)) and not isinstance(spread, bool) else 0.0, limit=limit)


def _faster_note(time: float, seconds: float | None, measured: Any,
                 limit: float | None) -> tuple[str, ...]:
    if seconds is None:
        return ()
    judged = _judged(time, seconds, measured, limit)
    if judged.faster:
        return (f"{judged.describe()}: measured {seconds:.3g} s beats the physical limit "
                f"({judged.floor:.3g} s) by more than its allowance ({judged.allowance:.3g} "
                f"s), so no efficiency is given: the workload overcounts its FLOPs or bytes, "
                f"or the roofs are too low (a calibration on a busy machine)",)
    if judged.above_roof:
        return (f"{judged.describe()}: measured {seconds:.3g} s beats the roofline time "
                f"({time:.3g} s) but not the physical limit ({judged.floor:.3g} s): its "
                f"data came from a cache the bound charges to memory, or a roof was "
                f"measured low; no efficiency is given, and it is no failure",)
    if judged.at_bound or judged.no_work:
        return (f"{judged.describe()} (measured {seconds:.3g} s, bound {time:.3g} s), so "
                f"no efficiency is given",)
    return ()


def _measured(value: Any) -> float | None:
    """A measured time in s from a number or an object with a ``time`` (a Measurement)."""
    if value is None:
        return None
    seconds = getattr(value, "time", value)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (
            0 < seconds < float("inf")):
        raise RooflineError(f"measured must be a time in s > 0 (a number or a Measurement), "
                            f"got {value!r}")
    return float(seconds)


def _parallelism(value: Any) -> float | None:
    """The cores a measurement kept busy, when it says (a Measurement's ``parallelism``)."""
    cores = getattr(value, "parallelism", None)
    if isinstance(cores, bool) or not isinstance(cores, (int, float)) or not (
            0 <= cores < float("inf")):
        return None
    return float(cores)
