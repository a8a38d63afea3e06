"""Timing a call that runs on a CUDA GPU, as GPU benchmark harnesses do.

:class:`~.timing.Timer` hands a call here when one of its arguments is a CUDA tensor (or a
module whose parameters are). Each step, in order:

1. **Warm-up**: ``warmup`` untimed calls (at least one: compilation, autotuning, the
   allocator's first blocks), then the device is synchronized.
2. **Clocks**: the SM and memory clocks, the temperature and NVML's throttle reasons are read
   before and after the timed calls (``nvidia-ml-py``, where installed). A call that ended
   with the SM clock below 90% of its maximum, or with a thermal or power slowdown active,
   gets a note saying so: its time is not the chip's.
3. **Timed calls**, one of two methods, named in ``Measurement.method``:

   * ``cuda-events`` (the default, ``cache="cold"``): before every call the L2 cache is
     flushed by writing a buffer of twice its size (persisting lines set aside by an
     access-policy window are released first, where ``cuda-python`` is installed), so a
     call never reads what the previous repeat left in L2: a layernorm repeated on a warm
     cache can otherwise "reach" several times the DRAM bandwidth. Then a CUDA event is
     recorded on the stream before and after the call; the device time between them is
     the sample. The flush also keeps the GPU busy while the host launches the call, so a
     single kernel's launch cost is not counted.
   * ``cuda-graph`` (``cache="warm"``, and cold calls under 2 us, where the events'
     resolution of about 0.5 us would dominate): the call is captured *k* times into one
     CUDA graph (about 1 ms of work), and each sample is one replay's event time over *k*.
     Between graph nodes there are no host launches, and the L2 cache is warm: the steady
     state of a call repeated on the same data (noted for a cold call). On an idle GPU,
     events around eager calls would count the host's launch time instead, so warm calls
     are never timed that way; a call that cannot be captured (it synchronizes with the
     host, say) falls back to events, with a note.

   **Launch-bound calls.** A call of many kernels (a decoder layer in eager mode) can take
   longer to launch from Python than to run. After events, the same call is replayed as a
   CUDA graph of (flush, call) pairs less a graph of flushes alone; when that is under 70%
   of the events' time, a note gives both: the host, not the GPU, sets the call's time,
   and CUDA graphs or ``torch.compile(mode="reduce-overhead")`` remove the gaps.

4. **Figures**: the median sample, the best, the spread (IQR / median), as for every
   :class:`~.timing.Measurement`.

Only imported when a CUDA call is timed; torch is already imported by the caller's tensors.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

#: Cold calls shorter than this (seconds) are timed as a CUDA graph of several calls.
GRAPH_BELOW = 2e-6
#: A graph replay of the call under this fraction of its event time: launch-bound.
LAUNCH_BOUND = 0.7
#: One graph replay's target length (seconds): long enough for the events' resolution.
GRAPH_TARGET = 1e-3
#: Most calls captured in one graph.
GRAPH_MAX_CALLS = 1000
#: An SM clock below this fraction of its maximum after the calls means it throttled.
THROTTLE_FRACTION = 0.9
#: NVML throttle-reason bits that mean the chip slowed itself (power cap, thermal).
SLOWDOWN_REASONS = {
    0x4: "power cap (software)",
    0x8: "hardware slowdown",
    0x20: "thermal slowdown (software)",
    0x40: "thermal slowdown (hardware)",
    0x80: "power brake (hardware)",
}


def cuda_index(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int | None:
    """The CUDA device index of the first tensor argument on a GPU, looking into modules'
    parameters, tuples and lists one level down (None: nothing on a GPU)."""
    values: list[Any] = []
    for value in (*args, *kwargs.values()):
        values.extend(value if isinstance(value, (tuple, list)) else (value,))
    for value in values:
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", None) == "cuda":
            return int(getattr(device, "index", None) or 0)
        params = getattr(value, "parameters", None)
        if callable(params):
            for p in params():
                if p.device.type == "cuda":
                    return int(p.device.index or 0)
                break
    return None


def read_clocks(index: int) -> dict[str, Any] | None:
    """SM and memory clocks (MHz), the SM clock's maximum, temperature (C) and the active
    throttle reasons of GPU *index* through NVML; None where NVML cannot be read."""
    try:
        import pynvml  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            reasons = int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))
            return {
                "sm_mhz": int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                "sm_max_mhz": int(pynvml.nvmlDeviceGetMaxClockInfo(handle,
                                                                   pynvml.NVML_CLOCK_SM)),
                "memory_mhz": int(pynvml.nvmlDeviceGetClockInfo(handle,
                                                                pynvml.NVML_CLOCK_MEM)),
                "temperature_c": int(pynvml.nvmlDeviceGetTemperature(
                    handle, pynvml.NVML_TEMPERATURE_GPU)),
                "throttle": [text for bit, text in SLOWDOWN_REASONS.items() if reasons & bit],
            }
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver access (a container without NVML, say): not known
        return None


def throttle_note(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
                  ) -> str | None:
    """Why the timed calls may not show the chip's speed (a clock below 90% of its maximum,
    a slowdown reason), from NVML readings before and after; None when nothing says so."""
    if not after:
        return None
    reasons = list(after.get("throttle") or ())
    sm, top = after.get("sm_mhz"), after.get("sm_max_mhz")
    low = bool(sm and top and sm < THROTTLE_FRACTION * top)
    if not reasons and not low:
        return None
    said = f"SM clock {sm} MHz of {top} MHz after the timed calls"
    if before and before.get("sm_mhz"):
        said += f" ({before['sm_mhz']} MHz before)"
    if reasons:
        said += f"; NVML reports {', '.join(reasons)}"
    return f"the GPU throttled: {said}; its time is not the chip's full speed"


def graph_calls(single: float) -> int:
    """How many calls of *single* seconds one graph replay holds (about GRAPH_TARGET)."""
    if not single > 0:
        return GRAPH_MAX_CALLS
    return max(2, min(GRAPH_MAX_CALLS, int(GRAPH_TARGET / single)))


class Flush:
    """Evicts the L2 cache of a device: releases persisting lines, then writes a buffer of
    twice the L2's size (at least 64 MiB)."""

    def __init__(self, torch: Any, device: Any) -> None:
        props = torch.cuda.get_device_properties(device)
        size = max(2 * int(getattr(props, "L2_cache_size", 0) or 0), 64 << 20)
        self.buffer = torch.empty(size, dtype=torch.uint8, device=device)
        self._reset = _persisting_reset()
        self.persisting = self._reset is not None and _call_reset(self._reset)

    def __call__(self) -> None:
        if self.persisting:
            _call_reset(self._reset)
        self.evict()

    def evict(self) -> None:
        """The write alone (what a CUDA graph can hold: no runtime call)."""
        self.buffer.zero_()


def _persisting_reset() -> Any:
    """``cudaCtxResetPersistingL2Cache`` of cuda-python, where installed, else None (then
    only the buffer's write evicts, which lines an access-policy window set aside
    survive)."""
    try:
        import cuda.bindings.runtime as runtime  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return getattr(runtime, "cudaCtxResetPersistingL2Cache", None)


def _call_reset(reset: Any) -> bool:
    """Call the reset; whether it succeeded (cudaSuccess)."""
    try:
        result = reset()
        error = result[0] if isinstance(result, tuple) else result
        return int(error) == 0
    except Exception:
        return False


def time_call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any], *,
              index: int, warmup: int, repeats: int, min_time: float, max_repeats: int,
              cache: str) -> tuple[list[float], str, list[str], dict[str, Any]]:
    """Samples (seconds per call), the method, notes and the clocks of timing ``fn`` on
    CUDA device *index* (see the module docstring)."""
    import torch  # type: ignore[import-not-found,unused-ignore]

    device = torch.device(f"cuda:{index}")
    notes: list[str] = []

    def call() -> Any:
        return fn(*args, **kwargs)

    with torch.cuda.device(device):
        for _ in range(max(1, warmup)):
            call()
        torch.cuda.synchronize(device)
        try:
            flush: Flush | None = Flush(torch, device)
        except RuntimeError as exc:  # no memory left for the buffer (an OOM is one)
            flush = None
            notes.append(f"the L2 cache was not flushed: no memory for the flush buffer "
                         f"({_first_line(exc)})")
        if flush is not None:
            flush()  # the GPU busy while the host launches the probe: its launch not counted
        single = _event_time(torch, call)
        before = read_clocks(index)
        samples: list[float] | None = None
        method = ""
        if cache == "warm" or single < GRAPH_BELOW:
            calls = graph_calls(single)
            try:
                samples = _graph_samples(torch, [call] * calls, calls=calls, repeats=repeats,
                                         min_time=min_time, max_repeats=max_repeats)
                method = f"cuda-graph of {calls} calls, L2 warm"
                if cache == "cold":
                    notes.append("a call under 2 us is timed as a CUDA graph of several "
                                 "calls: the L2 cache stays warm between them")
            except Exception as exc:  # a call that cannot be captured
                notes.append(f"not capturable as a CUDA graph ({_first_line(exc)}); timed "
                             f"with CUDA events, the host's launch time included")
                torch.cuda.synchronize(device)
        if samples is None:
            cold = flush if cache == "cold" else None
            samples = _event_samples(torch, call, flush=cold, repeats=repeats,
                                     min_time=min_time, max_repeats=max_repeats)
            method = "cuda-events, " + (("L2 flushed" + (" (persisting lines released)"
                                                          if cold.persisting else ""))
                                        if cold is not None else "L2 warm")
            if cold is not None:
                note = _launch_bound(torch, call, cold, sorted(samples)[len(samples) // 2])
                if note:
                    notes.append(note)
        after = read_clocks(index)
    note = throttle_note(before, after)
    if note:
        notes.append(note)
    clocks = {"before": before, "after": after} if before or after else {}
    return samples, method, notes, clocks


def _us(seconds: float) -> str:
    """``428 us``, ``1.41 ms``: a time in the unit that keeps three figures readable."""
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} us"


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _launch_bound(torch: Any, call: Callable[[], Any], flush: Flush, events: float
                  ) -> str | None:
    """The note of a call whose host launches, not its kernels, set its time: a graph of
    (flush, call) pairs less a graph of flushes is under LAUNCH_BOUND of *events*."""
    pairs = max(2, min(50, int(GRAPH_TARGET / max(events, 1e-6))))
    try:
        both = _graph_samples(torch, [flush.evict, call] * pairs, calls=pairs, repeats=3,
                              min_time=0.0, max_repeats=3)
        alone = _graph_samples(torch, [flush.evict] * pairs, calls=pairs, repeats=3,
                               min_time=0.0, max_repeats=3)
    except Exception:  # not capturable: no such note (the events' time stands)
        return None
    graphed = min(both) - min(alone)
    if not 0 < graphed < LAUNCH_BOUND * events:
        return None
    return (f"launch-bound: replayed as a CUDA graph (L2 flushed, no host launches) the "
            f"call takes {_us(graphed)}, timed eagerly {_us(events)}: the host's kernel "
            f"launches set its time; CUDA graphs or torch.compile(mode='reduce-overhead') "
            f"remove the gaps")


def _event_time(torch: Any, call: Callable[[], Any]) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    call()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / 1e3


def _event_samples(torch: Any, call: Callable[[], Any], *, flush: Flush | None, repeats: int,
                   min_time: float, max_repeats: int) -> list[float]:
    samples: list[float] = []
    total = 0.0
    while len(samples) < max_repeats and (len(samples) < repeats or total < min_time):
        batch = max(1, min(repeats, max_repeats - len(samples)))
        events = []
        for _ in range(batch):
            if flush is not None:
                flush()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            events.append((start, end))
        events[-1][1].synchronize()
        for start, end in events:
            samples.append(float(start.elapsed_time(end)) / 1e3)
            total += samples[-1]
    return samples


def _graph_samples(torch: Any, steps: list[Callable[[], Any]], *, calls: int, repeats: int,
                   min_time: float, max_repeats: int) -> list[float]:
    """Seconds per call of replaying *steps* (captured in order) as one CUDA graph."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up on the capture's side stream, as torch asks
        for step in dict.fromkeys(steps):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with _quiet_capture(), torch.cuda.graph(graph):
        for step in steps:
            step()
    graph.replay()
    torch.cuda.synchronize()
    samples: list[float] = []
    total = 0.0
    while len(samples) < max_repeats and (len(samples) < repeats or total < min_time):
        seconds = _event_time(torch, graph.replay) / calls
        samples.append(seconds)
        total += seconds * calls
    return samples


@contextlib.contextmanager
def _quiet_capture() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
