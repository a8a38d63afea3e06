"""Bytes a transformer phase keeps resident on each chip: weights, KV cache, activations and
(training) gradients and optimizer state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ... import dtypes
from ...engine.workload import Number
from ...errors import WorkloadError
from ...ops._common import size, sweep_size
from ...ops._family import ADAM_STATE_BYTES
from .options import PhaseOptions, Plan, plan_for
from .params import ParameterCounts


@dataclass(frozen=True)
class Footprint:
    """Memory a phase needs resident on each chip, in bytes (see :meth:`Transformer.footprint`)."""

    weights: Number
    kv_cache: Number
    activations: Number
    optimizer: Number = 0.0  # gradients and optimizer state (training only)

    @property
    def total(self) -> Number:
        return self.weights + self.kv_cache + self.activations + self.optimizer



class Footprints(ParameterCounts):
    """The footprint of each phase (a base of Transformer)."""

    def footprint(self, batch: object, context: object, *, phase: str = "decode",
                  tp: object = 1, dtype: object = "bf16", weight_dtype: object = None,
                  kv_dtype: object = None, ep: object = 1) -> Footprint:
        """Bytes resident per chip while running *phase* ("decode", "prefill", "forward" or
        "train") on *batch* sequences of *context* tokens.

        * weights: per-chip parameters at their precision (see the module docstring);
        * kv_cache: batch·context·layers·kv_heads·(head_dim + v_head_dim)·|kv_dtype| (decode,
          prefill; windowed layers keep min(context, window) positions); latent attention:
          batch·context·layers·(kv_lora_rank + qk_rope_head_dim)·|kv_dtype| on every chip;
        * activations, inference: the largest live set of one layer (residual stream and
          normalized input, 2·hidden, plus QKV and attention output, or the MLP's
          intermediates), for every token of the step, plus the step's logits; training: every
          tensor the backward pass reads, for every layer (no recomputation; FlashAttention
          stores no scores), plus fp32 logits;
        * optimizer (train): gradients in dtype plus 12 B/param of Adam state.
        """
        if not isinstance(phase, str) or phase not in ("decode", "prefill", "forward", "train"):
            raise WorkloadError(f"footprint: phase must be 'decode', 'prefill', 'forward' or "
                                f"'train', got {phase!r}")
        b = sweep_size(batch, "footprint: batch")
        ctx = size(context, "footprint: context")
        options = PhaseOptions.of("footprint", tp=tp, dtype=dtype, weight_dtype=weight_dtype,
                                  kv_dtype=kv_dtype, ep=ep)
        plan = plan_for(self.config, options)
        if phase in ("forward", "train") and plan.ep > 1:
            raise WorkloadError(f"footprint: ep={plan.ep} is modelled for decode and prefill")
        return self._footprint(plan, [(ctx, b / plan.ep)], phase)

    def _footprint(self, plan: Plan, lengths: Sequence[tuple[int, Number]],
                   phase: str) -> Footprint:
        """*lengths*: (length, how many sequences) pairs; one pair unless lengths are mixed."""
        c = self.config
        hd = c.head_dim or 0
        act = dtypes.ITEMSIZE[plan.act]
        b: Number = sum(n for _, n in lengths)
        tokens = b if phase == "decode" else sum(n * float(length) for length, n in lengths)
        per_chip = self._params_per_chip(plan)
        linear = self._linear_params_per_chip(plan)
        weights = linear * dtypes.ITEMSIZE[plan.weight] + (per_chip - linear) * act
        kv_cache: Number = 0.0
        if phase in ("decode", "prefill"):
            # a sliding window keeps a rolling cache of its last W positions
            local = float(c.windowed_layers)
            window = float(c.sliding_window or 0)
            kept: Number = sum(n * ((c.layers - local) * float(ctx) + local * min(
                float(ctx), window)) for ctx, n in lengths)
            kv_cache = kept * self._kv_entries(plan.kv_heads) * dtypes.ITEMSIZE[plan.kv]
        vd = c.v_head_dim or 0
        qkv = plan.heads * hd + plan.kv_heads * (hd + vd)
        hd = vd  # the attention output is as wide as the value heads
        ffn = 0.0 if c.moe_layers == c.layers else (
            3.0 if c.mlp == "gated" else 2.0) * plan.inter
        if c.is_moe:
            ffn = max(ffn, 3.0 * (c.experts_per_token * plan.expert_inter + plan.shared_inter))
        optimizer: Number = 0.0
        if phase == "train":
            saved = self._saved_per_token(plan)
            activations = tokens * (c.layers * saved * act + 4.0 * plan.vocab)
            optimizer = per_chip * (act + ADAM_STATE_BYTES)
        else:
            logits = tokens if phase == "forward" else b
            live = 2.0 * c.hidden + max(qkv + plan.heads * hd, ffn)
            activations = (tokens * live + logits * plan.vocab) * act
        return Footprint(weights, kv_cache, activations, optimizer)

    def _saved_per_token(self, plan: Plan) -> float:
        """Elements one layer keeps per token for its backward (no recomputation;
        FlashAttention stores no scores): the residual stream and norm outputs (4·hidden;
        1/tp of them under sequence parallelism), Q, K, V, the attention output and the MLP's
        intermediates (Korthikanti et al. 2022's accounting, section 4.1, without dropout)."""
        c = self.config
        hd, vd = c.head_dim or 0, c.v_head_dim or 0
        qkv = plan.heads * hd + plan.kv_heads * (hd + vd)
        ffn = 0.0 if c.moe_layers == c.layers else (
            3.0 if c.mlp == "gated" else 2.0) * plan.inter
        if c.is_moe:
            ffn = max(ffn, 3.0 * (c.experts_per_token * plan.expert_inter + plan.shared_inter))
        shards = plan.tp if plan.sp else 1  # sequence parallelism splits the replicated ones
        return float(4.0 * c.hidden / shards + qkv + plan.heads * vd + ffn + (
            c.experts_per_token * c.hidden if c.is_moe else 0.0))

    # -- internals -------------------------------------------------------------------------
