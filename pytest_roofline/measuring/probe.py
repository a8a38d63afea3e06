"""What the host says about itself: CPU model, cores, caches, clocks, memory, BLAS.

Everything here is read, not measured: ``/proc/cpuinfo``, ``/sys/devices/system/cpu``,
``/proc/meminfo`` on Linux, the standard library elsewhere. A figure that cannot be read is
None, never a guess.
"""

from __future__ import annotations

import hashlib
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class Cache:
    """One data (or unified) cache level, as the OS reports it."""

    name: str  # "L1d", "L2", "L3"
    level: int
    capacity: float  # B


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _size(text: str) -> float | None:
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}
    text = text.strip().upper()
    try:
        if text and text[-1] in scale:
            return float(text[:-1]) * scale[text[-1]]
        return float(text)
    except ValueError:
        return None


def caches() -> tuple[Cache, ...]:
    """Data and unified caches of cpu0, smallest first (empty when the OS does not say)."""
    found: dict[int, Cache] = {}
    for index in sorted(_SYS_CPU.glob("cpu0/cache/index*")):
        kind, level, size = (_read(index / f) for f in ("type", "level", "size"))
        if kind not in ("Data", "Unified") or level is None or size is None:
            continue
        capacity = _size(size)
        if capacity is None or not level.isdigit():
            continue
        lv = int(level)
        found[lv] = Cache(name=f"L{lv}d" if kind == "Data" else f"L{lv}", level=lv,
                          capacity=capacity)
    return tuple(found[k] for k in sorted(found))


def cpu_model() -> str:
    text = _read(Path("/proc/cpuinfo")) or ""
    for line in text.splitlines():
        if line.lower().startswith(("model name", "hardware", "processor\t:")) and ":" in line:
            value = line.split(":", 1)[1].strip()
            if value and not value.isdigit():
                return value
    return platform.processor() or platform.machine() or "unknown CPU"


def cores() -> int:
    """CPUs this process may run on (the affinity mask, else the count of the machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def blas_threads() -> int:
    """The threads a BLAS call runs on: the allowed cores, or fewer where
    ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` or ``OMP_NUM_THREADS`` says so."""
    limit = cores()
    for variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        text = os.environ.get(variable, "").strip()
        if text.isdigit() and int(text) >= 1:
            return min(limit, int(text))
    return limit


def clock() -> float | None:
    """The highest clock the OS reports for cpu0, in Hz (cpufreq, else /proc/cpuinfo)."""
    khz = _read(_SYS_CPU / "cpu0" / "cpufreq" / "cpuinfo_max_freq")
    if khz and khz.isdigit():
        return float(khz) * 1e3
    text = _read(Path("/proc/cpuinfo")) or ""
    mhz = [line.split(":", 1)[1] for line in text.splitlines() if line.startswith("cpu MHz")]
    try:
        return max(float(m) for m in mhz) * 1e6 if mhz else None
    except ValueError:
        return None


def memory_capacity() -> float:
    """Physical memory in B (/proc/meminfo, else sysconf); 1 GiB when nothing says."""
    text = _read(Path("/proc/meminfo")) or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return float(parts[1]) * 1024
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return float(1 << 30)


def blas() -> dict[str, Any]:
    """numpy's BLAS: name, version and configuration, as numpy reports them."""
    import numpy as np

    info: dict[str, Any] = {"numpy": np.__version__}
    try:
        config = np.show_config(mode="dicts")  # type: ignore[func-returns-value]
        found = (config or {}).get("Build Dependencies", {}).get("blas", {})
        info.update({k: found[k] for k in ("name", "version", "openblas configuration")
                     if k in found})
    except (TypeError, AttributeError):  # numpy < 1.25
        pass
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var):
            info[var] = os.environ[var]
    try:  # the threads the BLAS runs with, when threadpoolctl is installed
        from threadpoolctl import threadpool_info  # type: ignore[import-not-found]

        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            info["threads"] = pools[0].get("num_threads")
    except ImportError:
        pass
    return info


def load_average() -> float | None:
    """Runnable processes averaged over the last minute (None where the OS does not say)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def busy_seconds() -> float | None:
    """CPU seconds every core of the machine has spent busy since boot (user, nice, system,
    interrupts and time stolen by a hypervisor), from ``/proc/stat``; None elsewhere."""
    text = _read(Path("/proc/stat"))
    if not text or not text.startswith("cpu "):
        return None
    fields = text.split("\n", 1)[0].split()[1:]
    try:
        ticks = [int(x) for x in fields]
    except ValueError:
        return None
    # user nice system idle iowait irq softirq steal (guest time is inside user)
    busy = sum(ticks[i] for i in (0, 1, 2, 5, 6, 7) if i < len(ticks))
    return busy / float(os.sysconf("SC_CLK_TCK"))


class OtherUse:
    """The cores that other processes kept busy over a span of wall time: the machine's busy
    CPU time (:func:`busy_seconds`) less this process's own (every thread), over the span.
    ``cores`` is None where the OS does not say."""

    def __init__(self) -> None:
        self._start = self._now()

    @staticmethod
    def _now() -> tuple[float, float | None, float]:
        return time.perf_counter(), busy_seconds(), time.process_time()

    @property
    def cores(self) -> float | None:
        wall, busy, own = self._now()
        if busy is None or self._start[1] is None or wall <= self._start[0]:
            return None
        others = (busy - self._start[1]) - (own - self._start[2])
        return max(0.0, others / (wall - self._start[0]))


def machine_key(*parts: str) -> str:
    """A short stable key for this machine and software: it names the cached calibration."""
    text = "|".join((platform.node(), cpu_model(), str(cores()), platform.machine(), *parts))
    return hashlib.sha256(text.encode()).hexdigest()[:12]
