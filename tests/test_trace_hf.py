"""Model code written outside this project: Hugging Face's own ``LlamaDecoderLayer``
(transformers), at Llama-3-8B's shapes on meta tensors, traced with no change to its code.

Expected numbers: torch's FlopCounterMode for the matmul family (exact; causal attention is
its count times the scored fraction of pairs), ``models`` for the total (2%)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import pytest_roofline as rl  # noqa: E402
from pytest_roofline import models  # noqa: E402

LAYER = ("attn_norm", "qkv_proj", "attention", "attention.softmax", "o_proj", "mlp_norm",
         "gate_up_proj", "act", "down_proj")


@pytest.fixture(scope="module")
def hf_layer():
    from transformers.models.llama import modeling_llama as llama

    config = transformers.LlamaConfig(
        hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
        num_key_value_heads=8, num_hidden_layers=1, vocab_size=128256, rope_theta=500000.0)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        layer = llama.LlamaDecoderLayer(config, layer_idx=0).to(torch.bfloat16)
        rope = llama.LlamaRotaryEmbedding(config)
    return layer, rope


@pytest.mark.parametrize(("batch", "seq", "regime"), [(1, 2048, "compute"), (4, 256, "compute"),
                                                      (8, 1, "memory")])
def test_hugging_face_llama_layer_agrees(hf_layer, batch, seq, regime):
    from torch.utils.flop_counter import FlopCounterMode

    layer, rope = hf_layer
    x = torch.empty(batch, seq, 4096, device="meta", dtype=torch.bfloat16)
    positions = torch.zeros(batch, seq, dtype=torch.long, device="meta")
    kwargs = {"attention_mask": None, "position_ids": positions,
              "position_embeddings": rope(x, positions)}
    traced = rl.trace(layer, x, **kwargs)
    with FlopCounterMode(display=False) as counter:
        layer(x, **kwargs)
    counts = {str(op).split(".")[-1]: n for op, n in counter.get_flop_counts()["Global"].items()}
    matrix = {attention: sum(k.total_flops for k in traced.kernels if k.unit == "matrix"
                             and ("attention" in k.name) == attention)
              for attention in (False, True)}
    assert matrix[False] == counts["mm"]
    scored = (seq + 1) / (2 * seq) if seq > 1 else 1.0  # HF sets is_causal for seq > 1
    assert matrix[True] == pytest.approx(counts["bmm"] * scored, rel=1e-12)
    declared = models.load("llama-3-8b").prefill(batch, seq)
    assert traced.flops == pytest.approx(sum(k.flops for k in declared.kernels
                                             if k.name in LAYER), rel=0.02)
    assert "mlp.up_proj.mm" in {k.name for k in traced.kernels}
    assert rl.analyze(traced, "h100").regime == regime
