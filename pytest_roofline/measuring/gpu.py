"""Calibrating a CUDA GPU with torch: GEMM peaks per precision, device copy and memset.

* **Peaks**: ``torch.matmul`` of square matrices (8192, 4096 in fp64) per precision the
  device runs: fp64, fp32 (TF32 off), tf32 (TF32 on), fp16, bf16; ``2 n^3 / t``.
* **Memory bandwidth**: a device-to-device copy of 1 GiB (2 B counted per byte copied: one
  read, one write) and a memset (``zero_``: 1 B counted per byte written); the roof is the
  better of the two.
* Timed with CUDA events around each call after a warm-up; rounds spread over time and the
  best sample kept, as on the CPU (:mod:`.cpu`).

Only imported when a GPU is calibrated; torch is imported inside the functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import RooflineError
from .cpu import Figure, Plan, Roofs, sample_rounds

TORCH_DTYPES = {"fp64": "float64", "fp32": "float32", "tf32": "float32", "fp16": "float16",
                "bf16": "bfloat16"}


def torch_device(index: int) -> Any:
    """torch and the device, or a RooflineError saying why there is no such GPU."""
    try:
        import torch  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise RooflineError("calibrating a CUDA device needs torch (pip install torch); "
                            "it is not installed") from None
    if not torch.cuda.is_available():
        raise RooflineError("torch sees no CUDA device on this machine (torch.cuda."
                            "is_available() is False); calibrate 'host' instead")
    count = torch.cuda.device_count()
    if not 0 <= index < count:
        raise RooflineError(f"no CUDA device cuda:{index}; torch sees {count} "
                            f"(cuda:0 to cuda:{count - 1})")
    return torch, torch.device(f"cuda:{index}")


def _timer(torch: Any, fn: Callable[[], Any]) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / 1e3


def calibrate_gpu(index: int = 0, plan: Plan | None = None,
                  progress: Callable[[str], None] | None = None) -> tuple[Roofs, dict[str, Any]]:
    """Measure GPU *index*'s roofs; also returns what the device says of itself."""
    plan = plan or Plan()
    say = progress or (lambda _text: None)
    torch, device = torch_device(index)
    started = time.perf_counter()
    props = torch.cuda.get_device_properties(device)
    samplers: dict[str, tuple[Callable[[], float], str]] = {}
    big = 4096 if plan.gemm_max >= 4096 else 1024
    for name, torch_name in TORCH_DTYPES.items():
        dtype = getattr(torch, torch_name)
        n = big if name == "fp64" else 2 * big
        try:
            a = torch.full((n, n), 0.5, dtype=dtype, device=device)
            b = torch.full((n, n), 0.25, dtype=dtype, device=device)
            torch.matmul(a, b)
        except RuntimeError:  # a precision this device or build does not run
            continue
        tf32 = name == "tf32"

        def gemm(a: Any = a, b: Any = b, n: int = n, tf32: bool = tf32) -> float:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                return 2.0 * n ** 3 / _timer(torch, lambda: torch.matmul(a, b))
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False

        gemm()
        samplers[f"matrix.{name}"] = (gemm, f"torch.matmul {n}x{n}x{n}")
    size = (1 << 30) if plan.gemm_max >= 4096 else (1 << 26)
    src = torch.ones(size // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    samplers["memory.copy"] = (lambda: 2.0 * size / _timer(torch, lambda: dst.copy_(src)),
                               f"device copy of {size >> 20} MiB, 2 B counted per byte")
    samplers["memory.memset"] = (lambda: 1.0 * size / _timer(torch, dst.zero_),
                                 f"memset of {size >> 20} MiB")
    for _, (sample, _) in samplers.items():
        sample()  # warm-up
    results = sample_rounds(samplers, plan, say, started)
    figures = {key: Figure(key, tuple(v), samplers[key][1]) for key, v in results.items()}
    roofs = Roofs(
        matrix={k.split(".", 1)[1]: f for k, f in figures.items() if k.startswith("matrix.")},
        memory={k.split(".", 1)[1]: f for k, f in figures.items() if k.startswith("memory.")},
        levels=[], threads=int(props.multi_processor_count),
        seconds=time.perf_counter() - started, rounds=len(next(iter(results.values()))))
    facts = {
        "model": str(props.name), "capacity": float(props.total_memory),
        "multiprocessors": int(props.multi_processor_count),
        "l2_cache": float(getattr(props, "L2_cache_size", 0) or 0),
        "torch": str(torch.__version__), "cuda": str(torch.version.cuda),
        "driver": _driver(torch),
    }
    return roofs, facts


def _driver(torch: Any) -> str | None:
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=False)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None
