"""What ``trace=fn`` costs beside ``trace=True``, measured side by side in one run.

    python benchmarks/bench_trace_fn.py [--tests 200] [--ops 20] [--repeat 5]

Three suites of --tests torch tests, each body calling a kernel function ``kernel`` that runs
--ops small aten ops (adds of two 4,096-element tensors) from inside a helper, as a test of a
kernel library does:

* ``unmarked``: no roofline marker (the floor: pytest and torch);
* ``trace=True``: the whole body recorded;
* ``trace=kernel``: only what runs inside ``kernel`` recorded.

Each suite runs --repeat times, interleaved, in a fresh pytest process; the table shows the
median CPU time (user + system) and, per test, each marked suite's cost over the unmarked one.
The target: ``trace=kernel`` at most 1.5x ``trace=True`` per test.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SUITE = """
import pytest
import torch

X = torch.randn(4096)

def kernel(x):
    for _ in range({ops}):
        x = x + x
    return x

def helper(x):
    return kernel(x)

@pytest.mark.parametrize("i", range({n}))
{marker}
def test_kernel(i):
    assert helper(X).shape == X.shape
"""

MARKERS = {
    "unmarked": "",
    "trace=True": '@pytest.mark.roofline(hw="h100", trace=True)',
    "trace=kernel": '@pytest.mark.roofline(hw="h100", trace=kernel)',
}


def cpu_time(folder: Path, env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "-p", "roofline", str(folder)], check=True, env=env, cwd=folder,
                   stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--ops", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    times: dict[str, list[float]] = {name: [] for name in MARKERS}
    with tempfile.TemporaryDirectory() as tmp:
        folders = {}
        for name, marker in MARKERS.items():
            folder = Path(tmp) / name.replace("=", "_")
            folder.mkdir()
            (folder / "test_suite.py").write_text(SUITE.format(
                ops=options.ops, n=options.tests, marker=marker))
            folders[name] = folder
        for _ in range(options.repeat):  # interleaved: drift hits every suite alike
            for name, folder in folders.items():
                times[name].append(cpu_time(folder, env))
    floor = statistics.median(times["unmarked"])
    per_test = {name: (statistics.median(t) - floor) / options.tests
                for name, t in times.items()}
    print(f"{options.tests} tests of {options.ops} ops each, median of {options.repeat} "
          f"runs (CPU s)")
    print(f"{'suite':14} {'CPU s':>8} {'min-max':>15} {'per test over unmarked':>24}")
    for name, t in times.items():
        extra = "" if name == "unmarked" else f"{per_test[name] * 1e3:.2f} ms"
        print(f"{name:14} {statistics.median(t):8.2f} {min(t):7.2f}-{max(t):<7.2f} "
              f"{extra:>24}")
    print(f"trace=kernel / trace=True per test: "
          f"{per_test['trace=kernel'] / per_test['trace=True']:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
