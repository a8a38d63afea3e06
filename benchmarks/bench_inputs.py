"""What checking the input costs: each checked path beside the same work unchecked.

The ops check every size and precision (``ops._common``), kernels and results refuse
non-finite figures, and the report reader refuses NaN, wrong types and deep nesting
(``docs/inputs.md``). Printed side by side with the unchecked core (the kernel formula alone,
``json.loads`` alone), best of five runs. Run: ``python benchmarks/bench_inputs.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from pytest_roofline import analyze, get_hardware, ops
from pytest_roofline.ops.matmul import matmul_kernel
from pytest_roofline.report import records


def best(stmt: object, number: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=5)) / number  # type: ignore[arg-type]


def report_file(results: int) -> Path:
    record = {"nodeid": "t.py::x", "hw": "h100-sxm", "dtype": "bf16", "flops": 1e9,
              "bytes": 1e6, "intensity": 1e3, "ridge": 295.3, "regime": "compute",
              "time_s": 1e-6, "outcome": "passed", "t_compute_s": 1e-6, "t_memory_s": 1e-7,
              "t_network_s": 0.0, "attainable_flops": 1e14, "footprint_B": 1e6,
              "capacity_B": 8e10, "fits": True, "expected": ["compute"], "message": "",
              "workload": "w", "link_bytes": 0.0, "flops_per_mac": 2, "derate": 1.0}
    path = Path(tempfile.mkdtemp()) / "report.json"
    records.write_report(path, records.make_report(
        [dict(record, nodeid=f"t.py::x{i}") for i in range(results)]))
    return path


def main() -> None:
    hw = get_hardware("h100")
    a = np.zeros((64, 4096), np.float16)
    b = np.zeros((4096, 4096), np.float16)
    work = ops.matmul(4096, 4096, 4096)
    path = report_file(20_000)
    text = path.read_text()
    rows = [
        ("matmul from sizes", best(lambda: ops.matmul(4096, 4096, 4096), 5000),
         best(lambda: matmul_kernel("m", 4096.0, 4096, 4096, "bf16", "bf16", "bf16", "bf16"),
              5000)),
        ("matmul from two arrays", best(lambda: ops.matmul(a, b), 5000),
         best(lambda: matmul_kernel("m", 64.0, 4096, 4096, "fp16", "fp16", "fp16", "fp16"),
              5000)),
        ("analyze one matmul", best(lambda: analyze(work, hw), 5000), None),
        ("read a 20,000-result report", best(lambda: records.load_report(path), 3),
         best(lambda: json.loads(text), 3)),
    ]
    print(f"{'measure':30s} {'checked':>10s} {'unchecked core':>15s}")
    for label, checked, core in rows:
        unit, scale = ("ms", 1e3) if checked > 1e-3 else ("us", 1e6)
        bare = "-" if core is None else f"{core * scale:.3g} {unit}"
        print(f"{label:30s} {checked * scale:>7.3g} {unit} {bare:>15s}")


if __name__ == "__main__":
    main()
