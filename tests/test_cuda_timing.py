"""GPU timing (pytest_roofline/measuring/cuda_timing.py) on the CPU: the choice of method,
the L2 flush, the launch-bound and throttle notes, against a simulated device whose clock
advances by each kernel's duration (events read it; a CUDA graph replays what it captured).
The same code ran on an H100 and an H200 (docs/measure.md, the GPU acceptance run)."""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_roofline.measuring import MeasureError, Timer
from pytest_roofline.measuring import cuda_timing as ct
from pytest_roofline.measuring.timing import Measurement


class FakeCuda:
    """A device clock, events on it, and graph capture: enough of torch.cuda for timing."""

    def __init__(self) -> None:
        self.now = 0.0
        self.capturing: list[Callable[[], None]] | None = None
        self.flushes = 0

    def launch(self, seconds: float, name: str = "kernel") -> None:
        def run() -> None:
            self.now += seconds
            if name == "flush":
                self.flushes += 1

        if self.capturing is not None:
            self.capturing.append(run)
        else:
            run()

    # torch.cuda's surface --------------------------------------------------------------
    def torch(self) -> types.ModuleType:
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = 0.0

            def record(self) -> None:
                if fake.capturing is not None:
                    raise RuntimeError("an event recorded while capturing")
                self.t = fake.now

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return (end.t - self.t) * 1e3

        class Graph:
            def __init__(self) -> None:
                self.steps: list[Callable[[], None]] = []

            def replay(self) -> None:
                for step in self.steps:
                    step()

        @contextlib.contextmanager
        def graph(g: Graph) -> Iterator[None]:
            fake.capturing = []
            try:
                yield
                g.steps = fake.capturing
            finally:
                fake.capturing = None

        class Stream:
            def wait_stream(self, other: Any) -> None:
                pass

        class Buffer:
            def zero_(self) -> None:
                fake.launch(30e-6, "flush")

        cuda = types.SimpleNamespace(
            Event=Event, CUDAGraph=Graph, graph=graph, Stream=Stream,
            current_stream=lambda *a: Stream(),
            stream=lambda s: contextlib.nullcontext(),
            device=lambda d: contextlib.nullcontext(),
            synchronize=lambda *a: None, is_initialized=lambda: True,
            get_device_properties=lambda d: types.SimpleNamespace(L2_cache_size=50 << 20))
        module = types.ModuleType("torch")
        module.cuda = cuda  # type: ignore[attr-defined]
        module.device = lambda name: name  # type: ignore[attr-defined]
        module.uint8 = "uint8"  # type: ignore[attr-defined]
        module.empty = lambda *a, **k: Buffer()  # type: ignore[attr-defined]
        return module


class OnGpu:
    device = types.SimpleNamespace(type="cuda", index=0)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeCuda:
    fake = FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", fake.torch())
    monkeypatch.setattr(ct, "read_clocks", lambda index: None)
    monkeypatch.setattr(ct, "_persisting_reset", lambda: None)
    return fake


def test_a_cold_call_is_timed_with_events_after_an_l2_flush(gpu: FakeCuda) -> None:
    m = Timer(repeats=5, min_time=0)(lambda x: gpu.launch(50e-6), OnGpu())
    assert m.method == "cuda-events, L2 flushed"
    assert m.time == pytest.approx(50e-6)  # the flush before each call is not timed
    assert gpu.flushes >= m.repeats
    assert m.here and m.parallelism is None and not m.notes


def test_a_warm_call_is_timed_as_a_cuda_graph(gpu: FakeCuda) -> None:
    m = Timer(repeats=5, min_time=0, cache="warm")(lambda x: gpu.launch(5e-6), OnGpu())
    assert m.method == f"cuda-graph of {int(ct.GRAPH_TARGET / 5e-6)} calls, L2 warm"
    assert m.time == pytest.approx(5e-6)
    assert gpu.flushes == 1  # only the probe's


def test_a_cold_call_under_2_us_is_a_graph_and_says_its_l2_was_warm(gpu: FakeCuda) -> None:
    m = Timer(repeats=3, min_time=0)(lambda x: gpu.launch(1e-6), OnGpu())
    assert m.method is not None and m.method.startswith("cuda-graph")
    assert m.time == pytest.approx(1e-6)
    assert any("L2 cache stays warm" in note for note in m.notes)


def test_a_call_that_cannot_be_captured_falls_back_to_events(gpu: FakeCuda) -> None:
    def syncs(x: Any) -> None:
        if gpu.capturing is not None:
            raise RuntimeError("operation not permitted when stream is capturing")
        gpu.launch(1e-6)

    m = Timer(repeats=3, min_time=0, cache="warm")(syncs, OnGpu())
    assert m.method == "cuda-events, L2 warm"
    assert any(n.startswith("not capturable as a CUDA graph (RuntimeError: operation not "
                            "permitted") for n in m.notes)


def test_a_launch_bound_call_is_named_with_both_times(gpu: FakeCuda) -> None:
    # eagerly the GPU idles 70 us between the call's kernels while the host launches them;
    # replayed as a graph the kernels run back to back in 30 us
    def layer(x: Any) -> None:
        if gpu.capturing is None:
            gpu.now += 70e-6  # the host's launch gaps
        gpu.launch(30e-6)

    m = Timer(repeats=5, min_time=0)(layer, OnGpu())
    assert m.time == pytest.approx(100e-6)
    (note,) = m.notes
    assert note.startswith("launch-bound: replayed as a CUDA graph (L2 flushed, no host "
                           "launches) the call takes 30 us, timed eagerly 100 us")
    assert "torch.compile(mode='reduce-overhead')" in note


def test_min_time_and_max_repeats_hold_on_the_gpu(gpu: FakeCuda) -> None:
    m = Timer(repeats=2, min_time=1e-3, max_repeats=1000)(lambda x: gpu.launch(100e-6),
                                                          OnGpu())
    assert m.repeats * 100e-6 >= 1e-3 - 1e-12
    m = Timer(repeats=2, min_time=10.0, max_repeats=7)(lambda x: gpu.launch(100e-6),
                                                       OnGpu())
    assert m.repeats == 7


def test_the_gpu_figures_reach_the_report(gpu: FakeCuda, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    clocks = {"sm_mhz": 1500, "sm_max_mhz": 1980, "memory_mhz": 3201, "temperature_c": 60,
              "throttle": ["power cap (software)"]}
    monkeypatch.setattr(ct, "read_clocks", lambda index: dict(clocks))
    m = Timer(repeats=3, min_time=0)(lambda x: gpu.launch(20e-6), OnGpu())
    record = m.to_dict()
    assert record["method"] == "cuda-events, L2 flushed"
    assert record["clocks"]["after"]["sm_mhz"] == 1500
    assert any(n.startswith("the GPU throttled: SM clock 1500 MHz of 1980 MHz")
               for n in record["notes"])


def test_cache_must_be_cold_or_warm() -> None:
    with pytest.raises(MeasureError, match=r"cache='hot' is not a cache state; allowed: "
                                           r"'cold'.*or 'warm'"):
        Timer(cache="hot")


def test_a_cpu_call_keeps_the_cpu_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    def never(*a: Any, **k: Any) -> Any:
        raise AssertionError("a CPU call went to the GPU timer")

    monkeypatch.setattr(ct, "time_call", never)
    m = Timer(repeats=2, min_time=0)(torch.mm, torch.ones(4, 4), torch.ones(4, 4))
    assert isinstance(m, Measurement) and m.method is None


@pytest.mark.parametrize(("before", "after", "expected"), [
    (None, None, None),
    ({"sm_mhz": 1980}, {"sm_mhz": 1980, "sm_max_mhz": 1980, "throttle": []}, None),
    (None, {"sm_mhz": 1800, "sm_max_mhz": 1980, "throttle": []}, None),  # 91%: not below 90%
    ({"sm_mhz": 1980}, {"sm_mhz": 1700, "sm_max_mhz": 1980, "throttle": []},
     "the GPU throttled: SM clock 1700 MHz of 1980 MHz after the timed calls (1980 MHz "
     "before); its time is not the chip's full speed"),
    (None, {"sm_mhz": 1980, "sm_max_mhz": 1980, "throttle": ["thermal slowdown (hardware)"]},
     "the GPU throttled: SM clock 1980 MHz of 1980 MHz after the timed calls; NVML reports "
     "thermal slowdown (hardware); its time is not the chip's full speed"),
])
def test_throttle_note(before: Any, after: Any, expected: str | None) -> None:
    assert ct.throttle_note(before, after) == expected


@pytest.mark.parametrize(("single", "calls"), [
    (0.0, ct.GRAPH_MAX_CALLS), (1e-7, ct.GRAPH_MAX_CALLS), (5e-6, 200), (1e-3, 2), (1.0, 2),
])
def test_graph_calls(single: float, calls: int) -> None:
    assert ct.graph_calls(single) == calls


def test_cuda_index_looks_into_lists_and_modules() -> None:
    class Module:
        def parameters(self) -> Iterator[Any]:
            yield types.SimpleNamespace(device=types.SimpleNamespace(type="cuda", index=3))

    cpu = types.SimpleNamespace(device=types.SimpleNamespace(type="cpu", index=None))
    assert ct.cuda_index((cpu,), {}) is None
    assert ct.cuda_index((cpu, [cpu, OnGpu()]), {}) == 0
    assert ct.cuda_index((), {"model": Module()}) == 3
    assert ct.cuda_index((1, "x", None), {}) is None


def test_read_clocks_without_nvml_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails as when not installed
    assert ct.read_clocks(0) is None


def test_no_memory_for_the_flush_buffer_is_said(gpu: FakeCuda, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    # a call that fills the GPU leaves no room for twice the L2: timed unflushed, and said
    import torch as fake_torch

    def full(*a: Any, **k: Any) -> Any:
        raise RuntimeError("CUDA out of memory. Tried to allocate 120.00 MiB")

    monkeypatch.setattr(fake_torch, "empty", full)
    m = Timer(repeats=3, min_time=0)(lambda x: gpu.launch(50e-6), OnGpu())
    assert m.method == "cuda-events, L2 warm"
    assert m.notes[0].startswith("the L2 cache was not flushed: no memory for the flush "
                                 "buffer (RuntimeError: CUDA out of memory")
