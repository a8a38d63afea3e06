"""Bounds beside published single-kernel timings: how close tuned kernels come to the roofline.

Run: python benchmarks/bench_published_kernels.py

Prints, for every case of ``tests/published_kernels.py`` (DeepGEMM, hipBLASLt, FlashAttention
2/3/4, cuDNN, FlashMLA, QuACK, Liger, NCCL), the chip, the measured time, the bound of the
same work on the same chip and the efficiency (bound over measured time: never above 100% for
a bound that holds; cases marked with the correction they wait for beat it today), then the
median, minimum and maximum per kernel family over the cases that need no correction. The
test suite asserts the same cases (``tests/test_published_kernels.py``).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from published_kernels import CASES  # noqa: E402

from pytest_roofline.text_table import render  # noqa: E402


def main() -> None:
    rows, by_family = [], defaultdict(list)
    for case in CASES:
        efficiency = case.efficiency()
        if case.needs is None:
            by_family[case.family].append(efficiency)
        rows.append([case.name, case.chip, f"{case.measured * 1e6:,.5g} us",
                     f"{case.bound() * 1e6:,.5g} us", f"{efficiency:.1%}", case.needs or ""])
    print("\n".join(render(("case", "chip", "measured", "bound", "efficiency", "needs"), rows,
                           align="llrrrl")))
    summary = [[family, str(len(values)), f"{statistics.median(values):.1%}",
                f"{min(values):.1%}", f"{max(values):.1%}"]
               for family, values in by_family.items()]
    every = [e for values in by_family.values() for e in values]
    summary.append(["all", str(len(every)), f"{statistics.median(every):.1%}",
                    f"{min(every):.1%}", f"{max(every):.1%}"])
    print()
    print("\n".join(render(("family", "cases", "median", "min", "max"), summary,
                           align="lrrrr")))


if __name__ == "__main__":
    main()
