"""Engine speed, printed side by side with mlsysim's analytical engine when it is installed.

Run: python benchmarks/bench_engine.py   (pip install mlsysim for the comparison column)

Targets: import < 100 ms; first get_hardware() < 400 ms; later lookups and analyze() of a
one-kernel workload < 20 us; a 1,000,000-point sweep < 200 ms. Figures are the best of several
runs (the least disturbed by other load on the machine). Import and first-use times run in
fresh interpreters, as a user's first call would.
"""

from __future__ import annotations

import subprocess
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fresh(code: str, repeat: int = 5) -> float | None:
    """Best wall time (s) that *code* reports for itself in a fresh interpreter."""
    best = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=ROOT, check=False)
        if out.returncode != 0:
            return None
        value = float(out.stdout.strip().splitlines()[-1])
        best = value if best is None else min(best, value)
    return best


def per_call(stmt: str, setup: str, number: int) -> float:
    return min(timeit.repeat(stmt, setup, number=number, repeat=5)) / number


def ours() -> dict[str, float | None]:
    setup = ("import numpy as np; import pytest_roofline as r; hw = r.get_hardware('h100');"
             "w = r.Workload(flops=2 * 4096**3, bytes=6 * 4096**2, dtype='bf16');"
             "b = np.arange(1, 1_000_001, dtype=float);"
             "sweep = lambda: r.sweep(r.Workload(flops=2*b*8192*8192,"
             " bytes=2*(b*8192 + 8192*8192 + b*8192), dtype='bf16'), hw)")
    return {
        "import": fresh("import time; t = time.perf_counter(); import pytest_roofline;"
                        "print(time.perf_counter() - t)"),
        "first hardware lookup": fresh(
            "import pytest_roofline as r, time; t = time.perf_counter(); r.get_hardware('h100');"
            "print(time.perf_counter() - t)"),
        "later hardware lookup": per_call("r.get_hardware('h100')", setup, 20000),
        "analyze one kernel": per_call("r.analyze(w, hw)", setup, 20000),
        "1,000,000-point sweep": per_call("sweep()", setup, 3),
    }


def mlsysim() -> dict[str, float | None]:
    probe = subprocess.run([sys.executable, "-c", "import mlsysim"], capture_output=True,
                           check=False)
    if probe.returncode != 0:
        return {}
    setup = ("import mlsysim; from mlsysim import Engine;"
             "m = mlsysim.Models.Vision.ResNet50; h = mlsysim.Hardware.Cloud.H100")
    solve = "Engine.solve(model=m, hardware=h, batch_size=1, precision='fp16')"
    return {
        "import": fresh("import time; t = time.perf_counter(); import mlsysim;"
                        "print(time.perf_counter() - t)", repeat=3),
        "first hardware lookup": fresh(
            "import time; t = time.perf_counter(); import mlsysim;"
            "h = mlsysim.Hardware.Cloud.H100; print(time.perf_counter() - t)", repeat=3),
        "later hardware lookup": per_call("mlsysim.Hardware.Cloud.H100", setup, 20000),
        "analyze one kernel": per_call(solve, setup, 200),
        "1,000,000-point sweep": None,  # no vectorized sweep: one solve per point
    }


def show(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


TARGETS = {"import": 0.1, "first hardware lookup": 0.4, "later hardware lookup": 20e-6,
           "analyze one kernel": 20e-6, "1,000,000-point sweep": 0.2}


def main() -> None:
    a, b = ours(), mlsysim()
    print(f"{'measure':24} {'pytest-roofline':>16} {'target':>9} {'ok':>3} "
          f"{'mlsysim':>10} {'mlsysim / ours':>15}")
    for name, target in TARGETS.items():
        value, other = a[name], b.get(name)
        ok = "yes" if value is not None and value <= target else "NO"
        ratio = f"{other / value:.1f}x" if value and other else "-"
        print(f"{name:24} {show(value):>16} {show(target):>9} {ok:>3} {show(other):>10} "
              f"{ratio:>15}")
    if not b:
        print("(mlsysim is not installed: pip install mlsysim for the comparison column)")
    else:
        print("(mlsysim's analyze is one Engine.solve of ResNet-50 on H100; it has no "
              "vectorized sweep)")


if __name__ == "__main__":
    main()
