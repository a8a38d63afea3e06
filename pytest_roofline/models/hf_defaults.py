"""The defaults of ``transformers``' config classes for every ``config.json`` key the
mappings of :mod:`pytest_roofline.models.hf` read, per ``model_type``: what a key a file
omits stands for. Rendered as a table in ``docs/models.md`` (a test keeps the two equal).
"""

from __future__ import annotations

import json
from typing import Any

#: The ``transformers`` release whose config classes :data:`DEFAULTS` is read from.
TRANSFORMERS_VERSION = "5.23.0"

_LLAMA = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
          "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
          "head_dim": None, "hidden_act": "silu", "tie_word_embeddings": False,
          "attention_bias": False, "mlp_bias": False}

#: Per model_type: the default of every key read, from ``transformers``' config classes
#: (``src/transformers/models/<name>/configuration_<name>.py``). ``None`` is that class's
#: own "derive it" value (kv heads = heads, head_dim = hidden / heads, n_inner = 4 x hidden).
DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": _LLAMA,
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "head_dim": None, "hidden_act": "silu", "tie_word_embeddings": False,
                "sliding_window": 4096},
    "mixtral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "head_dim": None, "hidden_act": "silu", "tie_word_embeddings": False,
                "sliding_window": None, "num_local_experts": 8, "num_experts_per_tok": 2},
    "qwen2": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
              "hidden_act": "silu", "tie_word_embeddings": False, "use_sliding_window": False,
              "sliding_window": 4096, "max_window_layers": 28, "layer_types": None},
    "qwen3": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
              "head_dim": 128, "hidden_act": "silu", "tie_word_embeddings": False,
              "attention_bias": False, "use_sliding_window": False, "sliding_window": 4096,
              "max_window_layers": 28, "layer_types": None},
    "phi3": {"vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
             "hidden_act": "silu", "tie_word_embeddings": False, "sliding_window": None},
    "gemma": {"vocab_size": 256000, "hidden_size": 3072, "intermediate_size": 24576,
              "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
              "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "tie_word_embeddings": True,
              "attention_bias": False},
    "gemma2": {"vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
               "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
               "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
               "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
               "layer_types": None},
    "gemma3_text": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256,
                    "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
                    "attention_bias": False, "sliding_window": 4096, "layer_types": None,
                    "sliding_window_pattern": 6},
    "gemma3": {"text_config": None, "vision_config": None, "tie_word_embeddings": True},
    "qwen2_moe": {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
                  "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
                  "hidden_act": "silu", "tie_word_embeddings": False,
                  "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28,
                  "layer_types": None, "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
                  "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4,
                  "num_experts": 60, "mlp_only_layers": None, "qkv_bias": True},
    "qwen3_moe": {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
                  "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 4,
                  "head_dim": None, "hidden_act": "silu", "tie_word_embeddings": False,
                  "attention_bias": False, "use_sliding_window": False,
                  "decoder_sparse_step": 1, "moe_intermediate_size": 768,
                  "num_experts_per_tok": 8, "num_experts": 128, "mlp_only_layers": None},
    "deepseek_v2": {"vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 11008,
                    "num_hidden_layers": 32, "num_attention_heads": 32, "hidden_act": "silu",
                    "tie_word_embeddings": False, "attention_bias": False,
                    "first_k_dense_replace": 0, "kv_lora_rank": 512, "q_lora_rank": 1536,
                    "n_routed_experts": 64, "n_shared_experts": 2, "qk_nope_head_dim": 128,
                    "qk_rope_head_dim": 64, "v_head_dim": 128, "num_experts_per_tok": None,
                    "moe_intermediate_size": 1407},
    "deepseek_v3": {"vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
                    "num_hidden_layers": 61, "num_attention_heads": 128, "hidden_act": "silu",
                    "tie_word_embeddings": False, "attention_bias": False,
                    "first_k_dense_replace": 3, "kv_lora_rank": 512, "q_lora_rank": 1536,
                    "n_routed_experts": 256, "n_shared_experts": 1, "qk_nope_head_dim": 128,
                    "qk_rope_head_dim": 64, "v_head_dim": 128, "num_experts_per_tok": 8,
                    "moe_intermediate_size": 2048},
    "gpt2": {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12,
             "n_head": 12, "n_inner": None, "activation_function": "gelu_new",
             "tie_word_embeddings": True, "add_cross_attention": False},
    "gptj": {"vocab_size": 50400, "n_embd": 4096, "n_layer": 28, "n_head": 16, "n_inner": None,
             "activation_function": "gelu_new", "tie_word_embeddings": False},
    "gpt_neox": {"vocab_size": 50432, "hidden_size": 6144, "num_hidden_layers": 44,
                 "num_attention_heads": 64, "intermediate_size": 24576, "hidden_act": "gelu",
                 "tie_word_embeddings": False, "use_parallel_residual": True,
                 "attention_bias": True},
    "falcon": {"vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32,
               "num_attention_heads": 71, "num_ln_in_parallel_attn": None,
               "num_kv_heads": None, "alibi": False, "new_decoder_architecture": False,
               "multi_query": True, "parallel_attn": True, "bias": False,
               "ffn_hidden_size": None, "activation": "gelu", "tie_word_embeddings": True},
    "bert": {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
             "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
             "max_position_embeddings": 512, "type_vocab_size": 2, "is_decoder": False},
    "roberta": {"vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12,
                "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
                "max_position_embeddings": 512, "type_vocab_size": 2, "is_decoder": False},
}


def defaults_table() -> str:
    """:data:`DEFAULTS` as a Markdown table, one row per model_type (``docs/models.md``)."""
    rows = ["| model_type | defaults of the keys read |", "| --- | --- |"]
    for model_type, defaults in DEFAULTS.items():
        cells = ", ".join(f"`{key}`: {json.dumps(value)}" for key, value in defaults.items())
        rows.append(f"| `{model_type}` | {cells} |")
    return "\n".join(rows)
