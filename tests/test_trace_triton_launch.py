"""A Triton launch's own figures: ``launch_metadata`` called as Triton calls it, its
figures checked and kept at their own precisions, the autotuner's work left out, and a
profiled launch timed as the whole call (in Triton's interpreter, tests/conftest.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402

import pytest_roofline as rl  # noqa: E402
from pytest_roofline.tracing import TraceError  # noqa: E402

DATA = Path(__file__).parent / "data"
if not triton.knobs.runtime.interpret:
    pytest.skip("Triton kernels run here in interpreter mode only", allow_module_level=True)
sys.path.insert(0, str(DATA))
tk: Any = importlib.import_module("triton_kernels")

CALLS: list[tuple[Any, ...]] = []
STATED: dict[str, Any] = {}


def _stated(grid: Any, kernel: Any, args: dict[str, Any]) -> dict[str, Any]:
    CALLS.append((grid, kernel.name, kernel.num_warps, kernel.num_stages, dict(args)))
    return dict(STATED) or {"flops32": 1.0 * args["n"] * args["REPEAT"]}


@triton.jit(launch_metadata=_stated)
def repeated_add(x_ptr, n, REPEAT: tl.constexpr = 3, BLOCK: tl.constexpr = 1024):
    """x += 1, REPEAT times, in place."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    for _ in tl.static_range(REPEAT):
        x = x + 1.0
    tl.store(x_ptr + offsets, x, mask=mask)


def test_launch_metadata_gets_what_triton_gives_it() -> None:
    """Triton calls ``launch_metadata(grid, metadata, args)``: *grid* as launched, the
    compiled kernel's metadata (``num_warps``, ``num_stages``: 4 and 3 unless the launch
    sets them, the CUDA backend's defaults), every argument with the kernel's defaults."""
    x = torch.zeros(5000)
    CALLS.clear()
    work = rl.Tracer(strict=True)(lambda x: repeated_add[(5,)](x, 5000), x)
    ((grid, name, warps, stages, args),) = CALLS
    assert (grid, name, warps, stages) == ((5,), "repeated_add", 4, 3)
    assert args == {"x_ptr": x, "n": 5000, "REPEAT": 3, "BLOCK": 1024}
    (k,) = work.kernels
    assert (k.flops, k.bytes, k.dtype) == (3 * 5000, 2 * 5000 * 4, "fp32")  # 3 adds each
    CALLS.clear()
    rl.trace(lambda x: repeated_add[lambda meta: (triton.cdiv(5000, meta["BLOCK"]),)](
        x, 5000, REPEAT=2, num_warps=8, num_stages=2), x)
    ((grid, _, warps, stages, args),) = CALLS
    assert (grid, warps, stages, args["REPEAT"]) == ((5,), 8, 2, 2)


@pytest.mark.parametrize(("stated", "error"), [
    ({"flops32": 10**400}, "flops32=1000.*; FLOPs and bytes must be finite numbers >= 0"),
    ({"flops": float("nan")}, "flops=nan"),
    ({"flops16": 1.0, "bytes": -8}, "bytes=-8"),
    ({"flops16": 1e308, "flops32": 1e308}, "FLOPs add up past the largest float"),
])
def test_figures_no_roof_can_price_are_refused_with_the_kernels_name(
        stated: dict[str, Any], error: str) -> None:
    STATED.clear()
    STATED.update(stated)
    try:
        with pytest.raises(TraceError, match=f"^Triton kernel repeated_add: .*{error}") as info:
            rl.trace(lambda x: repeated_add[(1,)](x, 8), torch.zeros(8))
    finally:
        STATED.clear()
    assert len(str(info.value)) < 200 and "\n" not in str(info.value)


def test_a_formula_past_the_largest_float_is_refused_by_name() -> None:
    with pytest.raises(TraceError, match="registered for 'repeated_add' returned 1000.* FLOPs"):
        rl.Tracer(formulas={"repeated_add": lambda *a, **k: 10**400})(
            lambda x: repeated_add[(1,)](x, 8), torch.zeros(8))


def test_each_flops_key_keeps_its_own_precision() -> None:
    """``flops8`` at fp8, ``flops16`` at 16-bit, ``flops`` at the launch's own (its fp32
    tensor): one kernel each, the largest carrying the launch's bytes, the others in its
    epilogue (the same launch)."""
    STATED.update({"flops8": 100.0, "flops16": 300.0, "flops": 7.0, "bytes": 64})
    try:
        work = rl.trace(lambda x: repeated_add[(1,)](x, 8), torch.zeros(8))
    finally:
        STATED.clear()
    assert [(k.name, k.flops, k.bytes, k.unit, k.dtype, k.epilogue_of) for k in work.kernels] == [
        ("repeated_add", 300.0, 64.0, "matrix", "bf16", None),
        ("repeated_add.fp8", 100.0, 0.0, "matrix", "fp8", "repeated_add"),
        ("repeated_add.fp32", 7.0, 0.0, "matrix", "fp32", "repeated_add")]
    assert work.flops == 407.0 and work.bytes == 64.0


TRIALS: list[int] = []


def _bench(kernel_call: Any, quantiles: Any) -> list[float]:
    """A benchmark as Triton's runs one: the trial launched (twice), its time returned
    (the first configuration's the faster, so it is chosen)."""
    kernel_call()
    kernel_call()
    TRIALS.append(1)
    return [float(len(TRIALS))] * 3


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})],
                 key=["n"], restore_value=["x_ptr"], reset_to_zero=["total_ptr"],
                 do_bench=_bench)
@triton.jit
def tuned_double(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    """x *= 2 in place; the tuner restores x after each trial and zeroes total."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, x * 2.0, mask=mask)


def test_the_autotuners_copies_and_trials_are_not_the_kernels_work() -> None:
    """100,000 fp32 read and written in place: 800,000 B and 100,000 multiplies, whatever
    the tuner clones, zeroes, copies back and tries on the way."""
    n = 100_000
    x, total = torch.ones(n), torch.zeros(1)

    def launch() -> None:
        tuned_double[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, total, n)

    TRIALS.clear()
    work = rl.Tracer(strict=True)(launch)
    assert len(TRIALS) == 2  # both configurations tried
    assert [(k.name, k.flops, k.bytes) for k in work.kernels] == [
        ("tuned_double", n, 2 * n * 4)]
    assert torch.equal(x, torch.full((n,), 2.0))  # trials restored: doubled once
    work = rl.trace(launch)  # tuned already: the chosen configuration, no trial
    assert len(TRIALS) == 2
    assert [(k.name, k.flops, k.bytes) for k in work.kernels] == [
        ("tuned_double", n, 2 * n * 4)]


def test_a_profiled_launch_in_a_traced_test_is_timed_as_the_whole_call(
        pytester: pytest.Pytester) -> None:
    """Inside a ``trace=True`` test, ``profile()``'s row of a launch is the launch's call
    (the interpreter's copies inside it, never rows of their own), timed as one: at least
    the time the call takes, here several milliseconds, not the microseconds of one copy."""
    from test_plugin import ISOLATE, plugin_args

    pytester.makepyfile(test_profiled="""
import time
import pytest
import torch
import pytest_roofline as rl
import triton_kernels as tk
from pytest_roofline.hardware import Hardware

ROOMY = Hardware(name="roomy-cpu", memory_bandwidth=1e12, memory_capacity=16e9,
                 matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")

@pytest.mark.roofline(hw="h100", trace=True)
def test_profiled():
    x, y = torch.randn(98432), torch.randn(98432)
    start = time.perf_counter()
    tk.add(x, y)
    call = time.perf_counter() - start
    profile = rl.Profiler(hw=ROOMY, repeats=2)(tk.add, x, y)
    rows = {r.op: r for r in profile.rows}
    assert set(rows) == {"triton::add_kernel", "aten::empty_like"}, set(rows)
    launch = rows["triton::add_kernel"]
    assert (launch.count, launch.flops, launch.bytes) == (1, 98432, 3 * 98432 * 4)
    assert launch.measured > call / 4, (launch.measured, call)
""")
    result = pytester.runpytest_inprocess(*plugin_args(), *ISOLATE)
    result.assert_outcomes(passed=1)


def test_the_autotuners_trials_are_not_replayed() -> None:
    """On meta tensors the chosen configuration's launch is replayed, once; the trials of
    both configurations are neither recorded nor replayed (a replay each before)."""
    from pytest_roofline.tracing import _triton_replay

    n = 50_000  # a tuning key of its own: the tuner tries both configurations again
    x, total = torch.empty(n, device="meta"), torch.empty(1, device="meta")
    TRIALS.clear()
    _triton_replay._CACHE.clear()
    work = rl.trace(lambda x: tuned_double[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
        x, total, n), x)
    assert len(TRIALS) == 2 and len(_triton_replay._CACHE) == 1
    assert [(k.name, k.flops, k.bytes) for k in work.kernels] == [
        ("tuned_double", n, 2 * n * 4)]
    assert dict(work.assumed) == {"Triton tuned_double: counted by replay": 1}
