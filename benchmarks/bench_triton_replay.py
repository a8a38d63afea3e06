"""What counting a Triton launch by replay costs: a launch the interpreter does not run
(meta tensors here; ``wrap_triton`` under torch.compile, a compiled launch on a GPU) is
replayed once in Triton's interpreter on stand-in CPU tensors, then taken from the cache.

Run: ``python benchmarks/bench_triton_replay.py`` (needs torch and triton). For Triton's
tutorial kernels (tests/data/triton_kernels.py) it prints, side by side, the time of one
traced launch: counted as it runs in the interpreter on real tensors (median), replayed the
first time on meta tensors (the cache emptied before each try: median), replayed again (a
cache hit: median), and the ratio of a first replay to a cached one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is first imported

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "data"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_triton_count import _median  # noqa: E402  (one timing for both benchmarks)


def main() -> None:
    import torch
    import triton_kernels as tk

    import pytest_roofline as rl
    from pytest_roofline.tracing import _triton_replay

    a = torch.randn(256, 256, dtype=torch.float16)
    b = torch.randn(256, 256, dtype=torch.float16)
    rows = torch.randn(64, 781)
    x = torch.randn(1 << 20)
    cases = [("matmul 256^3 fp16", tk.matmul, (a, b)),
             ("softmax 64 x 781", tk.softmax, (rows,)),
             ("vector add 2^20", tk.add, (x, x))]
    print(f"{'kernel':<20} {'counted':>10} {'1st replay':>11} {'cached':>10} "
          f"{'1st/cached':>11}")
    for label, fn, args in cases:
        meta = tuple(t.to("meta") for t in args)
        counted = _median(lambda fn=fn, args=args: rl.trace(fn, *args))
        first = _median(lambda fn=fn, meta=meta: rl.trace(fn, *meta),
                        before=_triton_replay._CACHE.clear)
        work = rl.trace(fn, *meta)
        assert not work.unknown and "counted by replay" in next(iter(work.assumed))
        cached = _median(lambda fn=fn, meta=meta: rl.trace(fn, *meta), repeats=21)
        print(f"{label:<20} {counted * 1e3:>8.1f}ms {first * 1e3:>9.1f}ms "
              f"{cached * 1e3:>8.2f}ms {first / cached:>10.0f}x")


if __name__ == "__main__":
    main()
