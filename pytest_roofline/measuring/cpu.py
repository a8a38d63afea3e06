"""Calibrating a CPU with numpy: GEMM peaks, STREAM-style bandwidth, a cache sweep.

* **Peaks** (fp64, fp32): numpy's BLAS GEMM on square matrices, doubled in size until one
  call takes long enough to saturate the cores (tens of ms), then timed. The peak is
  ``2 n^3 / t`` (2 FLOPs per multiply-accumulate): what a tuned GEMM reaches on every core,
  the highest FLOP rate numpy code reaches on this machine.
* **Memory bandwidth**: STREAM-style kernels on arrays of at least 4x the last-level cache
  (32 MiB at least), run on 1 thread and on every allowed core (numpy releases the GIL inside
  its loops): copy (16 B per element counted), add ``c = a + b`` (24 B) and triad
  ``a = b + s*c`` (two numpy passes, 40 B counted). STREAM's convention: write-allocate reads
  are not counted. The memory roof is the best of them; the best on 1 thread is kept as well,
  as the roof of single-threaded kernels (numpy's elementwise loops): see
  ``Hardware.memory_roof``.
* **Cache levels** (a hierarchical roofline): a working-set sweep (16 KiB, 64 KiB, ... up to
  twice the last-level cache) sums a row into an accumulator over and over inside one numpy
  call (``np.add.reduce`` over a broadcast array: 24 B per element counted), on one core.
  For each data cache the OS reports, the same is measured at half its capacity; where the
  OS reports none, the levels are read off the sweep: a level ends where the rate falls
  below 3/4 of its plateau.

Robustness on shared machines: every figure is sampled in rounds spread over time (all
figures in each round, a pause between rounds), and the best sample is kept. Rounds go on
until every figure's best sample is confirmed by a second one within :data:`CONFIRM` (at
least ``min_rounds``), or the time budget is spent: a quiet machine calibrates in a few
seconds, a busy one keeps sampling for a quiet moment. The
spread (best - worst) / best of each figure is recorded; a figure whose samples disagree by
more than :data:`DISAGREE` makes a warning, because a calibration taken under load makes
every later efficiency look better than it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from . import probe

DISAGREE = 0.10  # relative spread of a figure's samples above which calibration warns
CONFIRM = 0.05  # a best sample counts as confirmed when another is within this of it
CALM = 0.25  # cores of other processes' use: samples within this of the calmest one count
LOADED = 0.25  # cores other processes kept busy (median) from which a calibration is loaded
MiB = float(1 << 20)
#: The GEMM peaks and the single-threaded figures (the 1-thread memory roofs, the cache
#: sweep) are timed on the cores: a call's time is the smaller of its wall time and its
#: process CPU time over its threads (the BLAS's threads for a GEMM, ``probe.blas_threads``).
#: A thread works only while it is on a core, and the scheduler may hand that core to
#: another process for part of a call: its wall time then reads the machine's load, its CPU
#: time the rate the cores reach. A time on the cores is never above the wall time, so a
#: roof timed so is never lower, and bounds against it stay lower bounds, on a busy machine
#: as on a quiet one.
ON_CORE = True


@dataclass(frozen=True)
class Figure:
    """One calibrated rate (FLOP/s or B/s): the best sample, and all of them."""

    name: str
    samples: tuple[float, ...]
    detail: str = ""
    others: tuple[float, ...] = ()  # cores other processes kept busy during each sample

    @property
    def value(self) -> float:
        """The best of the samples taken in the calmest conditions seen (see :func:`calm`)."""
        return max(calm(self.samples, self.others))

    @property
    def other_cores(self) -> float | None:
        """The median of the cores other processes kept busy while this figure was sampled."""
        if not self.others:
            return None
        ordered = sorted(self.others)
        return ordered[len(ordered) // 2]

    @property
    def spread(self) -> float:
        """(best - median) / best of the samples: 0 when they agree."""
        ordered = sorted(self.samples)
        best, median = ordered[-1], ordered[len(ordered) // 2]
        return (best - median) / best if best > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "spread": round(self.spread, 4),
                               "samples": [float(f"{s:.6g}") for s in self.samples],
                               "detail": self.detail}
        if self.others:
            # as measured: rounded, a sample at the calm boundary could flip sides, and the
            # record would no longer give back its own value
            out["other_cores"] = [float(o) for o in self.others]
        return out


@dataclass(frozen=True)
class Level:
    """A cache level: capacity from the OS, bandwidth measured at half that working set."""

    name: str
    capacity: float
    bandwidth: Figure


@dataclass
class Plan:
    """How long and how big: *min_rounds* to *rounds* samples of every figure, *pause* s
    apart, sampling stopping once the best samples are confirmed or *budget* s have passed."""

    rounds: int = 30
    pause: float = 0.1
    min_rounds: int = 3
    budget: float = 15.0  # s from the start of the calibration, set-up included
    gemm_time: float = 0.1  # s one GEMM call must take at least
    gemm_max: int = 4096
    stream_min: float = 32 * MiB  # B per array, at least
    sweep_bytes: float = 2e8  # B counted per cache-sweep sample


QUICK = Plan(rounds=2, pause=0.0, min_rounds=2, budget=0.0, gemm_time=0.02, gemm_max=1024,
             sweep_bytes=3e7)


def calm(samples: Sequence[float], others: Sequence[float | None]) -> list[float]:
    """The samples taken while other processes used at most CALM cores more than during the
    calmest sample: a machine's load comes and goes, so the best sample overall may be a
    lucky one, and two calibrations agree only on samples taken in like conditions. Every
    sample when the other processes' use is not known."""
    known = [o for o in others if o is not None]
    if len(known) != len(samples) or not samples:
        return list(samples)
    floor = min(known)
    return [s for s, o in zip(samples, known, strict=True) if o <= floor + CALM]


def confirmed(samples: list[float]) -> bool:
    """Whether the best sample is matched by another within CONFIRM."""
    if len(samples) < 2:
        return False
    top = sorted(samples)[-2:]
    return top[0] >= top[1] * (1 - CONFIRM)


@dataclass
class Roofs:
    """Every figure of one calibration (CPU or GPU), before it becomes a hardware spec."""

    matrix: dict[str, Figure]
    memory: dict[str, Figure]
    levels: list[Level]
    threads: int
    sweep: list[tuple[float, Figure]] = field(default_factory=list)  # (working set B, rate)
    seconds: float = 0.0
    rounds: int = 0
    load: float | None = None  # the 1-minute load average at the start (CPU)
    unsettled: tuple[str, ...] = ()  # figures whose best sample no other one confirmed

    @property
    def other_cores(self) -> float | None:
        """The cores other processes kept busy while the roofs were sampled (the median of
        the figures' medians); None where the OS does not say."""
        values = sorted(v for f in self.figures() if (v := f.other_cores) is not None)
        return values[len(values) // 2] if values else None

    @property
    def loaded(self) -> bool:
        """Whether other processes competed for the machine while it was measured: a
        median of LOADED cores or more kept busy by them, or a load average above the
        cores."""
        others = self.other_cores
        if others is not None:
            return others >= LOADED
        return self.load is not None and self.load > self.threads + 0.5

    def conditions(self) -> dict[str, Any]:
        """What the machine was doing while it was measured, for the cached spec."""
        others = self.other_cores
        return {"quiet": not self.loaded, "load_average": self.load,
                "other_cores": None if others is None else round(others, 2),
                "cores": self.threads, "settled": not self.unsettled,
                **({"unsettled": list(self.unsettled)} if self.unsettled else {})}

    def figures(self) -> list[Figure]:
        return [*self.matrix.values(), *self.memory.values(),
                *(lv.bandwidth for lv in self.levels)]

    @property
    def bandwidth(self) -> Figure:
        return max(self.memory.values(), key=lambda f: f.value)

    def bandwidth_by_threads(self) -> dict[int, Figure]:
        """The best memory figure of each thread count measured, counting the figures of
        fewer threads too (N threads reach at least what fewer reach). Figures are named
        ``copy`` (every core) or ``copy.1t`` (1 thread). Empty when only one count was
        measured (a GPU)."""
        counts: dict[int, list[Figure]] = {}
        for key, figure in self.memory.items():
            suffix = key.rsplit(".", 1)[-1] if "." in key else ""
            threads = int(suffix[:-1]) if suffix.endswith("t") and suffix[:-1].isdigit() \
                else self.threads
            counts.setdefault(threads, []).append(figure)
        if len(counts) < 2:
            return {}
        table: dict[int, Figure] = {}
        for threads in sorted(counts):
            pool = [f for n, figures in counts.items() if n <= threads for f in figures]
            table[threads] = max(pool, key=lambda f: f.value)
        return table

    def warnings(self) -> list[str]:
        busy = []
        others = self.other_cores
        if self.loaded and others is not None:
            busy = [f"calibrated under load: other processes kept {others:.1f} of "
                    f"{self.threads} cores busy while it measured (median over the samples), "
                    f"so its figures are lower than this machine's quiet ones (about half "
                    f"with one core of two taken), and later efficiencies look better than "
                    f"they are. It does not replace a quiet calibration in the cache. "
                    f"Recalibrate when the machine is quiet (pytest-roofline calibrate)."]
        elif self.loaded:
            busy = [f"the machine was busy when calibrated (load average {self.load:.1f} on "
                    f"{self.threads} cores): samples that all agree can still all be low, "
                    f"which makes later efficiencies look better than they are. Recalibrate "
                    f"when it is quiet (pytest-roofline calibrate)."]
        if self.unsettled:
            busy.append(f"the samples did not settle in {self.rounds} rounds: the best sample "
                        f"of {', '.join(self.unsettled)} was never matched within "
                        f"{CONFIRM:.0%} by another taken in like conditions, so these figures "
                        f"are not stable.")
        return busy + disagreement(self.figures())


def disagreement(figures: list[Figure]) -> list[str]:
    """One warning naming the figures whose samples disagree by more than DISAGREE."""
    noisy = [f for f in figures if f.spread > DISAGREE]
    if not noisy:
        return []
    listed = ", ".join(f"{f.name} {f.spread:.0%}" for f in noisy)
    return [f"calibration samples disagree (median below best by {listed}): the machine was "
            f"busy; the best samples are kept. Recalibrate when it is quiet "
            f"(pytest-roofline calibrate)."]


def _best_time(fn: Callable[[], Any], calls: int = 1, *, on_core: bool = False,
               threads: int = 1) -> float:
    """The best time of *calls* calls of *fn*; *on_core* (a kernel on *threads* threads):
    each call's time on its cores, the smaller of its wall time and its process CPU time
    over *threads*, so that other processes taking the cores meanwhile do not lower the
    rate (see :data:`ON_CORE`)."""
    best = float("inf")
    for _ in range(calls):
        cpu = time.process_time()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        if on_core:
            elapsed = min(elapsed, max((time.process_time() - cpu) / threads, 1e-9))
        best = min(best, elapsed)
    return best


def _rate(call: Callable[[], Any], amount: float, on_core: bool = False) -> float:
    return amount / _best_time(call, 2, on_core=on_core)


def _gemm(dtype: str, plan: Plan) -> tuple[Callable[[], float], str]:
    """A sampler of GEMM FLOP/s in *dtype*, sized so that one call takes plan.gemm_time."""
    import numpy as np

    n = 256
    while True:
        a = np.full((n, n), 0.5, dtype=dtype)
        b = np.full((n, n), 0.25, dtype=dtype)
        call = partial(np.matmul, a, b)
        call()  # warm-up: threads started, pages touched
        if _best_time(call, 2) >= plan.gemm_time or n >= plan.gemm_max:
            break
        n *= 2
    out = np.empty((n, n), dtype=dtype)
    flops = 2.0 * n ** 3

    threads = probe.blas_threads()

    def sample() -> float:
        return flops / _best_time(lambda: np.matmul(a, b, out=out), on_core=ON_CORE,
                                  threads=threads)

    return sample, f"numpy matmul {n}x{n}x{n}"


def _split(n: int, parts: int) -> list[slice]:
    step = -(-n // parts)
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def _stream(threads: int, plan: Plan, llc: float,
            pools: list[ThreadPoolExecutor]) -> dict[str, tuple[Callable[[], float], str]]:
    """Samplers of copy, add and triad bandwidth over arrays well past the LLC."""
    import numpy as np

    # well past the LLC, but two sets of three arrays within an eighth of the memory
    per_array = min(max(plan.stream_min, 4 * llc), probe.memory_capacity() / 48)
    n = int(per_array // 8)
    a, b, c = np.full(n, 1.0), np.full(n, 2.0), np.full(n, 3.0)
    pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    if pool is not None:
        pools.append(pool)
    pieces = _split(n, threads)

    def run(kernel: Callable[[slice], Any]) -> Callable[[], Any]:
        if pool is None:
            return lambda: kernel(slice(0, n))
        return lambda: list(pool.map(kernel, pieces))

    def triad(s: slice) -> None:
        np.multiply(c[s], 3.0, out=a[s])
        np.add(a[s], b[s], out=a[s])

    kernels: dict[str, tuple[Callable[[slice], Any], float]] = {
        "copy": (lambda s: np.copyto(c[s], a[s]), 16.0),
        "add": (lambda s: np.add(a[s], b[s], out=c[s]), 24.0),
        "triad": (triad, 40.0),
    }
    samplers: dict[str, tuple[Callable[[], float], str]] = {}
    size = f"3 arrays of {per_array / MiB:.0f} MiB, {threads} thread(s)"
    for name, (kernel, per_element) in kernels.items():
        call = run(kernel)
        call()  # pages touched, threads started
        samplers[name] = (
            partial(_rate, call, per_element * n, ON_CORE and threads == 1),
            f"STREAM {name}, {per_element:.0f} B/element counted, {size}")
    return samplers


def _sweep(capacity: float, plan: Plan) -> Callable[[], float]:
    """A sampler of in-cache bandwidth at a working set of half *capacity* (one core)."""
    import numpy as np

    n = max(64, int(capacity / 2 / 16))  # the source row and the accumulator, 8 B each
    rows = max(2, int(plan.sweep_bytes / (24 * n)))
    source = np.broadcast_to(np.full(n, 1e-9), (rows, n))
    acc = np.zeros(n)
    np.add.reduce(source, axis=0, out=acc)

    def sample() -> float:
        return 24.0 * rows * n / _best_time(lambda: np.add.reduce(source, axis=0, out=acc),
                                            on_core=ON_CORE)

    return sample


def calibrate_cpu(plan: Plan | None = None,
                  progress: Callable[[str], None] | None = None) -> Roofs:
    """Measure this CPU's roofs (see the module docstring)."""
    plan = plan or Plan()
    say = progress or (lambda _text: None)
    started = time.perf_counter()
    load = probe.load_average()
    threads = probe.cores()
    caches = probe.caches()
    llc = caches[-1].capacity if caches else 32 * MiB
    samplers: dict[str, tuple[Callable[[], float], str]] = {}
    say("sizing GEMM")
    for dtype in ("float64", "float32"):
        samplers["matrix." + ("fp64" if dtype == "float64" else "fp32")] = _gemm(dtype, plan)
    say("allocating STREAM arrays")
    counts = sorted({1, threads})
    pools: list[ThreadPoolExecutor] = []
    try:
        for count in counts:
            for name, sampler in _stream(count, plan, llc, pools).items():
                suffix = "" if count == max(counts) else f".{count}t"
                samplers[f"memory.{name}{suffix}"] = sampler
        for cache in caches:
            samplers[f"cache.{cache.name}"] = (
                _sweep(cache.capacity, plan),
                f"np.add.reduce, working set {cache.capacity / 2 / 1024:.0f} KiB, 1 thread")
        for working_set in sweep_sizes(llc if caches else 32 * MiB):
            samplers[f"sweep.{working_set:.0f}"] = (
                _sweep(2 * working_set, plan),
                f"np.add.reduce, working set {working_set / 1024:.0f} KiB, 1 thread")
        others: dict[str, list[float | None]] = {}
        results = sample_rounds(samplers, plan, say, started, others)
    finally:
        for pool in pools:
            pool.shutdown()

    def figure(key: str) -> Figure:
        return Figure(key, tuple(results[key]), samplers[key][1],
                      tuple(o for o in others[key] if o is not None))

    matrix = {key.split(".", 1)[1]: figure(key) for key in samplers if key.startswith("matrix.")}
    memory = {key.split(".", 1)[1]: figure(key) for key in samplers if key.startswith("memory.")}
    sweep = [(float(key.split(".", 1)[1]), figure(key)) for key in samplers
             if key.startswith("sweep.")]
    if caches:
        levels = [Level(c.name, c.capacity, figure(f"cache.{c.name}")) for c in caches]
    else:
        levels = levels_from_sweep(sweep)
    unsettled = tuple(key.split(".", 1)[1] for key in samplers if not key.startswith("sweep.")
                      and not confirmed(calm(results[key], others[key])))
    return Roofs(matrix=matrix, memory=memory, levels=levels, threads=threads,
                 seconds=time.perf_counter() - started,
                 rounds=len(next(iter(results.values()), [])), load=load, sweep=sweep,
                 unsettled=unsettled)


def sweep_sizes(llc: float) -> list[float]:
    """Working sets of the sweep: 16 KiB, x4 each, until twice the last-level cache."""
    sizes = [16 * 1024.0]
    while sizes[-1] < 2 * llc:
        sizes.append(sizes[-1] * 4)
    return sizes


def levels_from_sweep(sweep: list[tuple[float, Figure]], drop: float = 0.75) -> list[Level]:
    """Cache levels read off a working-set sweep: a plateau of rates ends where the rate
    falls below *drop* of the plateau's best; the level's capacity is twice the largest
    working set on the plateau. The last plateau is main memory, not a level."""
    levels: list[Level] = []
    plateau: list[tuple[float, Figure]] = []
    for working_set, figure in sorted(sweep, key=lambda p: p[0]):
        best = max((f.value for _, f in plateau), default=0.0)
        if plateau and figure.value < drop * best:
            top = max(plateau, key=lambda p: p[1].value)[1]
            levels.append(Level(f"L{len(levels) + 1}", 2 * plateau[-1][0],
                                Figure(f"cache.L{len(levels) + 1}", top.samples,
                                       f"{top.detail} (read off the sweep)")))
            plateau = []
        plateau.append((working_set, figure))
    return levels


def sample_rounds(samplers: dict[str, tuple[Callable[[], float], str]], plan: Plan,
                  say: Callable[[str], None], started: float,
                  others: dict[str, list[float | None]] | None = None,
                  ) -> dict[str, list[float]]:
    """Rounds of one sample per figure until confirmed or out of budget (see the docstring).
    *others* receives, per figure, the cores other processes kept busy during each sample."""
    others = {} if others is None else others
    for key in samplers:
        others.setdefault(key, [])
    results: dict[str, list[float]] = {key: [] for key in samplers}
    for round_ in range(plan.rounds):
        round_start = time.perf_counter()
        for key, (sample, _) in samplers.items():
            use = probe.OtherUse()
            results[key].append(sample())
            others[key].append(use.cores)
        done = round_ + 1
        checked = [k for k in results if not k.startswith("sweep.")]
        settled = [k for k in checked if confirmed(calm(results[k], others[k]))]
        say(f"round {done}: {len(settled)}/{len(checked)} figures confirmed")
        now = time.perf_counter()
        # stop when confirmed, or when another round would end past the budget
        out_of_time = now + (now - round_start) + plan.pause - started > plan.budget
        if done >= plan.min_rounds and (len(settled) == len(checked) or out_of_time):
            break
        if plan.pause:
            time.sleep(plan.pause)
    return results
