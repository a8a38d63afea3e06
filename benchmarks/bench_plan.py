"""How long the configuration search takes (target: Llama-3-70B on 8 H100, 10,240
configurations of tp, pp and batch, in under 1 s), beside one configuration at a time.

Run: ``python benchmarks/bench_plan.py``. The vectorized search (``pytest_roofline.plan``)
is timed over whole runs after a warm-up; one configuration at a time (a decode, a prefill
and a footprint built and analyzed per point, what a loop over ``models`` would do) is timed
on a sample of 300 points and scaled to the same 10,240.
"""

from __future__ import annotations

import statistics
import time

from pytest_roofline import analyze, get_hardware, models, plan

TARGET_S = 1.0


def main() -> int:
    h100 = get_hardware("h100")
    llama = models.load("llama-3-70b")
    args = {"chips": 8, "ttft": "500 ms", "tpot": "50 ms", "isl": 1024, "osl": 256}
    result = plan(llama, h100, **args)  # warm-up: specs parsed, imports done
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        result = plan(llama, h100, **args)
        runs.append(time.perf_counter() - start)
    vectorized = statistics.median(runs)

    splits = [(1, 1), (1, 2), (1, 4), (1, 8), (2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (8, 1)]
    sample = [(tp, pp, batch) for tp, pp in splits for batch in range(1, 1025, 34)][:300]
    start = time.perf_counter()
    for tp, _pp, batch in sample:
        analyze(llama.decode(batch, 1024 + 128, tp=tp), h100)
        analyze(llama.prefill(1, 1024, tp=tp), h100)
        llama.footprint(batch, 1024 + 256, phase="decode", tp=tp)
    per_point = (time.perf_counter() - start) / len(sample)

    print(f"plan(llama-3-70b, 8 x h100): {result.searched:,} configurations, "
          f"{len(result.configs)} qualify")
    print(f"{'vectorized search':<34}{vectorized * 1e3:10.1f} ms   "
          f"({vectorized / result.searched * 1e6:.2f} us a configuration)")
    print(f"{'one configuration at a time':<34}{per_point * result.searched * 1e3:10.1f} ms   "
          f"({per_point * 1e6:.0f} us a configuration, {len(sample)} sampled)")
    ok = vectorized < TARGET_S
    print(f"target < {TARGET_S:g} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
