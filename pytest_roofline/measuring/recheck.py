"""Re-checking a calibrated roof before a measurement faster than its bound fails a test.

A measurement that beats its roofline bound is impossible for honest counts, unless the roof
itself is too low: a calibration taken while other processes used the machine. Before such a
measurement fails a test, the roof it was set against (the memory roof of the thread count it
used, or the GEMM peak of its precision) is measured again, quickly: a few samples, a second
or two. If the roof holds (within :data:`MOVED`), the failure stands and says so. If it moved
up, the machine is calibrated again (in the mode of the cached calibration: quick or full),
the new spec is cached where it may replace the old one (a calibration taken under load never
replaces a quiet one), and the failure says so: the test is judged on the roofs it ran with,
and its next run on the new ones. Each roof is re-checked once per process.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import units

#: A re-measured roof this much above the calibration's has moved (a calibration repeats
#: within 5% on a quiet machine; twice that leaves room for a busy one).
MOVED = 0.10
_DONE: dict[tuple[str, str], str] = {}


def _measure_memory(threads: int) -> float:
    from . import probe
    from .cpu import Plan, _stream

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
    from .cpu import QUICK, _gemm

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


def recheck(result: Any, chip: Any) -> str | None:
    """A sentence on the re-checked roof of a faster-than-bound *result* on *chip* (a CPU
    calibration), recalibrating when the roof moved; None when *chip* is no CPU calibration
    or the roof is not one this re-measures."""
    provenance = getattr(chip, "provenance", None) or {}
    if provenance.get("device") != "cpu":
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
    _DONE[(chip.name, key)] = note
    return note


def _recalibrate(provenance: Any) -> str:
    from . import calibration

    quick = bool((provenance.get("conditions") or {}).get("quick"))
    # the lock of first uses: pytest-xdist workers re-checking at once measure one at a time
    with calibration.locked(calibration.cache_path("cpu")):
        spec, _ = calibration.calibrate("cpu", quick=quick)
        path, kept = calibration.store("cpu", spec)
    loaded = "; it was taken under load too" if calibration.quiet(spec) is False else ""
    if kept:
        return f"It was measured again, but {kept}{loaded}."
    return (f"The machine was calibrated again ({path}){loaded}: this test is judged on the "
            f"roofs it ran with, its next run on the new ones.")
