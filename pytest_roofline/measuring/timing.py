"""Timing a call: warm-up, repeats, device synchronization, median and spread.

``measure(fn, *args, **kwargs)`` calls ``fn(*args, **kwargs)`` a few times to warm up
(compilation, allocation, caches of the library), then times repeated calls with
:func:`time.perf_counter` until both a minimum number of samples and a minimum total time are
reached. Work queued on an accelerator is waited for inside each timed sample: torch, jax and
cupy are synchronized by duck typing (the result's ``block_until_ready()``; torch's and cupy's
device synchronize when those libraries are already imported), so no framework is imported
here.

The figures: ``time`` is the median sample (robust to a few slow samples on a shared
machine), ``best`` the fastest one, ``spread`` the interquartile range over the median.
``parallelism`` is how many cores the call kept busy: the median over samples of the
process's CPU time (:func:`time.process_time`, every thread) over the wall time. numpy's
elementwise loops read about 1, a BLAS GEMM on every core about the core count, a call that
waits on an accelerator about 1 (the host thread waiting). Against a calibration that
measured its memory roof per thread count, the roof of that many threads is used (see
``Hardware.memory_roof``): one core cannot reach the bandwidth of all of them.
"""

from __future__ import annotations

import contextlib
import sys
import time as _time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..efficiency import quantile
from ..efficiency import spread as spread_of
from ..errors import RooflineError, WorkloadError
from ..ops._common import size
from .cuda_timing import cuda_index
from .probe import OtherUse


class MeasureError(RooflineError, ValueError):
    """A measurement that cannot be made or used (bad settings, a call that takes no time)."""


@dataclass(frozen=True)
class Measurement:
    """Timed samples of one call. Seconds; ``spread`` is relative (IQR / median)."""

    time: float
    spread: float
    best: float
    samples: tuple[float, ...] = field(repr=False)
    warmup: int = 0
    parallelism: float | None = None  # cores kept busy (CPU time / wall time); None: unknown
    here: bool = False  # timed on this machine (by a Timer), not built from given figures
    other_cores: float | None = None  # cores other processes kept busy meanwhile (Linux)
    cpu_time: float | None = None  # median process CPU seconds of a call; None: unknown
    method: str | None = None  # how a GPU call was timed (cuda-events, cuda-graph; .cuda_timing)
    notes: tuple[str, ...] = ()  # what the figures should be read with (a throttled GPU, ...)
    clocks: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.samples:
            raise MeasureError("a Measurement needs at least one timed sample")
        if not (self.time > 0) or self.time == float("inf"):
            raise MeasureError(f"measured time must be a finite number > 0 s, got {self.time!r}")
        if self.parallelism is not None and (
                isinstance(self.parallelism, bool)
                or not isinstance(self.parallelism, (int, float))
                or not (0 <= self.parallelism < float("inf"))):
            raise MeasureError(f"parallelism must be a number of cores >= 0 or None, got "
                               f"{self.parallelism!r}")

    @property
    def repeats(self) -> int:
        return len(self.samples)

    @classmethod
    def from_samples(cls, samples: Sequence[float], warmup: int = 0,
                     cpu: Sequence[float] | None = None) -> Measurement:
        """Median, IQR/median and best of *samples* (seconds); *cpu*, the process CPU
        seconds of each sample (same order), gives the parallelism."""
        parallelism = cpu_time = None
        if cpu is not None and len(cpu) == len(samples):
            ratios = sorted(c / s for c, s in zip(cpu, samples, strict=True) if s > 0)
            parallelism = round(quantile(ratios, 0.5), 3) if ratios else None
            cpu_time = quantile(sorted(float(c) for c in cpu), 0.5) if cpu else None
        values = sorted(float(s) for s in samples)
        if not values:
            raise MeasureError("no samples to summarize")
        median = quantile(values, 0.5)
        if not (median > 0):
            raise MeasureError(f"the call took no measurable time (median {median!r} s); "
                               f"time a larger piece of work")
        spread = spread_of(values)
        return cls(time=median, spread=spread, best=values[0], samples=tuple(values),
                   warmup=warmup, parallelism=parallelism,
                   cpu_time=cpu_time if cpu_time is not None and cpu_time > 0 else None)

    def to_dict(self) -> dict[str, Any]:
        return {"time_s": self.time, "spread": self.spread, "best_s": self.best,
                "repeats": self.repeats,
                **({} if self.parallelism is None else {"parallelism": self.parallelism}),
                **({} if self.other_cores is None else {"other_cores": self.other_cores}),
                **({} if self.cpu_time is None else {"cpu_time_s": self.cpu_time}),
                **({} if self.method is None else {"method": self.method}),
                **({"notes": list(self.notes)} if self.notes else {}),
                **({"clocks": self.clocks} if self.clocks else {})}


def combined(measurements: Sequence[Measurement]) -> Measurement:
    """Several calls timed one after another, as one: times and bests add up, the spread is
    the largest, and the parallelism is the largest (unknown when any is unknown), so the
    roof chosen for the whole is never below any part's."""
    if not measurements:
        raise MeasureError("no measurements to combine")
    if len(measurements) == 1:
        return measurements[0]
    known = [m.parallelism for m in measurements]
    total = sum(m.time for m in measurements)
    return Measurement(time=total, spread=max(m.spread for m in measurements),
                       best=sum(m.best for m in measurements), samples=(total,),
                       warmup=sum(m.warmup for m in measurements),
                       here=all(m.here for m in measurements),
                       other_cores=max((m.other_cores for m in measurements
                                        if m.other_cores is not None), default=None),
                       parallelism=None if None in known else max(
                           p for p in known if p is not None),
                       cpu_time=None if any(m.cpu_time is None for m in measurements)
                       else sum(m.cpu_time or 0.0 for m in measurements))


def synchronize(result: Any = None) -> None:
    """Wait for work queued on an accelerator: jax arrays by ``block_until_ready``, torch and
    cupy by their device synchronize when they are imported and a device is in use."""
    ready = getattr(result, "block_until_ready", None)
    if callable(ready):
        ready()
    elif isinstance(result, (tuple, list)):
        for item in result:
            blocker = getattr(item, "block_until_ready", None)
            if callable(blocker):
                blocker()
    torch = sys.modules.get("torch")
    if torch is not None:
        cuda = getattr(torch, "cuda", None)
        try:
            if cuda is not None and cuda.is_initialized():
                cuda.synchronize()
        except Exception:  # an unusable CUDA runtime: nothing was queued on it
            pass
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        with contextlib.suppress(Exception):
            cupy.cuda.get_current_stream().synchronize()


@dataclass(frozen=True)
class Timer:
    """Settings of a measurement: *warmup* untimed calls, then at least *repeats* timed calls
    and at least *min_time* seconds of them, at most *max_repeats* calls.

    A call whose arguments hold a CUDA tensor (or a module on a GPU) is timed on the device
    (:mod:`.cuda_timing`: CUDA events or a CUDA graph, clocks read through NVML); *cache*
    says whether the L2 cache is flushed before each call (``"cold"``, the default) or left
    as the previous call left it (``"warm"``). On the CPU *cache* does not apply."""

    warmup: int = 1
    repeats: int = 5
    min_time: float = 0.2
    max_repeats: int = 1000
    cache: str = "cold"

    def __post_init__(self) -> None:
        for name in ("warmup", "repeats", "max_repeats"):  # counts: the rule of every size
            minimum = 0 if name == "warmup" else 1
            try:
                object.__setattr__(self, name, size(getattr(self, name), name, minimum=minimum))
            except WorkloadError as exc:
                raise MeasureError(str(exc)) from None
        if self.max_repeats < self.repeats:
            raise MeasureError(f"max_repeats={self.max_repeats} is below repeats="
                               f"{self.repeats}")
        if isinstance(self.min_time, bool) or not isinstance(self.min_time, (int, float)) or \
                not (0 <= self.min_time < float("inf")):
            raise MeasureError(f"min_time must be a number of seconds >= 0, got "
                               f"{self.min_time!r}")
        if self.cache not in ("cold", "warm"):
            raise MeasureError(f"cache={self.cache!r} is not a cache state; allowed: 'cold' "
                               f"(L2 flushed before each GPU call) or 'warm'")

    def __call__(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Measurement:
        if not callable(fn):
            raise MeasureError(f"measure() needs a callable, got {type(fn).__name__}: {fn!r}")
        if "torch" in sys.modules:
            index = cuda_index(args, kwargs)
            if index is not None:
                return self._on_gpu(fn, args, kwargs, index)
        clock, cpu_clock = _time.perf_counter, _time.process_time
        for _ in range(self.warmup):
            synchronize(fn(*args, **kwargs))
        samples: list[float] = []
        cpu: list[float] = []
        total = 0.0
        others = OtherUse()
        while len(samples) < self.max_repeats and (
                len(samples) < self.repeats or total < self.min_time):
            synchronize()
            cpu_start = cpu_clock()
            start = clock()
            synchronize(fn(*args, **kwargs))
            elapsed = clock() - start
            cpu.append(cpu_clock() - cpu_start)
            samples.append(elapsed)
            total += elapsed
        return replace(Measurement.from_samples(samples, self.warmup, cpu), here=True,
                       other_cores=others.cores)

    def _on_gpu(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                index: int) -> Measurement:
        from .cuda_timing import time_call

        samples, method, notes, clocks = time_call(
            fn, args, kwargs, index=index, warmup=self.warmup, repeats=self.repeats,
            min_time=self.min_time, max_repeats=self.max_repeats, cache=self.cache)
        return replace(Measurement.from_samples(samples, self.warmup), here=True,
                       parallelism=None, method=method, notes=tuple(notes),
                       clocks=clocks or None)


DEFAULT = Timer()


def measure(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Measurement:
    """Time ``fn(*args, **kwargs)``: one warm-up call, then at least 5 timed calls and 0.2 s.

    Returns a :class:`Measurement` (``time``: median s, ``spread``: IQR / median). For other
    settings use ``Timer(warmup=..., repeats=..., min_time=...)(fn, *args, **kwargs)``.
    """
    return DEFAULT(fn, *args, **kwargs)
