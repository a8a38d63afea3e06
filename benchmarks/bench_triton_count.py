"""What counting a Triton launch in the interpreter costs (``TRITON_INTERPRET=1``).

Run: ``python benchmarks/bench_triton_count.py`` (needs torch and triton). For Triton's
tutorial kernels (tests/data/triton_kernels.py) it prints, side by side, the median time of
one launch: run bare in the interpreter, traced with a formula (the launch runs, nothing is
counted), and traced with no formula (counted as it runs), and the ratio of the last two:
what the count adds to the interpreter's own time.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is first imported

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "data"))


def _median(fn: object, repeats: int = 5, before: object = None) -> float:
    """The median of *repeats* timed calls of *fn* (*before* called, untimed, ahead of each)."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()  # type: ignore[operator]
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    import torch
    import triton_kernels as tk

    import pytest_roofline as rl

    a = torch.randn(256, 256, dtype=torch.float16)
    b = torch.randn(256, 256, dtype=torch.float16)
    rows = torch.randn(64, 781)
    x = torch.randn(1 << 20)
    cases = [("matmul 256^3 fp16", "matmul_kernel", tk.matmul, (a, b)),
             ("softmax 64 x 781", "softmax_kernel", tk.softmax, (rows,)),
             ("vector add 2^20", "add_kernel", tk.add, (x, x))]
    print(f"{'kernel':<20} {'bare':>9} {'formula':>9} {'counted':>9} {'counted/formula':>16}")
    for label, name, fn, args in cases:
        bare = _median(lambda fn=fn, args=args: fn(*args))
        tracer = rl.Tracer(formulas={name: lambda *a, **k: 1.0})
        formula = _median(lambda fn=fn, args=args, t=tracer: t(fn, *args))
        counted = _median(lambda fn=fn, args=args: rl.trace(fn, *args))
        print(f"{label:<20} {bare * 1e3:>7.1f}ms {formula * 1e3:>7.1f}ms "
              f"{counted * 1e3:>7.1f}ms {counted / formula:>15.2f}x")


if __name__ == "__main__":
    main()
