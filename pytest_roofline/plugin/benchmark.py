"""pytest-benchmark and timing loops in a traced test: one call is the workload.

A ``trace=True`` test that times its kernel with pytest-benchmark's ``benchmark`` fixture
runs it as many rounds as pytest-benchmark chooses (calibration, warm-up, rounds: a number
that changes from run to run, and one call when pytest-benchmark is disabled, as it is under
pytest-xdist). The workload is the kernel's, not the rounds': while the fixture runs, the
recording is paused, and the first call of the benchmarked function (pytest-benchmark's
first calibration call, or its only call when disabled) is recorded. The rest of the body is
recorded as usual. ``triton.testing.do_bench`` (and ``do_bench_cudagraph``) called through
the ``triton.testing`` module in a ``trace=True`` body is treated the same way.

Timing: a test judged on ``hw="host"`` (or ``cuda:N``, a GPU this machine holds, or a spec of
the user's own) that used the fixture takes pytest-benchmark's own statistic as its measured
time, so nothing is timed twice: the
**median** of its rounds, the statistic ``roofline.measure`` reports too (a minimum over many
rounds is the luckiest round, which would flatter the efficiency; the median is robust to a
stray slow round). Its spread is the rounds' IQR over the median. The record says where the
time came from (``"measured_by": "pytest-benchmark median"``), and so does the summary. A
disabled fixture (``--benchmark-disable``, xdist) times nothing: the test has no measurement.
On a chip this machine is not (``hw="h100"`` on a CPU runner) the benchmark's time is not the
chip's: that chip keeps the analytic verdict of one call, and the time is reported in the
test's "roofline" section, never an error (pytest-benchmark times every benchmark; the test
did not ask for it to be judged).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from ..hardware import foreign_to_this_machine
from ..units import format_time

#: The methods of pytest-benchmark's fixture that run the benchmarked function.
_CALLS = ("__call__", "pedantic")
#: How a measurement taken from pytest-benchmark is labelled in the records.
SOURCE = "pytest-benchmark median"
#: Timing loops of Triton's testing module that call their function many times.
_LOOPS = ("do_bench", "do_bench_cudagraph")


class _FirstCall:
    """Calls *fn* with the recorder paused, except its first call, which is recorded (and
    where the recording stood before and after it kept in ``marks``, when the recorder
    marks)."""

    __slots__ = ("done", "fn", "marks", "recorder")

    def __init__(self, fn: Any, recorder: Any) -> None:
        self.fn, self.recorder = fn, recorder
        self.done = False
        self.marks: tuple[Any, Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.done:
            return self.fn(*args, **kwargs)
        self.done = True
        mark = getattr(self.recorder, "mark", None)
        start = mark() if mark is not None else None
        try:
            with self.recorder.unpaused():
                return self.fn(*args, **kwargs)
        finally:
            if start is not None and mark is not None:
                self.marks = (start, mark())


#: What a ``trace=True`` body ran besides its benchmarked call, in its ``left_out``.
AROUND = "op outside the benchmarked call"


class Benchmarks:
    """While entered (a marked test's call): the calls a test makes of pytest-benchmark's
    fixture (``benchmark(fn, ...)``, ``benchmark.pedantic(fn, ...)``) are seen, through the
    fixture's public class (``pytest_benchmark.fixture.BenchmarkFixture``), patched for the
    call and restored after it. pytest's own state is not touched: the test receives
    pytest-benchmark's fixture itself. ``used`` is the fixture the test called (its rounds
    become the test's timing); with a *recorder* (a ``trace=True`` body) one call of the
    benchmarked function is recorded and the rounds are not. Nothing is patched when
    pytest-benchmark is not imported."""

    __slots__ = ("_saved", "calls", "recorder", "used")

    def __init__(self, recorder: Any = None) -> None:
        self.recorder = recorder
        self.used: Any = None
        self.calls: list[_FirstCall] = []  # the benchmarked functions, as wrapped
        self._saved: list[tuple[type, str, Any]] = []

    def __enter__(self) -> Benchmarks:
        cls = getattr(sys.modules.get("pytest_benchmark.fixture"), "BenchmarkFixture", None)
        if isinstance(cls, type):
            for name in _CALLS:
                original = cls.__dict__.get(name)
                if callable(original):
                    setattr(cls, name, self._watch(original))
                    self._saved.append((cls, name, original))
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, name, original in reversed(self._saved):
            setattr(cls, name, original)
        self._saved = []

    def _watch(self, original: Any) -> Any:
        watcher = self

        def call(fixture: Any, *args: Any, **kwargs: Any) -> Any:
            watcher.used = fixture
            recorder = watcher.recorder
            if recorder is None:
                return original(fixture, *args, **kwargs)
            if args:  # the benchmarked function: the first positional, or by its name
                args = (watcher.wrap(args[0]), *args[1:])
            for name in ("target", "function_to_benchmark"):
                if name in kwargs:
                    kwargs[name] = watcher.wrap(kwargs[name])
            with recorder.paused():
                return original(fixture, *args, **kwargs)

        return call

    def wrap(self, fn: Any) -> _FirstCall:
        first = _FirstCall(fn, self.recorder)
        self.calls.append(first)
        return first

    def keep_the_benchmarked_call(self) -> None:
        """In a ``trace=True`` body (every op recorded) that benchmarked a call: the workload
        is that call, once; the body's other ops (a reference computed to check the result,
        the inputs' set-up) are counted as left out (:data:`AROUND`), not as its work. A
        ``trace=fn`` body records only the calls it names, and keeps them all."""
        recorder = self.recorder
        marks = [c.marks for c in self.calls if c.marks is not None]
        if recorder is None or getattr(recorder, "filtered", True) or len(marks) != 1:
            return
        (start, end), = marks
        recorder.keep_only(start, end, AROUND)


def measurement(fixture: Any) -> Any:
    """pytest-benchmark's rounds as a Measurement (median, IQR / median, min), or None when
    it timed nothing (disabled, or not called)."""
    metadata = getattr(fixture, "stats", None)
    stats = getattr(metadata, "stats", None)
    data = list(getattr(stats, "data", None) or ())
    if not data:
        return None
    from ..measuring.timing import Measurement

    try:
        return Measurement.from_samples(data)
    except Exception:  # a figure pytest-benchmark could not time: no measurement
        return None


class TimingLoops:
    """While entered: ``triton.testing.do_bench`` and ``do_bench_cudagraph`` (when the test
    imported triton.testing) record one call of their function (see the module docstring)."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        self._saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> None:
        module = sys.modules.get("triton.testing")
        if module is None:
            return
        for name in _LOOPS:
            original = getattr(module, name, None)
            if callable(original):
                setattr(module, name, self._loop(original))
                self._saved.append((module, name, original))

    def __exit__(self, *exc: object) -> None:
        for module, name, original in reversed(self._saved):
            setattr(module, name, original)
        self._saved = []

    def _loop(self, original: Any) -> Any:
        recorder = self.recorder

        def loop(fn: Any, *args: Any, **kwargs: Any) -> Any:
            with recorder.paused():
                return original(_FirstCall(fn, recorder), *args, **kwargs)

        return loop


def take_timing(fixture: Any, test: Any) -> str | None:
    """A test timed by pytest-benchmark (*fixture*, the one it called) and not by
    ``roofline.measure``: its measured time is the benchmark's (see the module docstring),
    set against the test's chips that this machine is. Returns the line that reports it
    where it is not set against a chip (the test asked for no measurement, so this is
    never an error), or None."""
    if test.measured is not None or fixture is None:
        return None
    timing = measurement(fixture)
    if timing is None:
        return None
    test.take_measurement(dataclasses.replace(timing, here=True), by=SOURCE, asked=False)
    elsewhere = [chip.name for chip in test.hardware if foreign_to_this_machine(chip)]
    if not elsewhere:
        return None
    return (f"{SOURCE} {format_time(timing.time)}, timed on this machine: reported, not set "
            f"against {', '.join(elsewhere)} (a measured efficiency is only against the "
            f"machine that ran the call; hw=\"host\" sets it against this one's roofs)")
