"""Seconds per call of a Python callable, for the benchmark scripts beside this file."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def per_call(fn: Callable[[], object], repeat: int = 7, number: int = 200) -> tuple[float, float]:
    """(median, best) seconds per call over *repeat* runs of *number* calls, after one
    warm-up call."""
    fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs), min(runs)
