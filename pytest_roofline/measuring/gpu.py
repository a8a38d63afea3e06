"""Calibrating a CUDA GPU with torch: GEMM peaks per precision, device copy and memset.

* **Peaks**: ``torch.matmul`` of normally distributed values (constant operands switch
  fewer bits and let the clock run higher than real data does) per precision the device
  runs: fp64, fp32 (TF32 off), tf32 (TF32 on), fp16, bf16; fp8 (e4m3 in, bf16 out) through
  ``torch._scaled_mm`` with fast accumulation where the build takes it, on devices with fp8
  tensor cores (compute capability 8.9 and later; :mod:`._cuda_compat`); ``2 m k n / t``.
  Each round samples several GEMMs per precision and keeps the best (:func:`gemm_shapes`):
  square 8192 (4096 in fp64) with the operands in each layout (nn, nt, tn) and, in 16-bit
  and fp8, an MLP projection's 4096 x 4096 by 14336; cuBLAS runs each with its own kernel,
  and a peak taken from one of them sat below what the others reach in the same run.
* **Memory bandwidth**: a device-to-device copy of 1 GiB (2 B counted per byte copied: one
  read, one write) and a memset (``zero_``: 1 B counted per byte written); the roof is the
  better of the two. Both buffers are far larger than the L2 cache.
* **L2 bandwidth**: copies between two buffers that together fill half the L2 cache (so
  they stay in it), captured back to back in one CUDA graph so that launch gaps do not
  count as time (2 B per byte copied); a lower bound of the L2's rate, since the gaps
  between graph nodes remain.
* Timed with CUDA events around each call after a warm-up; rounds spread over time and the
  best sample kept, as on the CPU (:mod:`.cpu`). Before each timed call the device is given
  a write of twice its L2 cache (:class:`.cuda_timing.Flush`), so the GPU is busy while the
  host launches the call and the launch is not counted. The samples run back to back, as
  a GPU runs sustained work: at its power cap (an H200 read 1455 to 1770 of 1980 MHz after
  them), so a short kernel at a higher clock, or a GEMM shape cuBLAS runs better, can beat
  a calibrated peak by some percent; :mod:`pytest_roofline.profiling` names that cause.
  (Idle before each sample reads lower still: the clock ramps up from idle.)

Only imported when a GPU is calibrated; torch is imported inside the functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import RooflineError
from ._cuda_compat import scaled_mm
from .cpu import Figure, Level, Plan, Roofs, sample_rounds
from .cuda_timing import Flush

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


def _timer(torch: Any, fn: Callable[[], Any], busy: Flush | None = None) -> float:
    """Seconds of one call between CUDA events; *busy* first keeps the GPU working while the
    host launches the call."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if busy is not None:
        busy.evict()
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
    details: dict[str, Callable[[], str]] = {}
    big = 4096 if plan.gemm_max >= 4096 else 1024
    flush = Flush(torch, device)
    for name, torch_name in TORCH_DTYPES.items():
        dtype = getattr(torch, torch_name)
        n = big if name == "fp64" else 2 * big
        candidates = {}
        for label, (m, k, cols), layout in gemm_shapes(n, wide=name in ("fp16", "bf16")):
            call = _matmul(torch, device, dtype, m, k, cols, layout)
            if call is not None:
                candidates[label] = _gemm_rate(torch, call, 2.0 * m * k * cols, flush,
                                               tf32=name == "tf32")
        if not candidates:  # a precision this device or build does not run
            continue
        sample, winner = best_of(candidates)
        samplers[f"matrix.{name}"] = (sample, "torch.matmul")
        details[f"matrix.{name}"] = winner
    fp8 = _fp8_sampler(torch, device, props, 2 * big, flush)
    if fp8 is not None:
        samplers["matrix.fp8"] = (fp8[0], "torch._scaled_mm")
        details["matrix.fp8"] = fp8[1]
    l2_size = int(getattr(props, "L2_cache_size", 0) or 0)
    l2 = _l2_sampler(torch, device, l2_size) if l2_size else None
    if l2 is not None:
        samplers["cache.l2"] = l2
    size = (1 << 30) if plan.gemm_max >= 4096 else (1 << 26)
    src = torch.ones(size // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    samplers["memory.copy"] = (lambda: 2.0 * size / _timer(torch, lambda: dst.copy_(src),
                                                           flush),
                               f"device copy of {size >> 20} MiB, 2 B counted per byte")
    samplers["memory.memset"] = (lambda: 1.0 * size / _timer(torch, dst.zero_, flush),
                                 f"memset of {size >> 20} MiB")
    for _, (sample, _) in samplers.items():
        sample()  # warm-up
    results = sample_rounds(samplers, plan, say, started)
    figures = {key: Figure(key, tuple(v), details[key]() if key in details else samplers[key][1])
               for key, v in results.items()}
    roofs = Roofs(
        matrix={k.split(".", 1)[1]: f for k, f in figures.items() if k.startswith("matrix.")},
        memory={k.split(".", 1)[1]: f for k, f in figures.items() if k.startswith("memory.")},
        levels=[Level("l2", float(l2_size), figures["cache.l2"])] if "cache.l2" in figures
        else [], threads=int(props.multi_processor_count),
        seconds=time.perf_counter() - started, rounds=len(next(iter(results.values()))))
    facts = {
        "model": str(props.name), "capacity": float(props.total_memory),
        "multiprocessors": int(props.multi_processor_count),
        "l2_cache": float(getattr(props, "L2_cache_size", 0) or 0),
        "torch": str(torch.__version__), "cuda": str(torch.version.cuda),
        "driver": _driver(torch),
    }
    return roofs, facts


#: Layouts of a GEMM's operands sampled per precision: cuBLAS picks a kernel per layout and
#: shape, and their rates differ by some percent (a calibrated peak below what a kernel of
#: the same run reaches makes its efficiency read high).
LAYOUTS = ("nn", "nt", "tn")


def gemm_shapes(n: int, *, wide: bool) -> list[tuple[str, tuple[int, int, int], str]]:
    """The GEMMs a precision's peak is the best of: ``(label, (m, k, n), layout)``; square
    *n* in every layout and, for the 16-bit precisions (*wide*), an MLP projection's shape
    (n/2 x n/2 by 7n/4, Llama-3-8B's 4096 x 14336 at n = 8192) in two layouts."""
    out = [(f"{n}x{n}x{n} {layout}", (n, n, n), layout) for layout in LAYOUTS]
    if wide:
        m, cols = n // 2, 7 * n // 4
        out += [(f"{m}x{m}x{cols} {layout}", (m, m, cols), layout) for layout in LAYOUTS[:2]]
    return out


def best_of(candidates: dict[str, Callable[[], float]]
            ) -> tuple[Callable[[], float], Callable[[], str]]:
    """A sampler taking one sample of every candidate and giving the best rate, and a
    description of the candidates naming the best one seen so far."""
    best: dict[str, float] = {}

    def sample() -> float:
        rates = {label: candidate() for label, candidate in candidates.items()}
        for label, rate in rates.items():
            best[label] = max(best.get(label, 0.0), rate)
        return max(rates.values())

    def winner() -> str:
        top = max(best, key=best.__getitem__) if best else next(iter(candidates))
        return f"best of {', '.join(candidates)}: {top}"

    return sample, winner


def _matmul(torch: Any, device: Any, dtype: Any, m: int, k: int, n: int, layout: str
            ) -> Callable[[], Any] | None:
    """``torch.matmul`` of an m x k by k x n product of normally distributed values, each
    operand stored as *layout* says (``t``: transposed, a column-major view); None where
    the device or build does not run the precision."""
    try:
        a = torch.randn((m, k), dtype=dtype, device=device) if layout[0] == "n" else \
            torch.randn((k, m), dtype=dtype, device=device).t()
        b = torch.randn((k, n), dtype=dtype, device=device) if layout[1] == "n" else \
            torch.randn((n, k), dtype=dtype, device=device).t()
        torch.matmul(a, b)
    except RuntimeError:
        return None
    return lambda: torch.matmul(a, b)


def _gemm_rate(torch: Any, call: Callable[[], Any], flops: float, flush: Flush, *,
               tf32: bool) -> Callable[[], float]:
    def rate() -> float:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            return flops / _timer(torch, call, flush)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False

    rate()  # warm-up: cuBLAS picks and loads its kernel
    return rate


def fp8_call(fn: Any, a: Any, b: Any, scale: Any, out_dtype: Any) -> tuple[Callable[[], Any], str]:
    """The fastest fp8 GEMM call this torch offers through *fn* (``torch._scaled_mm``):
    with ``use_fast_accum=True`` (Hopper's fast fp8 accumulation, the path fp8 training and
    inference libraries take) where the build accepts it, else the default; and which."""
    for kwargs, words in (({"use_fast_accum": True}, "fast accumulation"), ({}, "")):
        try:
            fn(a, b, scale, scale, out_dtype=out_dtype, **kwargs)
        except (RuntimeError, TypeError):  # not in this build
            continue
        return (lambda kw=kwargs: fn(a, b, scale, scale, out_dtype=out_dtype, **kw)), words
    raise TypeError("no fp8 GEMM in this build")


def _fp8_sampler(torch: Any, device: Any, props: Any, n: int, flush: Flush
                 ) -> tuple[Callable[[], float], Callable[[], str]] | None:
    """The fp8 (e4m3) GEMM sampler, where the device and this torch run one: the best of
    the square and the MLP shapes, through the fastest path (:func:`fp8_call`)."""
    fn = scaled_mm(torch)
    e4m3 = getattr(torch, "float8_e4m3fn", None)
    if fn is None or e4m3 is None or (props.major, props.minor) < (8, 9):
        return None
    candidates = {}
    one = torch.ones((), device=device, dtype=torch.float32)
    for label, (m, k, cols), layout in gemm_shapes(n, wide=True):
        if layout != "nt":  # cuBLAS's fp8 GEMM takes a row-major, b column-major only
            continue
        try:
            a = torch.randn((m, k), device=device).to(e4m3)
            b = torch.randn((cols, k), device=device).to(e4m3).t()
            call, words = fp8_call(fn, a, b, one, torch.bfloat16)
        except (RuntimeError, TypeError):  # no fp8 kernel in this build
            continue
        how = f", {words}" if words else ""
        candidates[f"{label} e4m3, bf16 out{how}"] = _gemm_rate(
            torch, call, 2.0 * m * k * cols, flush, tf32=False)
    if not candidates:
        return None
    sample, winner = best_of(candidates)
    return sample, lambda: f"torch._scaled_mm {winner()}"


def _l2_sampler(torch: Any, device: Any, l2_size: int
                ) -> tuple[Callable[[], float], str] | None:
    """The L2 bandwidth sampler: a CUDA graph of copies between two L2-resident buffers."""
    size = max(l2_size // 4, 1 << 20)  # each buffer: the two fill half the L2
    src = torch.ones(size // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    copies = 256  # about 1.5 ms a replay on an H200: clock transients average out
    try:
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            dst.copy_(src)
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(copies):
                dst.copy_(src)
        graph.replay()
        torch.cuda.synchronize(device)
    except RuntimeError:  # graphs not available: no L2 figure rather than a launch-bound one
        return None

    def sample() -> float:
        return 2.0 * size * copies / _timer(torch, graph.replay)

    return sample, (f"{copies} device copies of {size >> 20} MiB (2 buffers: half the "
                    f"{l2_size >> 20} MiB L2) in one CUDA graph, 2 B counted per byte")


def _driver(torch: Any) -> str | None:
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=False)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None
