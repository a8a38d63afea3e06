"""How long tracing takes (target: a Llama-3-8B decoder layer, written as ordinary torch
modules, traced on meta tensors in under 100 ms, warm: module built, one trace done).

Run: ``python benchmarks/bench_trace.py`` (needs the ``torch`` extra; ``jax`` optional).
Prints, side by side, the median and best time of one call over repeated runs: our trace,
torch's own FlopCounterMode over the same call, and the bare forward pass on meta tensors
(what any dispatch-level tool pays at least). First-call figures are printed too: the first
trace in a process loads torch's lazily imported modules.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the Llama-style block the tests trace

from per_call import per_call  # noqa: E402  (beside this script)

TARGET_S = 0.1


#: Whole transformers models at 2 layers (their configs' defaults), batch 1 x 256 tokens.
HF_TYPES = ("llama", "mixtral", "qwen3_moe", "deepseek_v3", "gpt2")


def hf_rows(rl: object, counted_call: object) -> None:
    """Whole 2-layer transformers models on meta: the trace beside FlopCounterMode."""
    try:
        from zoo_setup import allow_torchvision_without_extension

        allow_torchvision_without_extension()
        import torch
        import transformers
    except ImportError:
        print("  (transformers not installed: no whole-model figures)")
        return
    print(f"{'whole transformers model, 2 layers, 1 x 256':<46}{'median':>11}{'best':>11}")
    ids = torch.zeros(1, 256, dtype=torch.long, device="meta")
    for model_type in HF_TYPES:
        layers = {"n_layer": 2} if model_type == "gpt2" else {"num_hidden_layers": 2}
        config = transformers.AutoConfig.for_model(model_type, **layers)
        config._attn_implementation = "sdpa"
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
        rl.trace(model, ids)  # type: ignore[attr-defined]  # warm

        def counted(m: object = model) -> None:
            with counted_call(display=False):  # type: ignore[operator]
                m(ids)  # type: ignore[operator]

        for name, fn in (("pytest_roofline.trace",
                          lambda m=model: rl.trace(m, ids)),  # type: ignore[attr-defined]
                         ("torch FlopCounterMode", counted)):
            median, best = per_call(fn, number=5)
            print(f"  {model_type + ': ' + name:<44}{1e3 * median:>8.2f} ms"
                  f"{1e3 * best:>8.2f} ms")


def main() -> int:
    try:
        import torch
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        print("bench_trace needs torch: pip install 'pytest-roofline[torch]'")
        return 1
    from llama_block import Model, inputs

    import pytest_roofline as rl

    config = {"hidden": 4096, "heads": 32, "kv_heads": 8, "intermediate": 14336}
    layer = Model(1, device="meta", dtype=torch.bfloat16, **config)  # Llama-3-8B, one layer
    cases = {"prefill b=1 s=2048": inputs(1, 2048, 2048, hidden=4096, heads=32, kv_heads=8),
             "decode b=8 ctx=4096": inputs(8, 1, 4096, hidden=4096, heads=32, kv_heads=8)}

    def counted(args: tuple[object, ...]) -> None:
        with FlopCounterMode(display=False):
            layer(*args)

    start = time.perf_counter()
    first = rl.trace(layer, *cases["prefill b=1 s=2048"])
    print(f"first trace in this process: {1e3 * (time.perf_counter() - start):.0f} ms "
          f"({len(first.kernels)} kernels)")
    print(f"{'Llama-3-8B layer, meta tensors':<46}{'median':>11}{'best':>11}")
    worst = 0.0
    for label, args in cases.items():
        rows = [("pytest_roofline.trace", lambda a=args: rl.trace(layer, *a)),
                ("torch FlopCounterMode", lambda a=args: counted(a)),
                ("forward pass alone", lambda a=args: layer(*a))]
        for name, fn in rows:
            median, best = per_call(fn, number=5)
            if name.startswith("pytest_roofline"):
                worst = max(worst, median)
            print(f"  {label + ': ' + name:<44}{1e3 * median:>8.2f} ms{1e3 * best:>8.2f} ms")
    hf_rows(rl, counted_call=FlopCounterMode)
    try:
        import jax
        import jax.numpy as jnp

        def mlp(x: object, w1: object, w2: object) -> object:
            return jax.nn.silu(x @ w1) @ w2  # type: ignore[operator]

        spec = jax.ShapeDtypeStruct
        args_j = (spec((2048, 4096), jnp.bfloat16), spec((4096, 14336), jnp.bfloat16),
                  spec((14336, 4096), jnp.bfloat16))
        median, best = per_call(lambda: rl.trace(mlp, *args_j), number=5)
        print(f"  {'jax MLP (jaxpr): pytest_roofline.trace':<44}{1e3 * median:>8.2f} ms"
              f"{1e3 * best:>8.2f} ms")
    except ImportError:
        print("  (jax not installed: no JAX figures)")
    verdict = "ok" if worst < TARGET_S else "OVER TARGET"
    print(f"target: a traced layer under {1e3 * TARGET_S:.0f} ms warm: worst median "
          f"{1e3 * worst:.1f} ms, {verdict}")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
