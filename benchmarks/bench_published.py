"""Bounds beside published measurements: how close real systems come to the roofline.

Run: python benchmarks/bench_published.py

Prints, for every case of ``tests/published.py`` (MLPerf Inference, TensorRT demoBERT,
TensorRT-LLM), the measured figure, the bound of the same work on the same chip and the
efficiency (bound time over measured time: never above 100% for a bound that holds), then the
median. The test suite asserts the same cases (``tests/test_published.py``).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from published import CASES  # noqa: E402

from pytest_roofline.text_table import render  # noqa: E402


def main() -> None:
    rows, efficiencies = [], []
    for case in CASES:
        bound = case.bound()
        efficiency = case.efficiency()
        efficiencies.append(efficiency)
        unit = "ms" if case.unit == "s" else "/s"
        scale = 1e3 if case.unit == "s" else 1.0
        rows.append([case.name, case.family, f"{case.measured * scale:,.5g} {unit}",
                     f"{bound * scale:,.5g} {unit}", f"{efficiency:.1%}"])
    print("\n".join(render(("case", "family", "measured", "bound", "efficiency"), rows,
                           align="llrrr")))
    print(f"\nmedian efficiency {statistics.median(efficiencies):.1%} over {len(CASES)} cases "
          f"({min(efficiencies):.1%} .. {max(efficiencies):.1%})")


if __name__ == "__main__":
    main()
