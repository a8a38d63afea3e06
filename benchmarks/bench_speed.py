"""Reading and pricing a trace against the stdlib's ``json.loads`` of it, and the CLI's start-up.

    python benchmarks/bench_speed.py [TRACE ...]

For each trace (default: the largest public trace of tests/data/traces, xDiT's SD3.5 on an
MI300X, 239,093 events, then HTA's A100 control run, 109,123 events, and two small ones):
the process CPU time of ``json.loads`` of its inflated bytes (the stdlib as it runs by
default, its garbage collector on), and of ``read_trace`` of the file (inflate, parse, check
every field, build the op tree, join launches to kernels, price every distinct call, judge
each row), each the best of three, the pricing cache emptied before each read; their ratio
(the goal: at most 2); and the same against ``json.loads`` with the collector paused, as the
reader parses (the stricter figure: the collector's passes over a heap that holds torch cost
the stdlib a third or more). torch is imported first and not counted (a trace whose ops need
a rebuild on meta tensors pays torch's import once per process; see below).

Then the CLI's start-up: the wall time of ``python -m pytest_roofline profile SMALL`` in a
fresh interpreter (best of three; the goal: under 1.5 s on a 2-core machine), and whether
that process imported torch, ``torch._dynamo`` or jax (the goal: none of them).

The JSON parser is the stdlib's (``profiling/torch/trace_json.py`` says why not orjson).
"""

from __future__ import annotations

import gc
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "traces"
DEFAULT = ("tracelens_xdit_sd35.json.gz", "a100_hta_trace_diff_control.json.gz",
           "tracelens_mi300x_bert_small.json.gz", "hta_mi250_minitoy_train.json.gz")
SMALL = DATA / "hta_mi250_minitoy_train.json.gz"
HW = {"kineto_resnet50_v100_2021.json.gz": "v100", "a100_hta_sampled_rank0.json.gz": "a100",
      "a100_hta_sampled_rank1.json.gz": "a100"}


def best(fn: object, times: int = 3) -> float:
    spent = []
    for _ in range(times):
        gc.collect()
        start = time.process_time()
        fn()  # type: ignore[operator]
        spent.append(time.process_time() - start)
    return min(spent)


def reading(paths: list[Path]) -> None:
    import torch  # noqa: F401  (imported once, not counted)

    from pytest_roofline.profiling import read_trace
    from pytest_roofline.profiling.torch import pricing, trace_json

    print(f"{'trace':40} {'events':>8} {'json.loads':>11} {'(gc off)':>9} {'reader':>8} "
          f"{'ratio':>6} {'(gc off)':>8}")
    for path in paths:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        events = len(json.loads(raw)["traceEvents"])
        stdlib = best(lambda raw=raw: json.loads(raw))
        with trace_json.paused_gc():  # as the reader parses: the collector paused
            bare = best(lambda raw=raw: json.loads(raw))

        def read(path: Path = path) -> None:
            pricing._CACHE.clear()
            read_trace(path, hw=HW.get(path.name))

        read()  # warm: this trace's first rebuilds on meta import torch's decompositions
        reader = best(read)
        print(f"{path.name:40} {events:>8,} {stdlib:>10.2f}s {bare:>8.2f}s {reader:>7.2f}s "
              f"{reader / stdlib:>5.2f}x {reader / bare:>7.2f}x")


def start_up() -> None:
    code = ("import sys, runpy; sys.argv = ['pytest_roofline', 'profile', sys.argv[1]]; "
            "import pytest_roofline.cli as c; code = c.main(sys.argv[1:]); "
            "print('IMPORTED', [m for m in ('torch', 'torch._dynamo', 'jax') "
            "if m in sys.modules], file=sys.stderr); sys.exit(code)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    walls, imported = [], ""
    for _ in range(3):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, str(SMALL)], capture_output=True,
                              text=True, env=env, check=False)
        walls.append(time.perf_counter() - start)
        imported = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"
    print(f"CLI start-up, pytest-roofline profile {SMALL.name}: {min(walls):.2f} s wall "
          f"(best of 3; {', '.join(f'{w:.2f}' for w in walls)}); {imported}")


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or [DATA / name for name in DEFAULT]
    start_up()
    reading(paths)


if __name__ == "__main__":
    main(sys.argv[1:])
