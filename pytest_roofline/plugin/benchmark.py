"""pytest-benchmark and timing loops in a traced test: one call is the workload.

A ``trace=True`` test that times its kernel with pytest-benchmark's ``benchmark`` fixture
runs it as many rounds as pytest-benchmark chooses (calibration, warm-up, rounds: a number
that changes from run to run, and one call when pytest-benchmark is disabled, as it is under
pytest-xdist). The workload is the kernel's, not the rounds': while the fixture runs, the
recording is paused, and the first call of the benchmarked function (pytest-benchmark's
first calibration call, or its only call when disabled) is recorded. The rest of the body is
recorded as usual. ``triton.testing.do_bench`` (and ``do_bench_cudagraph``) called through
the ``triton.testing`` module in a ``trace=True`` body is treated the same way.

Timing: a test judged on ``hw="host"`` (or any chip) that used the fixture takes
pytest-benchmark's own statistic as its measured time, so nothing is timed twice: the
**median** of its rounds, the statistic ``roofline.measure`` reports too (a minimum over many
rounds is the luckiest round, which would flatter the efficiency; the median is robust to a
stray slow round). Its spread is the rounds' IQR over the median. The record says where the
time came from (``"measured_by": "pytest-benchmark median"``), and so does the summary. A
disabled fixture (``--benchmark-disable``, xdist) times nothing: the test has no measurement.
"""

from __future__ import annotations

import sys
from typing import Any

#: The fixture's name in pytest-benchmark.
FIXTURE = "benchmark"
#: How a measurement taken from pytest-benchmark is labelled in the records.
SOURCE = "pytest-benchmark median"
#: Timing loops of Triton's testing module that call their function many times.
_LOOPS = ("do_bench", "do_bench_cudagraph")


class _FirstCall:
    """Calls *fn* with the recorder paused, except its first call, which is recorded."""

    __slots__ = ("done", "fn", "recorder")

    def __init__(self, fn: Any, recorder: Any) -> None:
        self.fn, self.recorder = fn, recorder
        self.done = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.done:
            return self.fn(*args, **kwargs)
        self.done = True
        self.recorder.hidden -= 1
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.recorder.hidden += 1


class _Paused:
    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder

    def __enter__(self) -> None:
        self.recorder.hidden += 1

    def __exit__(self, *exc: object) -> None:
        self.recorder.hidden -= 1


class TracedBenchmark:
    """Stands in for pytest-benchmark's fixture in a traced test body: the same calls,
    attributes and results, with one call of the benchmarked function recorded."""

    def __init__(self, fixture: Any, recorder: Any) -> None:
        object.__setattr__(self, "_fixture", fixture)
        object.__setattr__(self, "_recorder", recorder)

    def __call__(self, function_to_benchmark: Any, *args: Any, **kwargs: Any) -> Any:
        first = _FirstCall(function_to_benchmark, self._recorder)
        with _Paused(self._recorder):
            return self._fixture(first, *args, **kwargs)

    def pedantic(self, target: Any, *args: Any, **kwargs: Any) -> Any:
        first = _FirstCall(target, self._recorder)
        with _Paused(self._recorder):
            return self._fixture.pedantic(first, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fixture, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._fixture, name, value)


def wrap(item: Any, recorder: Any) -> Any:
    """Put a :class:`TracedBenchmark` in place of the test's ``benchmark`` fixture value
    (through ``item.funcargs``, the one pytest state read here beyond the public fixture API:
    pytest has no public way to swap the value a test receives; a test of
    tests/test_plugin_benchmark.py fails when pytest stops honouring it);
    returns pytest-benchmark's own fixture (None when the test does not use it)."""
    funcargs = getattr(item, "funcargs", None)
    if not isinstance(funcargs, dict) or FIXTURE not in funcargs:
        return None
    fixture = funcargs[FIXTURE]
    if not callable(getattr(fixture, "pedantic", None)):
        return None  # another plugin's fixture of that name
    funcargs[FIXTURE] = TracedBenchmark(fixture, recorder)
    return fixture


def unwrap(item: Any, fixture: Any) -> None:
    """Give the test's ``benchmark`` back to pytest-benchmark (its teardown reads it)."""
    if fixture is not None:
        item.funcargs[FIXTURE] = fixture


def fixture_of(item: Any) -> Any:
    """pytest-benchmark's fixture of a test that used it (None otherwise)."""
    funcargs = getattr(item, "funcargs", None)
    if not isinstance(funcargs, dict):
        return None
    fixture = funcargs.get(FIXTURE)
    fixture = getattr(fixture, "_fixture", fixture)
    return fixture if callable(getattr(fixture, "pedantic", None)) else None


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
            with _Paused(recorder):
                return original(_FirstCall(fn, recorder), *args, **kwargs)

        return loop


def take_timing(item: Any, test: Any) -> None:
    """A test timed by pytest-benchmark and not by ``roofline.measure``: its measured time
    is the benchmark's (see the module docstring)."""
    if test.measured is not None:
        return
    fixture = fixture_of(item)
    timing = measurement(fixture) if fixture is not None else None
    if timing is not None:
        import dataclasses

        test.take_measurement(dataclasses.replace(timing, here=True), by=SOURCE)
