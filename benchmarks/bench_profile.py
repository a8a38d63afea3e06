"""How long reading and pricing a 100,000-event profiler trace takes (CPU seconds).

    python benchmarks/bench_profile.py [TRACE ...]

For each trace (default: the two real GPU traces of tests/data/traces): the time to load the
JSON, to build the op tree, and to join and price it (the op table on meta tensors, each
distinct call once), in process CPU time, so that other processes on a shared machine do not
count; torch is imported first and not counted. Also the priced share and the highest
efficiency.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"


def main(paths: list[str]) -> None:
    import torch

    import pytest_roofline as rl
    from pytest_roofline.profiling import join, pricing, trace_file
    from pytest_roofline.profiling.devices import chip_of

    rl.trace(lambda x: x + 1, torch.empty(2, device="meta"))  # the tracer's own imports
    for path in paths or [str(DATA / "v100_hta_trace_diff_test.json.gz"),
                          str(DATA / "a100_hta_negative_queue_rank0.json.gz")]:
        pricing._CACHE.clear()
        start = time.process_time()
        data = trace_file.load(path)
        loaded = time.process_time()
        trace = trace_file.parse(data, path)
        parsed = time.process_time()
        profile = join.build(trace, chip_of(trace.device), source=Path(path).name)
        done = time.process_time()
        best = profile.max_efficiency
        print(f"{Path(path).name}: {trace.events} events; load {loaded - start:.2f} s, "
              f"parse {parsed - loaded:.2f} s, join and price {done - parsed:.2f} s "
              f"({len(pricing._CACHE)} distinct calls): {done - start:.2f} s CPU; "
              f"{profile.priced_share:.1%} priced, max efficiency "
              f"{'-' if best is None else f'{best:.2f}'}, {len(profile.faster)} faster")


if __name__ == "__main__":
    main(sys.argv[1:])
