"""Triton launches traced as kernels, on a CPU in Triton's interpreter mode.

The kernels are tests/data/triton_kernels.py (Triton's tutorials' vector add, fused softmax
and grouped matmul). Hand counts: the matmul of (128 x 256) by (256 x 192) in fp16 is
2 · 128 · 192 · 256 = 12,582,912 FLOPs, and its three tensors hold
(128·256 + 256·192 + 128·192) · 2 B = 212,992 B, each crossing the kernel's boundary once.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

import pytest
from wrapped import matcher

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import pytest_roofline as rl  # noqa: E402
from pytest_roofline.tracing import TraceError, _triton  # noqa: E402

DATA = Path(__file__).parent / "data"


def _kernels() -> object:
    """tests/data/triton_kernels.py, in interpreter mode (tests/conftest.py sets
    TRITON_INTERPRET before triton is imported)."""
    if not triton.knobs.runtime.interpret:
        pytest.skip("Triton kernels run here in interpreter mode only (TRITON_INTERPRET=1 "
                    "before triton is imported)", allow_module_level=True)
    sys.path.insert(0, str(DATA))  # for pytester's test files, too
    return importlib.import_module("triton_kernels")


tk: object = _kernels()

MATMUL_FLOPS = 2 * 128 * 192 * 256  # 12,582,912
MATMUL_BYTES = (128 * 256 + 256 * 192 + 128 * 192) * 2  # 212,992


@pytest.fixture
def ab() -> tuple[object, object]:
    gen = torch.Generator().manual_seed(0)
    return (torch.randn(128, 256, dtype=torch.float16, generator=gen),
            torch.randn(256, 192, dtype=torch.float16, generator=gen))


def _matmul_formula(a, b, c, M, N, K, *rest, **meta):  # type: ignore[no-untyped-def]
    return rl.ops.matmul(M, N, K, dtype="fp16")


def test_triton_api_the_tracer_relies_on() -> None:
    """The one place Triton's launch machinery is used below its public surface: when it
    changes, this fails first."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    for cls in (JITFunction, InterpretedFunction):
        params = inspect.signature(cls.run).parameters
        assert "grid" in params and "warmup" in params, cls
        assert any(p.kind is p.VAR_POSITIONAL for p in params.values()), cls
    assert callable(triton.knobs.runtime.launch_enter_hook.add)
    assert tk.matmul_kernel.arg_names[:3] == ["a_ptr", "b_ptr", "c_ptr"]  # type: ignore[attr-defined]
    assert tk.stated_matmul_kernel.kwargs["launch_metadata"] is not None  # type: ignore[attr-defined]


def test_the_tutorials_are_counted_with_no_annotation(ab) -> None:  # type: ignore[no-untyped-def]
    """In the interpreter a launch with no formula is counted as it runs."""
    a, b = ab
    work = rl.Tracer(strict=True)(tk.matmul, a, b)  # type: ignore[attr-defined]
    assert [k.name for k in work.kernels] == ["matmul_kernel"]  # the interpreter's copies: no
    (k,) = work.kernels
    assert (k.flops, k.bytes, k.unit) == (MATMUL_FLOPS, MATMUL_BYTES, "matrix")
    assert not work.unknown
    assert dict(work.assumed) == {"Triton matmul_kernel: counted in the interpreter": 1}
    # tiles that overhang the matrix: (100 x 200) by (200 x 150) in 64-wide tiles computes
    # 128 x 192 outputs over K padded to 256; the padding is not the product's work
    a2, b2 = a[:100, :200].contiguous(), b[:200, :150].contiguous()
    (k,) = rl.trace(tk.matmul, a2, b2).kernels  # type: ignore[attr-defined]
    assert k.flops == 2 * 100 * 150 * 200
    assert k.bytes == (100 * 200 + 200 * 150 + 100 * 150) * 2
    # vector add: one add an element; x and y read, the output written (masked lanes of
    # the last block of 1024 left out: 98,432 = 96 · 1024 + 128)
    x, y = torch.randn(98432), torch.randn(98432)
    (k,) = rl.trace(tk.add, x, y).kernels  # type: ignore[attr-defined]
    assert (k.flops, k.bytes, k.unit) == (98432, 3 * 98432 * 4, "vector")
    # softmax of 37 rows of 781 in blocks of 1024: max 780, subtract 781, exp 781, sum
    # 780, divide 781 = 5 · 781 - 2 a row; read and written once
    (k,) = rl.trace(tk.softmax, torch.randn(37, 781)).kernels  # type: ignore[attr-defined]
    assert (k.flops, k.bytes) == (37 * (5 * 781 - 2), 2 * 37 * 781 * 4)


def test_where_no_interpreter_runs_a_launch_is_unknown_by_name(ab) -> None:  # type: ignore[no-untyped-def]
    """A launch no interpreter ran, with neither a formula nor launch_metadata, whose replay
    fails (here: recorded without its strides, which the kernel needs) is unknown by name,
    never 0 FLOPs without a word, and says why; its bytes are its tensors, each read
    and/or written as its source says."""
    from pytest_roofline.tracing._torch import Recorder

    a, b = ab
    c = torch.empty(128, 192, dtype=torch.float16)
    recorder = Recorder({}, None)
    launches = _triton.Launches(recorder)
    launches.record(tk.matmul_kernel, (a, b, c, 128, 192, 256), {}, (6,))  # type: ignore[attr-defined]
    (k,) = recorder.kernels
    assert (k.name, k.flops, k.bytes) == ("matmul_kernel", 0.0, MATMUL_BYTES)
    assert recorder.unknown == {"matmul_kernel": 1}
    (why,) = recorder.assumed
    assert why.startswith("Triton matmul_kernel: not counted, the replay failed: TypeError")
    with pytest.raises(TraceError, match="matmul_kernel x1.*register_op\\('matmul_kernel'"):
        rl.Tracer(strict=True).finish(recorder.result(footprint=0.0), name="t")
    x = torch.ones(1000)
    launches.record(tk.scale_kernel, (x, 1000, 2), {}, (1,))  # type: ignore[attr-defined]
    assert recorder.kernels[-1].bytes == 2 * 1000 * 4  # loaded and stored: both ways


def test_an_in_place_kernel_moves_its_tensor_both_ways() -> None:
    x = torch.ones(5000)
    (k,) = rl.trace(tk.scale_, x).kernels  # type: ignore[attr-defined]
    assert (k.flops, k.bytes) == (5000, 2 * 5000 * 4)  # read and written: 40,000 B
    assert torch.equal(x, torch.full((5000,), 2.0))  # the kernel ran
    from pytest_roofline.tracing._triton_source import directions

    reads, writes = directions(tk.scale_kernel.fn)  # type: ignore[attr-defined,misc]
    assert "x_ptr" in reads and "x_ptr" in writes
    reads, writes = directions(tk.matmul_kernel.fn)  # type: ignore[attr-defined,misc]
    assert {"a_ptr", "b_ptr"} <= reads and "c_ptr" not in reads
    assert "c_ptr" in writes and not {"a_ptr", "b_ptr"} & writes


def test_register_op_may_give_flops_alone(ab) -> None:  # type: ignore[no-untyped-def]
    a, b = ab
    rl.register_op("matmul_kernel", lambda a, b, c, M, N, K, *rest, **meta: 2.0 * M * N * K)
    try:
        work = rl.Tracer(strict=True)(tk.matmul, a, b)  # type: ignore[attr-defined]
    finally:
        rl.unregister_op("matmul_kernel")
    (k,) = work.kernels
    assert (k.flops, k.bytes) == (MATMUL_FLOPS, MATMUL_BYTES)  # the bytes: the launch's
    assert dict(work.assumed) == {"Triton matmul_kernel: by its formula": 1}
    with pytest.raises(TraceError, match="returned -1.0 FLOPs"):
        rl.Tracer(formulas={"matmul_kernel": lambda *a, **k: -1.0})(tk.matmul, a, b)  # type: ignore[attr-defined]


def test_a_tracers_own_formulas_are_honoured_for_launches(ab) -> None:  # type: ignore[no-untyped-def]
    a, b = ab
    work = rl.Tracer(strict=True, formulas={"matmul_kernel": _matmul_formula})(
        tk.matmul, a, b)  # type: ignore[attr-defined]
    assert work.flops == MATMUL_FLOPS
    assert dict(work.assumed) == {"Triton matmul_kernel: by its formula": 1}

    def broken(*args: object, **kwargs: object) -> object:
        raise ValueError("no")

    with pytest.raises(TraceError, match="matmul_kernel.*ValueError: no"):
        rl.Tracer(formulas={"matmul_kernel": broken})(tk.matmul, a, b)  # type: ignore[attr-defined]


def test_an_aten_op_overridden_by_a_triton_kernel_counts_once() -> None:
    """As a library replacing aten ops with its Triton kernels does: the aten op counts,
    by its own formula; the kernel it launches is not counted again."""
    x, y = torch.randn(4096), torch.randn(4096)
    lib = torch.library.Library("aten", "IMPL")
    try:
        lib.impl("add.Tensor", lambda a, b, *, alpha=1: tk.add(a, b), "CPU")  # type: ignore[attr-defined]
        work = rl.Tracer(strict=True)(torch.add, x, y)
        out = torch.add(x, y)
    finally:
        lib._destroy()
    torch.testing.assert_close(out, x + y)
    (k,) = work.kernels
    assert (k.name, k.flops, k.bytes) == ("add", 4096, 3 * 4096 * 4)  # not 2 x 49,152 B
    assert not work.assumed


def test_like_factories_write_their_output_only() -> None:
    x = torch.randn(4096)
    for factory in (torch.zeros_like, torch.ones_like, torch.randn_like,
                    lambda t: torch.full_like(t, 2.0)):
        (k,) = rl.trace(factory, x).kernels
        assert k.bytes == 4096 * 4, k.name  # the template is not read


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_wrap_triton_is_one_launch(device: str) -> None:
    def wrapped_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = out.numel()
        torch.library.wrap_triton(tk.add_kernel)[(triton.cdiv(n, 1024),)](  # type: ignore[attr-defined]
            x, y, out, n, BLOCK_SIZE=1024)
        return out

    x, y = torch.randn(4096, device=device), torch.randn(4096, device=device)
    work = rl.trace(wrapped_add, x, y)
    (k,) = work.kernels
    assert (k.name, k.bytes) == ("add_kernel", 3 * 4096 * 4)
    assert k.flops == 4096 and not work.unknown  # run, or on meta replayed: counted
    how = "counted in the interpreter" if device == "cpu" else "counted by replay"
    assert dict(work.assumed) == {f"Triton add_kernel: {how}": 1}


def test_register_op_makes_the_tutorial_matmul_exact(ab) -> None:  # type: ignore[no-untyped-def]
    a, b = ab
    rl.register_op("matmul_kernel", _matmul_formula)
    try:
        work = rl.Tracer(strict=True)(tk.matmul, a, b)  # type: ignore[attr-defined]
    finally:
        rl.unregister_op("matmul_kernel")
    assert work.flops == MATMUL_FLOPS
    assert not work.unknown and len(work.kernels) == 1
    # the kernel still ran: the interpreter computed the product
    out = tk.matmul(a, b)  # type: ignore[attr-defined]
    torch.testing.assert_close(out.float(), a.float() @ b.float(), atol=0.1, rtol=0.01)


def test_launch_metadata_states_flops_and_bytes(ab) -> None:  # type: ignore[no-untyped-def]
    a, b = ab
    c = torch.empty(128, 192, dtype=torch.float16)
    kernel = tk.stated_matmul_kernel  # type: ignore[attr-defined]

    def launch() -> None:
        kernel[(6,)](a, b, c, 128, 192, 256, a.stride(0), a.stride(1), b.stride(0),
                     b.stride(1), c.stride(0), c.stride(1), BLOCK_SIZE_M=64, BLOCK_SIZE_N=64,
                     BLOCK_SIZE_K=64, GROUP_SIZE_M=8)

    work = rl.Tracer(strict=True)(launch)
    (k,) = work.kernels
    assert (k.flops, k.bytes, k.unit, k.dtype) == (MATMUL_FLOPS, MATMUL_BYTES, "matrix", "bf16")


def test_a_tensor_passed_twice_is_read_once() -> None:
    x = torch.randn(98432)
    same = rl.trace(tk.add, x, x)  # type: ignore[attr-defined]
    assert same.bytes == 2 * 98432 * 4  # the same addresses, loaded by two loads
    rows = torch.randn(37, 781)
    torch.testing.assert_close(tk.softmax(rows), rows.softmax(-1))  # type: ignore[attr-defined]


def test_launches_inside_a_module_carry_its_path() -> None:
    class Adder(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return tk.add(x, x)  # type: ignore[attr-defined,no-any-return]

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), Adder())
    work = rl.trace(model, torch.randn(4, 8))
    assert [k.name for k in work.kernels][-1] == "1.add_kernel"


def test_a_custom_op_that_launches_kernels_is_its_launches(ab) -> None:  # type: ignore[no-untyped-def]
    a, b = ab

    @torch.library.custom_op("rltest::tri_mm", mutates_args=())
    def tri_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return tk.matmul(a, b)  # type: ignore[attr-defined,no-any-return]

    work = rl.trace(tri_mm, a, b)
    assert [k.name for k in work.kernels] == ["matmul_kernel"]
    assert work.flops == MATMUL_FLOPS and not work.unknown  # its launch, counted
    rl.register_op("rltest::tri_mm", _matmul_formula_op)
    try:  # a formula for the op counts the op; its launches are not counted again
        work = rl.Tracer(strict=True)(tri_mm, a, b)
    finally:
        rl.unregister_op("rltest::tri_mm")
    assert work.flops == MATMUL_FLOPS and len(work.kernels) == 1
    assert work.kernels[0].name.startswith("rltest::tri_mm")
    # a tracer's own formula for the op, the same way (a FLOPs-only one: the op's bytes)
    work = rl.Tracer(strict=True, formulas={"rltest::tri_mm": lambda a, b: 1.0})(tri_mm, a, b)
    assert [(k.name, k.flops) for k in work.kernels] == [("rltest::tri_mm", 1.0)]
    assert work.bytes == MATMUL_BYTES


def _matmul_formula_op(a, b):  # type: ignore[no-untyped-def]
    return rl.ops.matmul(a.shape[0], b.shape[1], a.shape[1], dtype="fp16")


def test_the_launch_hook_path_reads_the_compiled_kernels_metadata() -> None:
    """On a GPU Triton's launch hook hands over the metadata (a LazyDict with ``get()``):
    the launch is priced from it, its bytes from the tensors when it states none."""

    class Lazy:
        def get(self) -> dict[str, object]:
            return {"name": "k", "flops32": 1000.0}

    from pytest_roofline.tracing._torch import Recorder

    recorder = Recorder({}, None)
    launches = _triton.Launches(recorder)
    launches._hook(Lazy())
    launches.record(tk.add_kernel, (torch.ones(10), torch.ones(10), torch.ones(10), 10), {},  # type: ignore[attr-defined]
                    (1,))
    (k,) = recorder.kernels
    assert (k.name, k.flops, k.bytes, k.dtype) == ("add_kernel", 1000.0, 120.0, "fp32")


def test_nothing_is_patched_outside_a_trace() -> None:
    from triton.runtime.interpreter import InterpretedFunction

    before = InterpretedFunction.run
    rl.trace(tk.add, torch.ones(4), torch.ones(4))  # type: ignore[attr-defined]
    assert InterpretedFunction.run is before
    assert _triton._hook_count() == 0


def test_a_trace_true_test_counts_its_launches_and_strict_refuses_the_unknown(
        pytester: pytest.Pytester) -> None:
    from test_plugin import ISOLATE, TOY_SPEC, plugin_args

    pytester.makefile(".yaml", toychip=TOY_SPEC)
    pytester.makeini("[pytest]\nroofline_specs = toychip.yaml\n")
    pytester.makepyfile(test_kernel="""
import pytest
import torch
import pytest_roofline as rl
import triton
import triton.language as tl
import triton_kernels as tk

@triton.jit
def through_pointers(ptrs, out):  # a pointer read from memory: no stand-in replays it
    p = tl.load(ptrs).to(tl.pointer_type(tl.float32))
    tl.store(out, tl.load(p))

def formula(a, b, c, M, N, K, *rest, **meta):
    return rl.ops.matmul(M, N, K, dtype="fp16")

A = torch.randn(128, 256, dtype=torch.float16)
B = torch.randn(256, 192, dtype=torch.float16)

@pytest.mark.roofline(hw="h100", trace=True)
def test_unknown():
    tk.matmul(A, B)

@pytest.mark.roofline(hw="toychip", trace=True, strict=True)
def test_strict():
    meta = torch.empty(1, dtype=torch.int64, device="meta")
    through_pointers[(1,)](meta, torch.empty(1, device="meta"))  # unknown

@pytest.mark.roofline(hw="h100", trace=True, strict=True)
def test_counted():
    rl.register_op("matmul_kernel", formula)
    try:
        tk.matmul(A, B)
    finally:
        rl.unregister_op("matmul_kernel")
""")
    result = pytester.runpytest_inprocess(*plugin_args(), *ISOLATE, "--roofline-json=r.json")
    result.assert_outcomes(passed=2, failed=1)
    matcher(result).fnmatch_lines(
        ["*strict=True*through_pointers x1*register_op('through_pointers'*"])
    import json

    records = {r["nodeid"].split("::")[1]: r for r in json.loads(
        (pytester.path / "r.json").read_text())["results"]}
    assert not records["test_unknown"].get("unknown")  # counted in the interpreter
    assert records["test_unknown"]["flops"] == MATMUL_FLOPS
    assert records["test_counted"]["flops"] == MATMUL_FLOPS
    assert records["test_counted"]["bytes"] == MATMUL_BYTES



def test_an_autotuned_launch_keeps_the_chosen_configuration_only() -> None:
    """``triton.autotune`` benchmarks its configurations by launching each (on a GPU; the
    interpreter has no driver to time them with): only the launch with the chosen one is
    the program's work."""
    from pytest_roofline.tracing._torch import Recorder

    recorder = Recorder({}, None)
    launches = _triton.Launches(recorder)
    x = torch.ones(10)
    first = len(launches._log)
    for _ in range(3):  # two benchmarked configurations, then the chosen one
        launches.record(tk.add_kernel, (x, x, x, 10), {}, (1,))  # type: ignore[attr-defined]
    launches.keep_last(first)
    assert [k.name for k in recorder.kernels] == ["add_kernel"]
    assert recorder.unknown == {"add_kernel": 1} and launches.count == 1
    from triton.runtime.autotuner import Autotuner

    assert "run" in Autotuner.__dict__  # the method the watcher wraps


def test_metadata_without_flops_from_the_hook_falls_back_to_the_kernels_own() -> None:
    # A Triton whose launch hook hands over metadata without the kernel's launch_metadata
    # keys (name, stream, ... only) must not lose the FLOPs the kernel states: they are
    # computed from its launch_metadata function, as in interpreter mode.
    from types import SimpleNamespace

    from pytest_roofline.tracing._triton import Launches, _flops_stated

    assert _flops_stated({"name": "k", "num_warps": 4}) is None
    assert _flops_stated(None) is None
    assert _flops_stated({"flops16": 10.0, "flops32": 2.0, "bytes": 8}) == (
        {"bf16": 10.0, "fp32": 2.0}, 8.0)  # each key its own precision

    def metadata(grid: Any, meta: Any, args: dict[str, Any]) -> dict[str, float]:
        return {"flops16": 2.0 * args["n"], "bytes": 4.0 * args["n"]}

    kernel = SimpleNamespace(launch_metadata=metadata, fn=SimpleNamespace(__name__="k"))
    launches = Launches(recorder=None)
    launches._metadata = {"name": "k", "stream": 7}  # what the hook held
    assert launches._stated(kernel, {"n": 5}, (1,), "k") == ({"bf16": 10.0}, 20.0)
    launches._metadata = None
    assert launches._stated(SimpleNamespace(fn=None), {"n": 5}, (1,), "k") is None


def test_profile_in_the_interpreter_prices_the_launch_not_the_interpreter() -> None:
    """A Triton launch is a row of its own, priced as counted; the interpreter's copies of
    its arguments are inside it, never rows; an allocation is a row that is not judged."""
    from pytest_roofline.hardware import Hardware

    roomy = Hardware(name="roomy-cpu", memory_bandwidth=1e12, memory_capacity=16e9,
                     matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")
    x, y = torch.randn(98432), torch.randn(98432)
    profile = rl.Profiler(hw=roomy, repeats=2)(tk.add, x, y)  # type: ignore[attr-defined]
    rows = {r.op: r for r in profile.rows}
    launch = rows["triton::add_kernel"]
    assert launch.shapes == "98432f32"  # its tensors' distinct shapes
    assert launch.label == "add_kernel(98432f32)"
    assert (launch.count, launch.flops, launch.bytes) == (1, 98432, 3 * 98432 * 4)
    assert launch.efficiency is not None and 0 < launch.efficiency <= 1
    assert "aten::copy_" not in rows and "aten::set_" not in {u.name for u in profile.unpriced}
    allocation = rows["aten::empty_like"]  # the wrapper's output: no work, not a kernel
    assert allocation.efficiency is None and not allocation.faster
    assert not any("empty_like" in line for line in profile.check(0.99))


def test_masked_lanes_follow_a_transpose_into_the_dot() -> None:
    # C = A·Bᵀ of (40 x 50) by (30 x 50)ᵀ in 32 x 16 x 32 tiles: every tile overhangs in
    # M, N or K; the padding is masked at the loads, B's mask transposed with B
    a, b = torch.randn(40, 50), torch.randn(30, 50)
    (k,) = rl.trace(tk.matmul_bt, a, b).kernels  # type: ignore[attr-defined]
    assert k.flops == 2 * 40 * 30 * 50
    assert k.bytes == (40 * 50 + 30 * 50 + 40 * 30) * 4
    torch.testing.assert_close(tk.matmul_bt(a, b), a @ b.T, atol=1e-4, rtol=1e-4)  # type: ignore[attr-defined]
