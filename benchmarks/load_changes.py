"""The measured example of README.md and docs/measure.md on a machine whose load changes.

Each run: a fresh calibration cache, busy loops on BUSY cores while ``pytest-roofline
calibrate`` measures, the loops stopped and ``test_add`` run (quiet), the loops started again
and ``test_add`` run (busy). Prints each test's efficiency line and counts the failures and
"faster than the bound" readings. docs/measure.md ("gate below the spread you see") reports
ten runs of it.

    python benchmarks/load_changes.py [--runs 10] [--busy 2] [--min-efficiency 0.4]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = '''import numpy as np
import pytest
from pytest_roofline import ops

N = 64 * 2**20 // 8   # 64 MB of float64

@pytest.mark.roofline(hw="host", regime="memory", min_efficiency={gate})
def test_add(roofline):
    a, b, c = np.ones(N), np.ones(N), np.empty(N)
    roofline.add(ops.elementwise(N, inputs=2, outputs=1, dtype="fp64"))
    roofline.measure(np.add, a, b, out=c)
'''


def _busy(cores: int) -> list[subprocess.Popen[bytes]]:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    time.sleep(1.0)
    return loops


def _stop(loops: list[subprocess.Popen[bytes]]) -> None:
    for loop in loops:
        loop.kill()
        loop.wait()


def _test(folder: Path, env: dict[str, str]) -> tuple[bool, str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(folder / "test_example.py")], capture_output=True, text=True,
                         env=env, check=False)
    row = next((line.strip() for line in out.stdout.splitlines()
                if re.match(r"\s+host\s", line)), "no row")
    return out.returncode == 0 and "faster" not in out.stdout, row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--busy", type=int, default=2, help="busy loops (cores)")
    parser.add_argument("--min-efficiency", type=float, default=0.4)
    args = parser.parse_args(argv)
    bad = 0
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        (folder / "test_example.py").write_text(EXAMPLE.format(gate=args.min_efficiency))
        for run in range(1, args.runs + 1):
            env = {**os.environ, "XDG_CACHE_HOME": str(folder / f"cache{run}")}
            loops = _busy(args.busy)
            try:
                subprocess.run([sys.executable, "-m", "pytest_roofline", "calibrate"],
                               capture_output=True, env=env, check=False)
            finally:
                _stop(loops)
            ok, row = _test(folder, env)
            print(f"run {run} quiet: {'ok  ' if ok else 'FAIL'} {row}", flush=True)
            bad += not ok
            loops = _busy(args.busy)
            try:
                ok, row = _test(folder, env)
            finally:
                _stop(loops)
            print(f"run {run} busy:  {'ok  ' if ok else 'FAIL'} {row}", flush=True)
            bad += not ok
    print(f"{bad} of {2 * args.runs} tests failed or read faster than the bound")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
