"""Re-checking a calibrated roof that a measurement shows to be stale.

A measurement that beats its roofline bound is impossible for honest counts, unless the roof
itself is too low: a calibration taken while other processes used the machine. A calibration
records the load it saw (``provenance.conditions.other_cores``: the cores other processes
kept busy while it measured), and a measurement the load beside it (``other_cores``). Before
a measurement is judged against a CPU calibration, the roof it is set against (the memory
roof of the thread count it used, or the GEMM peak of its precision) is measured again,
quickly (a few samples, a second or two), when

* the measurement beat its bound, or
* the calibration was taken under load (:data:`~.cpu.LOADED` cores or more kept busy by
  other processes) and the measurement ran on a quieter machine (:data:`~.cpu.CALM` cores
  fewer kept busy): its roofs are below what the machine reaches now, so every efficiency
  against them reads high.

If the roof holds (within :data:`MOVED`), the measurement is judged as it was, and a failure
says the roof held. If it moved up, the measurement is judged against the roof measured now
(:func:`refreshed`; the result's notes say so), and the machine is calibrated again (in the
mode of the cached calibration: quick or full) and the new spec cached where it may replace
the old one (a calibration taken under load never replaces a quiet one). Each roof is
re-checked once per process; later measurements against it use what that found.

Against a GPU calibration (``cuda:N``) a compute-bound call that ran above the calibrated
GEMM peak of its precision raises that peak to the rate it reached, for its judgement and
in the cached calibration, and says so: a roof is the highest rate the chip reaches.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .. import units
from ..errors import RooflineError
from ..specfiles import load_yaml
from . import calibration, probe
from .cpu import CALM, LOADED, QUICK, Plan, _gemm, _stream
from .diagnose import calibration_load, is_faster

#: A re-measured roof this much above the calibration's has moved (a calibration repeats
#: within 5% on a quiet machine; twice that leaves room for a busy one).
MOVED = 0.10


@dataclass(frozen=True)
class Rechecked:
    """One roof measured again: its key (``memory.1t``, ``matrix.fp64``), its words, the
    calibration's figure and the one measured now, and the sentence saying what followed."""

    key: str
    words: str
    before: float
    now: float
    note: str

    @property
    def moved(self) -> bool:
        return self.now > self.before * (1 + MOVED)


_DONE: dict[tuple[str, str], Rechecked] = {}


def _measure_memory(threads: int) -> float:
    caches = probe.caches()
    llc = caches[-1].capacity if caches else 32 * float(1 << 20)
    pools: list[ThreadPoolExecutor] = []
    try:
        samplers = _stream(threads, Plan(), llc, pools)
        return max(sample() for _ in range(3) for sample, _ in samplers.values())
    finally:
        for pool in pools:
            pool.shutdown()


def _measure_peak(dtype: str) -> float:
    sample, _ = _gemm({"fp64": "float64", "fp32": "float32"}[dtype], QUICK)
    return max(sample() for _ in range(3))


def _roof(result: Any, chip: Any) -> tuple[str, str, float, Any] | None:
    """What to re-measure: (key, words, the calibration's figure, a measuring call)."""
    if str(result.regime) == "memory":
        threads = result.roof_threads or int((chip.provenance or {}).get("cores") or 1)
        figure = chip.memory_by_threads.get(threads, chip.memory_bandwidth) \
            if result.roof_threads else chip.memory_bandwidth
        return (f"memory.{threads}t", f"{threads}-thread memory roof", float(figure),
                lambda: _measure_memory(threads))
    label = str(result.peak_label)
    dtype = label.split(":", 1)[1] if label.startswith("matrix:") else ""
    if dtype in ("fp64", "fp32") and dtype in chip.matrix:
        return (f"matrix.{dtype}", f"{dtype} GEMM peak", float(chip.matrix[dtype]),
                lambda: _measure_peak(dtype))
    return None


def _cpu_calibration(chip: Any) -> Mapping[str, Any] | None:
    provenance = getattr(chip, "provenance", None) or {}
    return provenance if provenance.get("device") == "cpu" else None


def _checked(result: Any, chip: Any) -> Rechecked | None:
    """The roof of *result* on *chip* measured again (once per process and roof),
    recalibrating when it moved; None when *chip* is no CPU calibration or the roof is not
    one this re-measures."""
    provenance = _cpu_calibration(chip)
    if provenance is None:
        return None
    roof = _roof(result, chip)
    if roof is None:
        return None
    key, words, before, measure = roof
    done = _DONE.get((chip.name, key))
    if done is not None:
        return done
    now = measure()
    unit = "B/s" if key.startswith("memory") else "FLOP/s"
    seen = (f"re-checked {chip.name}'s {words}: {units.si(now, unit)} now against "
            f"{units.si(before, unit)} in the calibration")
    if now <= before * (1 + MOVED):
        note = f"{seen}: the roof holds, so the counts or a cache explain it."
    else:
        note = f"{seen}: the roof moved. {_recalibrate(provenance)}"
    _DONE[(chip.name, key)] = checked = Rechecked(key, words, before, now, note)
    return checked


def recheck(result: Any, chip: Any) -> str | None:
    """A sentence on the re-checked roof of a faster-than-bound *result* on *chip* (a CPU
    calibration), recalibrating when the roof moved; None when *chip* is no CPU calibration
    or the roof is not one this re-measures."""
    checked = _checked(result, chip)
    return checked.note if checked is not None else None


def stale(chip: Any, measured: Any) -> str | None:
    """Why *chip*'s roofs are stale for *measured* (a Measurement): the calibration was taken
    under load and the measurement on a quieter machine. None when not (or unknown)."""
    if _cpu_calibration(chip) is None:
        return None
    then = calibration_load(chip)
    now = getattr(measured, "other_cores", None)
    if then is None or now is None or then < LOADED or not now + CALM <= then:
        return None
    return (f"{chip.name} was calibrated while other processes kept {then:.1f} cores busy, "
            f"and this call was timed with {float(now):.1f} busy")


def raised(chip: Any, checked: Rechecked) -> Any:
    """*chip* with the roof of *checked* raised to the figure measured now (never lowered):
    the memory roof of its thread count and of every larger count, or the GEMM peak."""
    provenance = {**chip.provenance,
                  "rechecked": {**(chip.provenance.get("rechecked") or {}),
                                checked.key: float(f"{checked.now:.6g}")}}
    if checked.key.startswith("memory."):
        threads = int(checked.key.split(".", 1)[1][:-1])
        by_threads = {n: max(v, checked.now) if n >= threads else v
                      for n, v in chip.memory_by_threads.items()}
        return chip.replace(memory_bandwidth=max(chip.memory_bandwidth, checked.now),
                            memory_by_threads=by_threads, provenance=provenance)
    dtype = checked.key.split(".", 1)[1]
    matrix = {**chip.matrix, dtype: max(float(chip.matrix[dtype]), checked.now)}
    return chip.replace(matrix=matrix, provenance=provenance)


def refreshed(result: Any, chip: Any, measured: Any) -> tuple[Any, str] | None:
    """*chip* with the roof *result* was set against measured again and raised, and the
    sentence saying why and what, when *measured* beat the bound or ran on a machine quieter
    than the calibration's (see the module docstring) and the roof moved; else None."""
    if getattr(measured, "here", False) is not True:
        return None
    if _gpu_calibration(chip):
        return _raised_peak(result, chip)
    if _cpu_calibration(chip) is None:
        return None
    why = ("the measurement beat its bound"
           if is_faster(result, float(getattr(measured, "spread", 0.0))) else
           stale(chip, measured))
    if why is None:
        return None
    checked = _checked(result, chip)
    if checked is None or not checked.moved or checked.key in (
            chip.provenance.get("rechecked") or {}):
        return None  # held, or already raised on this chip
    unit = "B/s" if checked.key.startswith("memory") else "FLOP/s"
    return raised(chip, checked), (
        f"the calibrated {checked.words} was stale ({why}): re-measured at "
        f"{units.si(checked.now, unit)} against {units.si(checked.before, unit)} in the "
        f"calibration, and this measurement is judged against the figure measured now")


def _gpu_calibration(chip: Any) -> bool:
    provenance = getattr(chip, "provenance", None) or {}
    return str(provenance.get("device") or "").startswith("cuda")


def _raised_peak(result: Any, chip: Any) -> tuple[Any, str] | None:
    """A GPU calibration whose GEMM peak a compute-bound call beat: the peak raised to the
    rate the call reached, in the cached calibration too, and the sentence saying so. A
    roof is the highest rate the chip reaches, and this run reached more than the
    calibration's samples (another GEMM shape or layout, a higher clock). Memory-bound calls
    are left alone: a warm cache, not a higher roof, explains a copy faster than DRAM."""
    label = str(result.peak_label)
    dtype = label.split(":", 1)[1] if label.startswith("matrix:") else ""
    measured = float(result.measured or 0)
    if str(result.regime) != "compute" or dtype not in chip.matrix or not measured > 0:
        return None
    before = float(chip.matrix[dtype])
    now = before * float(result.time) / measured
    if not now > before:
        return None
    key = f"matrix.{dtype}"
    checked = Rechecked(key, f"{dtype} GEMM peak", before, now, "")
    cached = _store_peak(str(chip.provenance.get("device")), key, now)
    return raised(chip, checked), (
        f"this call ran above {chip.name}'s calibrated {dtype} GEMM peak, at "
        f"{units.si(now, 'FLOP/s')} against {units.si(before, 'FLOP/s')}: a roof is the "
        f"highest rate the chip reaches, so the peak is raised to it for this judgement"
        f"{cached}")


def _store_peak(device: str, key: str, now: float) -> str:
    """Raise *key* to *now* in *device*'s cached calibration; the words saying where."""
    path = calibration.cache_path(device)
    try:
        with calibration.locked(path):
            spec = load_yaml(path)
            section, name = key.split(".", 1)
            table = spec.get(section)
            if not isinstance(table, dict) or not isinstance(table.get(name), str):
                return ""
            table[name] = f"{now:.6g} FLOP/s"
            provenance = spec.setdefault("provenance", {})
            provenance.setdefault("raised", {})[key] = float(f"{now:.6g}")
            calibration.save(path, spec)
    except (OSError, RooflineError):
        return " (the cached calibration could not be updated)"
    return f" and in the cached calibration ({path})"


def _recalibrate(provenance: Any) -> str:
    quick = bool((provenance.get("conditions") or {}).get("quick"))
    # the lock of first uses: pytest-xdist workers re-checking at once measure one at a time
    with calibration.locked(calibration.cache_path("cpu")):
        spec, _ = calibration.calibrate("cpu", quick=quick)
        path, kept = calibration.store("cpu", spec)
    loaded = "; it was taken under load too" if calibration.quiet(spec) is False else ""
    if kept:
        return f"It was measured again, but {kept}{loaded}."
    return (f"The machine was calibrated again ({path}){loaded}: measurements are judged "
            f"against the roof measured now, and later runs against the new calibration.")
