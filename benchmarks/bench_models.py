"""How long building and analyzing model workloads takes (target: a full Llama-3-70B decode
step, every layer's kernels, built and analyzed in under 1 ms).

Run: ``python benchmarks/bench_models.py``. Prints the median and best time per call over
repeated runs, after a warm-up (spec files parsed, imports done).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from per_call import per_call

from pytest_roofline import analyze, get_hardware, models, ops

TARGET_S = 1e-3


def main() -> int:
    h100 = get_hardware("h100")
    llama70 = models.load("llama-3-70b")
    mixtral = models.load("mixtral-8x7b")
    resnet = models.load("resnet-50")
    deepseek = models.load("deepseek-v3")
    config_json = str(Path(__file__).resolve().parents[1] / "tests" / "data" / "hf"
                      / "deepseek-v3.json")
    h200 = get_hardware("h200")
    cases: list[tuple[str, Callable[[], object], bool]] = [
        ("llama-3-70b decode(8, 4096): build + analyze",
         lambda: analyze(llama70.decode(8, 4096), h100), True),
        ("llama-3-70b decode(8, 4096, tp=8): build + analyze",
         lambda: analyze(llama70.decode(8, 4096, tp=8), h100), True),
        ("llama-3-70b decode(8, 4096): build only", lambda: llama70.decode(8, 4096), False),
        ("llama-3-70b prefill(1, 8192): build + analyze",
         lambda: analyze(llama70.prefill(1, 8192), h100), False),
        ("llama-3-70b train_step(1, 4096, tp=8): build + analyze",
         lambda: analyze(llama70.train_step(1, 4096, tp=8), h100), False),
        ("mixtral-8x7b decode(32, 4096): build + analyze",
         lambda: analyze(mixtral.decode(32, 4096), h100), False),
        ("deepseek-v3 decode(64, 4096, ep=8): build + analyze",
         lambda: analyze(deepseek.decode(64, 4096, ep=8), h200), False),
        ("deepseek-v3 config.json: read + map + validate",
         lambda: models.from_hf_config(config_json), False),
        ("resnet-50 forward(64): build + analyze",
         lambda: analyze(resnet.forward(64), h100), False),
        ("ops.matmul(4096, 4096, 4096): build + analyze",
         lambda: analyze(ops.matmul(4096, 4096, 4096), h100), False),
    ]
    width = max(len(name) for name, _, _ in cases)
    print(f"{'case':{width}}  {'kernels':>7}  {'median':>10}  {'best':>10}")
    failed = False
    for name, fn, gated in cases:
        result = fn()
        kernels = len(getattr(result, "kernels", ()))
        median, best = per_call(fn, number=200)
        flag = ""
        if gated:
            flag = "  ok (< 1 ms)" if median < TARGET_S else "  SLOW (target < 1 ms)"
            failed |= median >= TARGET_S
        print(f"{name:{width}}  {kernels:>7}  {median * 1e6:>8.1f}us  {best * 1e6:>8.1f}us{flag}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
