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


def test_a_launch_without_a_formula_is_one_unknown_kernel_never_zero_flops(ab) -> None:  # type: ignore[no-untyped-def]
    a, b = ab
    work = rl.trace(tk.matmul, a, b)  # type: ignore[attr-defined]
    assert [k.name for k in work.kernels] == ["matmul_kernel"]  # the interpreter's copies: no
    assert dict(work.unknown) == {"matmul_kernel": 1}
    assert work.bytes == MATMUL_BYTES
    with pytest.raises(TraceError, match="matmul_kernel x1.*register_op\\('matmul_kernel'"):
        rl.Tracer(strict=True)(tk.matmul, a, b)  # type: ignore[attr-defined]


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


def test_vector_add_and_softmax_charge_each_tensor_once() -> None:
    x = torch.randn(98432)
    y = torch.randn(98432)
    work = rl.trace(tk.add, x, y)  # type: ignore[attr-defined]
    assert work.bytes == 3 * 98432 * 4 and dict(work.unknown) == {"add_kernel": 1}
    same = rl.trace(tk.add, x, x)  # type: ignore[attr-defined]
    assert same.bytes == 2 * 98432 * 4  # one tensor passed twice is read once
    rows = torch.randn(37, 781)
    soft = rl.trace(tk.softmax, rows)  # type: ignore[attr-defined]
    assert soft.bytes == 2 * 37 * 781 * 4 and dict(soft.unknown) == {"softmax_kernel": 1}
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
    assert dict(work.unknown) == {"matmul_kernel": 1}
    rl.register_op("rltest::tri_mm", _matmul_formula_op)
    try:  # a formula for the op counts the op; its launches are not counted again
        work = rl.Tracer(strict=True)(tri_mm, a, b)
    finally:
        rl.unregister_op("rltest::tri_mm")
    assert work.flops == MATMUL_FLOPS and len(work.kernels) == 1


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


def test_a_trace_true_test_is_one_kernel_unknown_until_register_op(
        pytester: pytest.Pytester) -> None:
    from test_plugin import ISOLATE, TOY_SPEC, plugin_args

    pytester.makefile(".yaml", toychip=TOY_SPEC)
    pytester.makeini("[pytest]\nroofline_specs = toychip.yaml\n")
    pytester.makepyfile(test_kernel="""
import pytest
import torch
import pytest_roofline as rl
import triton_kernels as tk

def formula(a, b, c, M, N, K, *rest, **meta):
    return rl.ops.matmul(M, N, K, dtype="fp16")

A = torch.randn(128, 256, dtype=torch.float16)
B = torch.randn(256, 192, dtype=torch.float16)

@pytest.mark.roofline(hw="toychip", trace=True)
def test_unknown():
    tk.matmul(A, B)

@pytest.mark.roofline(hw="toychip", trace=True, strict=True)
def test_strict():
    tk.matmul(A, B)

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
    matcher(result).fnmatch_lines(["*strict=True*matmul_kernel x1*register_op('matmul_kernel'*"])
    import json

    records = {r["nodeid"].split("::")[1]: r for r in json.loads(
        (pytester.path / "r.json").read_text())["results"]}
    assert records["test_unknown"]["unknown"] == {"matmul_kernel": 1}
    assert records["test_unknown"]["flops"] == 0.0  # and said so: "1 op without a formula"
    assert "without a formula" in records["test_unknown"]["message"]
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
    assert _flops_stated({"flops16": 10.0, "flops32": 2.0, "bytes": 8}) == (12.0, "fp32", 8.0)

    def metadata(grid: Any, meta: Any, args: dict[str, Any]) -> dict[str, float]:
        return {"flops16": 2.0 * args["n"], "bytes": 4.0 * args["n"]}

    kernel = SimpleNamespace(launch_metadata=metadata, fn=SimpleNamespace(__name__="k"))
    launches = Launches(recorder=None)
    launches._metadata = {"name": "k", "stream": 7}  # what the hook held
    assert launches._stated(kernel, {"n": 5}, (1,), "k") == (10.0, "bf16", 20.0)
    launches._metadata = None
    assert launches._stated(SimpleNamespace(fn=None), {"n": 5}, (1,), "k") is None
