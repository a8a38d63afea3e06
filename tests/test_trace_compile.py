"""torch.compile'd code in a trace: traced as the eager code it compiles, fast, quietly, and
named by module path. Expected figures: a Linear(256, 256) on 32 rows is
2 · 32 · 256 · 256 = 4,194,304 FLOPs (addmm) plus 256 · 32 bias adds counted inside it
(as the eager trace counts them), for each of the two layers."""

from __future__ import annotations

import logging
import statistics
import time
import warnings

import pytest

torch = pytest.importorskip("torch")

import pytest_roofline as rl  # noqa: E402
from pytest_roofline.tracing import _compiled  # noqa: E402


def _model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 256))


def test_the_private_dynamo_api_the_tracer_uses() -> None:
    """The one private use: dynamo's C-level frame strategy (tracing/_compiled.py)."""
    from torch._C._dynamo import eval_frame

    assert callable(eval_frame.set_code_exec_strategy)
    action = eval_frame._FrameAction
    eval_frame._FrameExecStrategy(action.SKIP, action.SKIP)
    assert _compiled.module_path("_orig_mod.layers.0._orig_mod.mlp") == "layers.0.mlp"
    assert _compiled.module_path("layers.0") == "layers.0"


def test_a_compiled_module_traces_as_fast_as_eager_quietly_and_by_module_path(
        caplog: pytest.LogCaptureFixture) -> None:
    model, x = _model(), torch.randn(32, 256)
    eager_times = []
    for _ in range(3):
        start = time.perf_counter()
        eager = rl.trace(model, x)
        eager_times.append(time.perf_counter() - start)
    compiled = torch.compile(_model())
    caplog.set_level(logging.WARNING)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        traced = rl.trace(compiled, x)
        first = time.perf_counter() - start
        again = rl.trace(compiled, x)
    eager_time = statistics.median(eager_times)
    print(f"eager trace {eager_time * 1e3:.1f} ms, first trace of the compiled module "
          f"{first * 1e3:.1f} ms ({first / eager_time:.2f}x)")
    assert first <= 3 * eager_time + 0.05
    assert traced.flops == again.flops == eager.flops
    assert [k.name for k in traced.kernels] == [k.name for k in eager.kernels] == [
        "0.addmm", "1.relu", "2.addmm"]
    assert "recompile" not in caplog.text
    assert not [w for w in caught if "torch.compile" in str(w.message)]
    assert torch.compiler.is_compiling() is False  # the stance is restored
    compiled(x)  # and the module still compiles and runs outside the trace


def test_a_compiled_function_and_a_cond_inside_it_trace() -> None:
    @torch.compile
    def step(x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda x: x @ x, lambda x: x + 1, (x,))

    x = torch.randn(64, 64).abs()
    work = rl.trace(step, x)
    assert [k.name for k in work.kernels] == ["sum", "gt", "mm"]
    assert work.flops == 2 * 64**3 + 64 * 64 - 1 + 1
