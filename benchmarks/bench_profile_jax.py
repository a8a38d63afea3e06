"""What profiling a JAX call costs beyond the timed calls, beside the same for torch.

    python benchmarks/bench_profile_jax.py

For a jitted MLP (64x256 -> 512 -> 128) and a transformer block (2 x 64 tokens, width 128,
4 heads, MLP 512), both fp32 on the CPU, five profiled calls each: the wall time of the
calls under ``jax.profiler`` (with writing the XSpace), then the CPU time of reading it
and pricing every executed op (the part ``profile()`` adds); beside it, the same for the
torch twins of both functions under ``torch.profiler`` (exporting, reading and pricing the
chrome trace). Then the two JAX trace files of tests/data/jax_traces, read and priced.
Imports and compilation are done before any figure is taken.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "jax_traces"
REPEATS = 5


def _jax_functions() -> list[tuple[str, Any, tuple[Any, ...]]]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    def mlp(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        return jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2

    def block(x: Any, wq: Any, wk: Any, wv: Any, wo: Any, w1: Any, w2: Any) -> Any:
        def norm(h: Any) -> Any:
            mean = h.mean(-1, keepdims=True)
            return (h - mean) * jax.lax.rsqrt(((h - mean) ** 2).mean(-1, keepdims=True)
                                              + 1e-5)

        b, s, d = x.shape
        h = norm(x)
        q, k, v = ((h @ w).reshape(b, s, 4, d // 4) for w in (wq, wk, wv))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // 4)
        p = jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -1e9))
        x = x + jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, d) @ wo
        return x + jax.nn.gelu(norm(x) @ w1) @ w2

    rng = np.random.default_rng(0)

    def arrays(*shapes: tuple[int, ...]) -> tuple[Any, ...]:
        return tuple(jnp.asarray(rng.standard_normal(s).astype(np.float32) * 0.05)
                     for s in shapes)

    return [("mlp", jax.jit(mlp), arrays((64, 256), (256, 512), (512,), (512, 128),
                                         (128,))),
            ("transformer block", jax.jit(block), arrays(
                (2, 64, 128), (128, 128), (128, 128), (128, 128), (128, 128), (128, 512),
                (512, 128)))]


def _jax(chip: Any) -> None:
    import jax

    from pytest_roofline.profiling.jax import jax_trace

    for name, fn, args in _jax_functions():
        jax.block_until_ready(fn(*args))  # compiled outside the figures
        options = jax.profiler.ProfileOptions()
        options.host_tracer_level = 3
        options.python_tracer_level = 0
        with tempfile.TemporaryDirectory() as folder:
            wall = time.perf_counter()
            with jax.profiler.trace(folder, profiler_options=options):
                for _ in range(REPEATS):
                    jax.block_until_ready(fn(*args))
            calls = time.perf_counter() - wall
            start = time.process_time()
            trace = jax_trace.read(jax_trace.find(folder))
            profile = jax_trace.build(trace, chip, source=name, repeats=REPEATS)
            priced = time.process_time() - start
        print(f"jax   {name:18s} {REPEATS} calls under the profiler {calls:.3f} s wall; "
              f"read and price {priced:.3f} s CPU ({len(profile.rows)} rows, "
              f"{profile.priced_share:.0%} priced)")


def _torch(chip: Any) -> None:
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        print("torch is not installed: no torch figure")
        return
    import os

    from pytest_roofline.profiling.torch import trace_file
    from pytest_roofline.profiling.torch.join import build

    def mlp(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        return torch.relu(x @ w1 + b1) @ w2 + b2

    layer = torch.nn.TransformerEncoderLayer(128, 4, 512, batch_first=True,
                                             norm_first=True).eval()
    cases = [("mlp", mlp, (torch.randn(64, 256), torch.randn(256, 512), torch.randn(512),
                           torch.randn(512, 128), torch.randn(128))),
             ("transformer block", layer, (torch.randn(2, 64, 128),))]
    for name, fn, args in cases:
        with torch.no_grad():
            fn(*args)
            wall = time.perf_counter()
            with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
                for _ in range(REPEATS):
                    fn(*args)
            calls = time.perf_counter() - wall
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "trace.json")
            start = time.process_time()
            prof.export_chrome_trace(path)
            result = build(trace_file.read(path), chip, source=name, repeats=REPEATS)
            priced = time.process_time() - start
        print(f"torch {name:18s} {REPEATS} calls under the profiler {calls:.3f} s wall; "
              f"export, read and price {priced:.3f} s CPU ({len(result.rows)} rows, "
              f"{result.priced_share:.0%} priced)")


def _files() -> None:
    from pytest_roofline.hardware import get_hardware
    from pytest_roofline.profiling.jax import jax_trace

    for path, hw in ((DATA / "cpu_mlp.xplane.pb", "h100"),
                     (DATA / "mi300x_tracelens_jax08_gemm.xplane.pb", None)):
        start = time.process_time()
        trace = jax_trace.read(path)
        chip = get_hardware(hw) if hw else jax_trace.chip_of(trace.device)
        profile = jax_trace.build(trace, chip, source=path.name)
        done = time.process_time() - start
        print(f"file  {path.name}: {len(trace.ops)} executed ops, {len(trace.programs)} "
              f"programs; read and price {done:.3f} s CPU on {chip.name}, "
              f"{profile.priced_share:.0%} priced")


def main() -> None:
    import pytest_roofline as rl
    from pytest_roofline.hardware import Hardware

    chip = Hardware(name="bench-cpu", memory_bandwidth=1e12, memory_capacity=16e9,
                    matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")
    rl.analyze(rl.ops.matmul(8, 8, 8, dtype="fp32"), chip)  # the engine's own imports
    _jax(chip)
    _torch(chip)
    _files()


if __name__ == "__main__":
    main()
