"""Recorded ops priced from their shapes alone (``profiling.torch.shapes``) give the tracer's
answer exactly: every call of the test traces that module prices is priced again by a rebuild
on meta tensors (``pricing._price`` with the shortcut off) and the two Workloads compared
whole (every kernel field, name, unknown ops); random shapes likewise; each table row's
formula is checked against a closed form; and a small trace is read, priced and reported by
the CLI without torch (so without ``torch._dynamo``) or JAX imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_roofline.engine.workload import Workload
from pytest_roofline.profiling.torch import pricing, shapes

pytest.importorskip("torch")

TRACES = Path(__file__).parent / "data" / "traces"
#: Traces whose ops the shortcut takes (products, elementwise, reductions, fills, losses),
#: old and new Kineto, CUDA and ROCm, fp32 and bf16, strides recorded and not.
SAMPLES = ("hta_mi250_minitoy_train", "tracelens_mi300x_compile", "tracelens_mi300x_bert_small",
           "tracelens_mi300x_norms", "kineto_resnet50_v100_2021", "h200_llama3_8b_layer_decode",
           "cpu_mlp", "cpu_transformer_block", "a100_hta_sampled_rank0")


def same(a: Workload | str, b: Workload | str) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return (a.name, a.kernels, a.footprint, dict(a.unknown), dict(a.assumed), a.hint) == (
        b.name, b.kernels, b.footprint, dict(b.unknown), dict(b.assumed), b.hint)


def rebuilt(monkeypatch: pytest.MonkeyPatch, *call: Any) -> Workload | str:
    """The call priced on meta tensors (the tracer), the shortcut off."""
    with monkeypatch.context() as patched:
        patched.setattr(shapes, "price", lambda *args: None)
        return pricing._price(*call)


@pytest.mark.parametrize("name", SAMPLES)
def test_every_call_the_shortcut_prices_matches_the_rebuild(name: str,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from pytest_roofline.profiling import read_trace

    seen: list[tuple[tuple[Any, ...], Workload | str]] = []
    quick = shapes.price

    def spy(*call: Any) -> Workload | str | None:
        answer = quick(*call)
        if answer is not None:
            seen.append((call, answer))
        return answer

    monkeypatch.setattr(pricing, "_CACHE", {})
    monkeypatch.setattr(shapes, "price", spy)
    hw = {"a100_hta_sampled_rank0": "a100", "cpu_mlp": "h100-sxm",
          "kineto_resnet50_v100_2021": "v100", "cpu_transformer_block": "h100-sxm"}.get(name)
    read_trace(TRACES / f"{name}.json.gz", hw=hw)
    monkeypatch.setattr(shapes, "price", quick)
    assert seen, f"{name}: no call priced from its shapes"
    for call, answer in seen:
        slow = rebuilt(monkeypatch, *call)
        assert same(answer, slow), (call, answer, slow)


DTYPES = ("float", "c10::BFloat16", "c10::Half")


def _broadcastable(draw: Any) -> tuple[list[int], list[int]]:
    out = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    other = [d if draw(st.booleans()) else 1 for d in out][draw(st.integers(0, len(out))):]
    return out, other


@settings(max_examples=int(os.environ.get("ROOFLINE_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_calls_match_the_rebuild(data: Any) -> None:
    kind = data.draw(st.sampled_from(DTYPES))
    op = data.draw(st.sampled_from(sorted(shapes.ELEMENTWISE | {"add_", "mul_", "relu_"})))
    out, other = _broadcastable(data.draw)
    binary = op.rstrip("_") in {"add", "sub", "mul", "div", "threshold_backward"}
    dims = [out, other] if binary else [out]
    types = (kind,) * len(dims)
    if op == "threshold_backward" and data.draw(st.booleans()):
        dims, types = [*dims, []], (*types, "Scalar")  # its threshold
    if op.rstrip("_") in {"clamp_min", "clamp_max"}:
        dims, types = [out, []], (kind, "Scalar")
    if data.draw(st.booleans()):
        dims, types = dims[::-1], types  # the broadcast operand first (refused in place)
    concrete = tuple("" if t != "Scalar" else "0.5" for t in types)
    strides = None
    if data.draw(st.booleans()):  # a broadcast (stride-0) operand recorded as such
        strides = [[0 if j == 0 and len(s) > 1 else 1 for j, _ in enumerate(s)] for s in dims]
    call = (f"aten::{op}", dims, types, concrete, None, strides, None)
    answer = shapes.price(*call)
    if answer is None:
        return
    with pytest.MonkeyPatch.context() as patch:
        assert same(answer, rebuilt(patch, *call)), call


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 9), k=st.integers(1, 9), n=st.integers(1, 9), b=st.integers(1, 3),
       op=st.sampled_from(("mm", "addmm", "bmm")), kind=st.sampled_from(DTYPES),
       tf32=st.booleans(), bias=st.sampled_from(("row", "full")))
def test_random_products_match_the_rebuild(m: int, k: int, n: int, b: int, op: str, kind: str,
                                           tf32: bool, bias: str) -> None:
    types: tuple[str, ...]
    concrete: tuple[str, ...]
    if op == "bmm":
        dims, types, concrete = [[b, m, k], [b, k, n]], (kind, kind), ("", "")
    elif op == "mm":
        dims, types, concrete = [[m, k], [k, n]], (kind, kind), ("", "")
    else:
        dims = [[n] if bias == "row" else [m, n], [m, k], [k, n], [], []]
        types, concrete = (kind, kind, kind, "Scalar", "Scalar"), ("", "", "", "1", "1")
    dtype = "tf32" if tf32 and kind == "float" else None
    call = (f"aten::{op}", dims, types, concrete, dtype, None, None)
    answer = shapes.price(*call)
    assert isinstance(answer, Workload)
    # closed form: 2·b·m·k·n FLOPs (bmm's batch b, else 1); bytes: each operand and the
    # output once, at the dtype's width
    width = {"float": 4, "c10::BFloat16": 2, "c10::Half": 2}[kind]
    batch = b if op == "bmm" else 1
    extra = (n if bias == "row" else m * n) if op == "addmm" else 0
    kernel, = answer.kernels
    assert kernel.flops == 2 * batch * m * k * n
    assert kernel.bytes == width * (batch * (m * k + k * n + m * n) + extra)
    with pytest.MonkeyPatch.context() as patch:
        assert same(answer, rebuilt(patch, *call)), call


def test_reductions_fills_and_losses_by_their_closed_forms() -> None:
    """sum over dim 0 of 5x128 fp32, kept: 640 - 128 = 512 adds, 640 + 128 elements moved;
    mean of all: 640 FLOPs (add each, then divide), 640 + 1 elements; fill_ of 5x128 writes
    640 elements and reads none; mse_loss (mean) of two 5x128: 640 FLOPs, 2·640 + 1
    elements; an op torch has without a formula is named, never priced 0."""
    s = shapes.price("aten::sum", [[5, 128], [], [], []], ("float", "ScalarList", "Scalar", ""),
                     ("", "[0]", "True", ""), None, None, None)
    assert isinstance(s, Workload) and (s.flops, s.bytes) == (512.0, 4 * (640 + 128))
    m = shapes.price("aten::mean", [[5, 128], [], [], []], ("float", "ScalarList", "Scalar", ""),
                     ("", "[]", "False", ""), None, None, None)
    assert isinstance(m, Workload) and (m.flops, m.bytes) == (640.0, 4 * 641)
    f = shapes.price("aten::fill_", [[5, 128], []], ("float", "Scalar"), ("", "0"), None, None,
                     None)
    assert isinstance(f, Workload) and (f.flops, f.bytes) == (0.0, 4 * 640)
    loss = shapes.price("aten::mse_loss", [[5, 128], [5, 128], []], ("float", "float", "Scalar"),
                        ("", "", "1"), None, None, None)
    assert isinstance(loss, Workload) and (loss.flops, loss.bytes) == (640.0, 4 * 1281)
    assert shapes.price("aten::mse_loss_backward", [[], [5, 128], [5, 128], [], [5, 128]],
                        ("float", "float", "float", "Scalar", "float"), ("", "", "", "1", ""),
                        None, None, None) == "no formula for aten::mse_loss_backward"
    # mixed dtypes, a shape that does not broadcast, a formula register_op gave: not taken
    assert shapes.price("aten::add", [[4], [4]], ("float", "c10::Half"), ("", ""), None, None,
                        None) is None
    assert shapes.price("aten::add", [[4], [3]], ("float", "float"), ("", ""), None, None,
                        None) is None


def test_a_registered_formula_wins_over_the_shortcut() -> None:
    from pytest_roofline import Kernel
    from pytest_roofline.tracing import register_op, unregister_op

    def formula(a: Any, b: Any) -> Kernel:
        return Kernel("mine", 1.0, 2.0)

    register_op("aten::mm", formula)
    try:
        assert shapes.price("aten::mm", [[2, 3], [3, 4]], ("float", "float"), ("", ""), None,
                            None, None) is None
    finally:
        unregister_op("aten::mm")


def test_the_table_rows_are_the_tracers_classes() -> None:
    """Each elementwise row is in the tracer's vector class (torch tags it pointwise, or the
    vector table lists it); each row with no formula is torch's op the table does not know."""
    import torch

    from pytest_roofline.tracing import _aten as A

    for op in shapes.ELEMENTWISE | shapes.LOSSES | shapes.REDUCTIONS:
        packet = getattr(torch.ops.aten, op)
        func = getattr(packet, packet.overloads()[0])
        cls = A.classify(op, pointwise=torch.Tag.pointwise in func.tags, is_view=func.is_view)
        assert cls == "vector", (op, cls)
    for op in shapes.NO_FORMULA:
        packet = getattr(torch.ops.aten, op)
        func = getattr(packet, packet.overloads()[0])
        assert A.classify(op, pointwise=torch.Tag.pointwise in func.tags,
                          is_view=func.is_view) == "unknown"
    for op in shapes.FOREACH:
        assert hasattr(torch.ops.aten, op)


def test_a_small_trace_is_reported_without_torch_or_jax() -> None:
    """The CLI reads, prices and reports the MI250 trace (products, elementwise ops,
    reductions, a loss) in a fresh interpreter that never imports torch, torch._dynamo or
    jax."""
    code = ("import sys; from pytest_roofline.cli import main; "
            f"code = main(['profile', {str(TRACES / 'hta_mi250_minitoy_train.json.gz')!r}, "
            "'--json']); "
            "print('MODULES', sorted(m for m in ('torch', 'torch._dynamo', 'jax') "
            "if m in sys.modules)); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert out.rstrip().endswith("MODULES []"), out[-300:]
    report = json.loads(out[:out.rindex("MODULES")])
    assert report["rows"], "nothing priced"
