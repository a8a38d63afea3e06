"""A transformer's parameter counts: by part, active, per chip, and its KV cache per token."""

from __future__ import annotations

from ... import dtypes
from ...errors import WorkloadError
from ...ops._common import precision
from ..config import TransformerConfig
from .options import Plan


class ParameterCounts:
    """Parameter counts of a :class:`~..config.TransformerConfig` (the base of Transformer)."""

    def __init__(self, config: TransformerConfig) -> None:
        if not isinstance(config, TransformerConfig):
            raise WorkloadError(f"Transformer needs a TransformerConfig, got "
                                f"{type(config).__name__}")
        self.config = config

    def __repr__(self) -> str:
        return f"Transformer({self.name!r}, params={self.params / 1e9:.3g}B)"

    @property
    def name(self) -> str:
        return self.config.name


    # -- parameters ------------------------------------------------------------------------

    def params_breakdown(self) -> dict[str, int]:
        """Parameter counts by part: embedding, positions, attention, mlp, router, norms,
        biases, lm_head, pooler (zero where the model has none)."""
        c = self.config
        h, hd, vd = c.hidden, c.head_dim or 0, c.v_head_dim or 0
        kvh = c.kv_heads or c.heads
        dense_mlp, moe_mlp = self._mlp_weights(c.intermediate, c.expert_intermediate,
                                               c.shared_width)
        width = 2 if c.norm == "layernorm" else 1  # parameters per normalized element
        layer_norms = c.block_norms * h + (2 * hd if c.qk_norm else 0) + (
            (c.q_lora_rank or 0) + (c.kv_lora_rank or 0))
        biases = 0
        if c.bias or c.qkv_bias:
            biases += c.heads * hd + kvh * (hd + vd)
        if c.bias or c.o_bias:
            biases += h
        dense_biases = c.intermediate * (2 if c.mlp == "gated" else 1) + h if (
            c.bias or c.mlp_bias) else 0
        dense = c.layers - c.moe_layers
        parts = {
            "embedding": c.vocab * h,
            "positions": (c.max_positions if c.position == "learned" else 0) * h
            + c.token_types * h,
            "attention": c.layers * self._attention_weights(c.heads, kvh),
            "mlp": dense * dense_mlp + c.moe_layers * moe_mlp,
            "router": c.moe_layers * h * (c.experts + c.shared_expert_gate),
            "norms": width * (c.layers * layer_norms + (
                h if c.architecture == "decoder" or c.embedding_norm else 0)),
            "biases": c.layers * biases + dense * dense_biases,
            "lm_head": 0 if c.tie_embeddings or c.architecture == "encoder" else h * c.vocab,
            "pooler": h * h + h if c.pooler else 0,
        }
        return parts

    @property
    def params(self) -> int:
        """Total parameters (tied embeddings counted once)."""
        return sum(self.params_breakdown().values())

    @property
    def active_params(self) -> int:
        """Parameters a token goes through (for a mixture of experts: k of E experts)."""
        c = self.config
        if not c.is_moe:
            return self.params
        per_expert = 3 * c.hidden * c.expert_intermediate
        unused = c.moe_layers * (c.experts - c.experts_per_token) * per_expert
        return self.params - unused

    @property
    def active_params_no_embedding(self) -> int:
        """:attr:`active_params` without the input embedding table (DeepSeek's convention:
        its 36.6B activated for V3 count the output head, not the input embedding, a lookup
        of one row per token). A tied table is the output head, so it stays."""
        if self.config.tie_embeddings:
            return self.active_params
        return self.active_params - self.params_breakdown()["embedding"]

    def kv_bytes_per_token(self, kv_dtype: object = "bf16") -> float:
        """Bytes of KV cache one token of context adds, all layers, one copy (no tensor
        parallelism, no window): K and V of every KV head, ``layers x kv_heads x (head_dim +
        v_head_dim) x bytes``; for latent attention the latent and the rotary key,
        ``layers x (kv_lora_rank + qk_rope_head_dim) x bytes``."""
        c = self.config
        item = dtypes.ITEMSIZE[precision(kv_dtype, "kv_dtype")]
        return float(c.layers * self._kv_entries(c.kv_heads or c.heads)) * item

    def _kv_entries(self, kv_heads: int) -> int:
        """Elements one layer caches per token with *kv_heads* KV heads on the chip."""
        c = self.config
        if c.is_mla:
            return (c.kv_lora_rank or 0) + c.qk_rope_head_dim
        return kv_heads * ((c.head_dim or 0) + (c.v_head_dim or 0))

    def _attention_weights(self, heads: int, kv_heads: int) -> int:
        """Weights of one layer's attention projections, *heads* and *kv_heads* on a chip.

        Latent attention: the down-projections (q_a, kv_a) are whole on every chip, the
        up-projections (q_b, kv_b) and o_proj split by heads."""
        c = self.config
        h, hd, vd = c.hidden, c.head_dim or 0, c.v_head_dim or 0
        if c.is_mla:
            kvl, rope, ql = c.kv_lora_rank or 0, c.qk_rope_head_dim, c.q_lora_rank
            q = h * ql + ql * heads * hd if ql else h * heads * hd
            return q + h * (kvl + rope) + kvl * heads * (hd - rope + vd) + heads * vd * h
        return h * (heads * hd + kv_heads * (hd + vd)) + heads * vd * h

    def _mlp_weights(self, inter: int, expert_inter: int, shared_inter: int,
                     experts: int | None = None) -> tuple[int, int]:
        """Weights of one dense MLP layer and of one mixture-of-experts layer (*experts*
        routed experts, default all, and the shared experts), at the given inner widths."""
        c = self.config
        h = c.hidden
        dense = (3 if c.mlp == "gated" else 2) * h * inter
        routed = c.experts if experts is None else experts
        return dense, routed * 3 * h * expert_inter + 3 * h * shared_inter

    def _linear_params_per_chip(self, plan: Plan) -> float:
        """Weights of the blocks' linear layers on one chip (the ones weight_dtype applies to)."""
        c = self.config
        attention = self._attention_weights(plan.heads, plan.kv_heads)
        dense, moe = self._mlp_weights(plan.inter, plan.expert_inter, plan.shared_inter,
                                       self.config.experts // plan.ep)
        return float(c.layers * attention + (c.layers - c.moe_layers) * dense
                     + c.moe_layers * moe)

    def _params_per_chip(self, plan: Plan) -> float:
        parts = self.params_breakdown()
        vocab_parallel = (parts["embedding"] + parts["lm_head"]) / plan.tp
        replicated = sum(v for key, v in parts.items() if key not in (
            "embedding", "lm_head", "attention", "mlp"))
        return self._linear_params_per_chip(plan) + vocab_parallel + replicated
