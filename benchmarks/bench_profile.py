"""How long reading and pricing a 100,000-event profiler trace takes (CPU seconds).

    python benchmarks/bench_profile.py [TRACE ...]
    python benchmarks/bench_profile.py --events 100000 240000 [--from TRACE]

For each trace (default: the two real GPU traces of tests/data/traces): the time to load the
JSON, to build the op tree, and to join and price it (the op table on meta tensors, each
distinct call once), in process CPU time, so that other processes on a shared machine do not
count; torch is imported first and not counted. Also the priced share, the highest
efficiency and the peak of the memory Python allocated while reading it (tracemalloc, run
apart from the timing, which it would slow).

``--events N ...`` makes, for each N, a synthetic trace of N events from a real one (default
the V100 trace): its events repeated one after another, each copy's timestamps shifted past
the last and its correlation ids renumbered, so every launch still finds its kernel, and
prices it. The goal: 100,000 events under 3 s, 240,000 under 6 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"


def synthetic(source: str, events: int, folder: str) -> str:
    """A trace of *events* events made of copies of *source*'s (see the module docstring)."""
    import gzip
    import json

    from pytest_roofline.profiling.torch import trace_json

    data = trace_json.load(source)
    base = [e for e in data["traceEvents"] if isinstance(e, dict)]
    stamps = [e["ts"] + e.get("dur", 0) for e in base if isinstance(e.get("ts"), (int, float))]
    span = max(stamps) - min(stamps) + 1000
    corrs = [e["args"]["correlation"] for e in base if isinstance(e.get("args"), dict)
             and isinstance(e["args"].get("correlation"), int)]
    step = max(corrs, default=0) + 1
    out: list[dict[str, object]] = []
    copy = 0
    while len(out) < events:
        for event in base:
            if len(out) >= events:
                break
            event = dict(event)
            if isinstance(event.get("ts"), (int, float)):
                event["ts"] = event["ts"] + copy * span
            args = event.get("args")
            if isinstance(args, dict) and isinstance(args.get("correlation"), int):
                event["args"] = {**args, "correlation": args["correlation"] + copy * step}
            out.append(event)
        copy += 1
    path = str(Path(folder) / f"synthetic_{events}.json.gz")
    with gzip.open(path, "wt") as handle:
        json.dump({**{k: v for k, v in data.items() if k != "traceEvents"},
                   "traceEvents": out}, handle)
    return path


def peak_memory(path: str) -> float:
    """The peak of Python's allocations (bytes) while reading and pricing *path*."""
    import tracemalloc

    from pytest_roofline.profiling.devices import chip_of
    from pytest_roofline.profiling.torch import join, trace_file, trace_json

    tracemalloc.start()
    trace = trace_file.read(path)
    with trace_json.paused_gc():
        join.build(trace, chip_of(trace.device), source=path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return float(peak)


def main(paths: list[str]) -> None:
    import torch

    import pytest_roofline as rl
    from pytest_roofline.profiling.devices import chip_of
    from pytest_roofline.profiling.torch import join, pricing, trace_file, trace_json

    rl.trace(lambda x: x + 1, torch.empty(2, device="meta"))  # the tracer's own imports
    for path in paths or [str(DATA / "v100_hta_trace_diff_test.json.gz"),
                          str(DATA / "a100_hta_negative_queue_rank0.json.gz")]:
        pricing._CACHE.clear()
        start = time.process_time()
        with trace_json.paused_gc():  # as read_trace reads and prices it
            data = trace_json.load(path)
            loaded = time.process_time()
            trace = trace_file.parse(data, path)
            del data
            parsed = time.process_time()
            profile = join.build(trace, chip_of(trace.device), source=Path(path).name)
            done = time.process_time()
        best = profile.max_efficiency
        print(f"{Path(path).name}: {trace.events} events; load {loaded - start:.2f} s, "
              f"parse {parsed - loaded:.2f} s, join and price {done - parsed:.2f} s "
              f"({len(pricing._CACHE)} distinct calls): {done - start:.2f} s CPU; "
              f"{profile.priced_share:.1%} priced, max efficiency "
              f"{'-' if best is None else f'{best:.2f}'}, {len(profile.faster)} faster; "
              f"peak {peak_memory(path) / 1e6:.0f} MB allocated", flush=True)


def sizes(argv: list[str]) -> None:
    """``--events N ... [--from TRACE]``: synthetic traces of those sizes, priced."""
    import tempfile

    source = str(DATA / "v100_hta_trace_diff_test.json.gz")
    if "--from" in argv:
        at = argv.index("--from")
        source = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    counts = [int(n) for n in argv]
    with tempfile.TemporaryDirectory() as folder:
        main([synthetic(source, n, folder) for n in counts])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--events"]:
        sizes(sys.argv[2:])
    else:
        main(sys.argv[1:])
