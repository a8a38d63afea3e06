"""Serving-shaped workloads: a model from its config.json, expert parallelism, mixed lengths."""

from __future__ import annotations

import pytest

from pytest_roofline import models

# The sizing keys of a Hugging Face config.json (Mistral 7B v0.1's), given as the mapping the
# file holds; models.load("path/to/config.json") reads the file itself.
MISTRAL_CONFIG = {
    "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 32000, "sliding_window": 4096, "tie_word_embeddings": False,
}


@pytest.mark.roofline(hw="h100", regime="memory", fits=True,
                      workload=models.load(MISTRAL_CONFIG).decode(batch=16, context=8192))
def test_mistral_decode_from_its_config() -> None:
    """Every step reads the weights and at most the 4096-key window of each sequence's cache."""


@pytest.mark.roofline(hw="h200", regime="memory", fits=True,
                      workload=models.load("deepseek-v3").decode(batch=64, context=4096, ep=8))
def test_deepseek_v3_decode_over_eight_h200() -> None:
    """Experts spread over 8 chips, attention data-parallel: a step reads each chip's experts
    (fp8, as the config.json's quantization_config says) and its share of the latent cache."""


@pytest.mark.roofline(hw="h100", regime="memory", fits=True)
def test_decode_of_a_mixed_batch(roofline) -> None:
    """Eight sequences of their own context lengths: each reads only its own KV cache."""
    contexts = [512, 1024, 4096, 8192, 100, 2000, 3000, 700]
    roofline.add(models.load("llama-3-8b").decode(batch=len(contexts), context=contexts))
