"""Transformer language models and encoders, built kernel by kernel from ``ops``.

One layer's kernels are built once and repeated with ``count=layers``, so a model workload
has a few dozen kernels whatever its depth. What each phase reads (per chip):

* **Weights**: every linear layer's weights, once per step. The input embedding table is
  never read in full, only the rows of the step's tokens (a gather); the lm_head reads its
  whole [hidden, vocab] matrix (for tied embeddings, that matrix is the table).
* **KV cache**: decode reads ``context`` positions of K and V per sequence, with the KV head
  count, in ``kv_dtype`` (with a sliding window of W, the last min(context, W), and the cache
  keeps only those); prefill reads the K and V it has just written.
* **Activations**: each kernel reads its inputs and writes its outputs once (see ``ops``).

Fusion assumed (what inference engines do): the residual add is fused into the next norm,
rotary embeddings and biases into the neighbouring kernels, attention is FlashAttention-style
(``fused=False`` for the unfused form). Quantization: ``weight_dtype`` applies to the linear
layers of the blocks (attention, MLP, experts); embeddings, lm_head, router, norms and biases
stay in ``dtype``, as GPTQ/AWQ/FP8 checkpoints keep them. Each linear layer multiplies in the
wider of ``dtype`` and ``weight_dtype`` (``ops.matmul``'s rule). Group scales of quantized
weights are ignored.

Mixture of experts: each token goes to ``experts_per_token`` (k) of E experts. With uniform
routing, a step of T tokens touches E·(1 - (1 - k/E)^T) distinct experts on average, each read
once: about k experts' weights at batch 1, all E once T is large. FLOPs follow the k experts
per token.

Tensor parallelism over ``tp`` chips (Megatron-style): QKV and gate/up are split by columns,
O and down by rows, the vocabulary of embedding and lm_head by rows; each layer then
all-reduces its attention output and its MLP output (T x hidden activations), the embedding
one more, and the logits are all-gathered. Heads and intermediate sizes must divide by tp; KV
heads are split, or replicated when there are fewer of them than chips. The workload and its
footprint are per chip.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import dtypes
from ..errors import WorkloadError
from ..ops._common import precision, show, size, sweep_size
from ..ops.attention import attention_kernels
from ..ops.collectives import collective_kernel
from ..ops.matmul import matmul_kernel, resolve_dtypes
from ..ops.vector import elementwise_kernel, norm_kernel, softmax_kernel
from ..workload import Kernel, Knob, Number, Workload, is_array
from .config import TransformerConfig

#: FLOPs per element of silu(gate)·up (negate, exp, add, divide, multiply).
GLU_FLOPS = 5.0
#: FLOPs per element of GELU, tanh approximation (cube, 2 multiply-adds, tanh, add, 2 multiply).
GELU_FLOPS = 8.0
#: FLOPs per parameter of an Adam(W) update (two moment updates, bias corrections, sqrt,
#: divide, weight decay, step).
ADAM_FLOPS = 15.0
#: fp32 master weights and Adam's two moments: bytes of optimizer state per parameter.
ADAM_STATE_BYTES = 12.0


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


@dataclass(frozen=True)
class _Linear:
    """A linear layer applied to m rows: [m, k] @ [k, n]; ``quantized`` if in weight_dtype."""

    name: str
    m: Number
    k: int
    n: int
    count: Number
    quantized: bool


@dataclass(frozen=True)
class _Plan:
    """Per-chip shapes and the precisions of one call."""

    tp: int
    act: str
    weight: str
    kv: str
    compute: str
    heads: int
    kv_heads: int
    inter: int
    expert_inter: int
    vocab: int
    fused: bool
    link: str | None
    link_count: int | None


class Transformer:
    """A transformer model: exact parameter count, inference phases and a training step."""

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
        h, hd = c.hidden, c.head_dim or 0
        q, kv = c.heads * hd, (c.kv_heads or c.heads) * hd
        attention = h * (q + 2 * kv) + q * h
        if c.is_moe:
            per_expert = 3 * h * c.expert_intermediate
            mlp = (c.experts + c.shared_experts) * per_expert
        else:
            mlp = (3 if c.mlp == "gated" else 2) * h * c.intermediate
        norm_size = 2 * h if c.norm == "layernorm" else h
        biases = 0
        if c.bias:
            biases = q + 2 * kv + h + (c.intermediate * (2 if c.mlp == "gated" else 1) + h)
        elif c.qkv_bias:
            biases = q + 2 * kv
        parts = {
            "embedding": c.vocab * h,
            "positions": (c.max_positions if c.position == "learned" else 0) * h
            + c.token_types * h,
            "attention": c.layers * attention,
            "mlp": c.layers * mlp,
            "router": c.layers * h * c.experts,
            "norms": c.layers * 2 * norm_size + (norm_size if c.architecture == "decoder" or
                                                 c.embedding_norm else 0),
            "biases": c.layers * biases,
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
        unused = c.layers * (c.experts - c.experts_per_token) * per_expert
        return self.params - unused

    # -- phases ----------------------------------------------------------------------------

    def decode(self, batch: object, context: object, *, tp: object = 1, dtype: object = "bf16",
               weight_dtype: object = None, kv_dtype: object = None, fused: bool = True,
               link: str | None = None, link_count: int | None = None) -> Workload:
        """One decode step: one new token for each of *batch* sequences, each attending to
        *context* cached positions. Knob: the batch (a numpy array sweeps it)."""
        self._need("decoder", "decode")
        b = sweep_size(batch, "decode: batch")
        ctx = size(context, "decode: context")
        plan = self._plan(tp, dtype, weight_dtype, kv_dtype, fused, link, link_count)
        self._check_positions(ctx, "decode: context")
        name = self._title("decode", f"batch={show(b)}, context={ctx}", plan)
        kernels = self._inference(plan, b, 1, ctx, True, b)
        footprint = self._footprint(plan, b, ctx, "decode").total

        def build(x: int) -> Workload:
            return self.decode(x, ctx, tp=tp, dtype=dtype, weight_dtype=weight_dtype,
                               kv_dtype=kv_dtype, fused=fused, link=link,
                               link_count=link_count)

        return self._workload(kernels, footprint, name, b, build)

    def prefill(self, batch: object, seq: object, *, tp: object = 1, dtype: object = "bf16",
                weight_dtype: object = None, kv_dtype: object = None, fused: bool = True,
                all_logits: bool = False, link: str | None = None,
                link_count: int | None = None) -> Workload:
        """Prefill of *batch* prompts of *seq* tokens (causal), writing the KV cache. Logits of
        the last token per sequence only, unless ``all_logits``. Knob: the batch."""
        self._need("decoder", "prefill")
        b = sweep_size(batch, "prefill: batch")
        s = size(seq, "prefill: seq")
        if not isinstance(all_logits, bool):
            raise WorkloadError(f"prefill: all_logits must be True or False, got "
                                f"{all_logits!r}")
        plan = self._plan(tp, dtype, weight_dtype, kv_dtype, fused, link, link_count)
        self._check_positions(s, "prefill: seq")
        name = self._title("prefill", f"batch={show(b)}, seq={s}", plan)
        kernels = self._inference(plan, b, s, s, True, b * s if all_logits else b)
        footprint = self._footprint(plan, b, s, "prefill").total

        def build(x: int) -> Workload:
            return self.prefill(x, s, tp=tp, dtype=dtype, weight_dtype=weight_dtype,
                                kv_dtype=kv_dtype, fused=fused, all_logits=all_logits,
                                link=link, link_count=link_count)

        return self._workload(kernels, footprint, name, b, build)

    def forward(self, batch: object, seq: object, *, tp: object = 1, dtype: object = "bf16",
                weight_dtype: object = None, fused: bool = True, link: str | None = None,
                link_count: int | None = None) -> Workload:
        """A full forward pass over *batch* sequences of *seq* tokens, keeping no KV cache:
        an encoder's inference (bidirectional attention, pooler), or a decoder scoring every
        position (causal, all logits). Knob: the batch."""
        b = sweep_size(batch, "forward: batch")
        s = size(seq, "forward: seq")
        plan = self._plan(tp, dtype, weight_dtype, None, fused, link, link_count)
        self._check_positions(s, "forward: seq")
        name = self._title("forward", f"batch={show(b)}, seq={s}", plan)
        decoder = self.config.architecture == "decoder"
        kernels = self._inference(plan, b, s, s, decoder, b * s if decoder else 0.0)
        footprint = self._footprint(plan, b, s, "forward").total

        def build(x: int) -> Workload:
            return self.forward(x, s, tp=tp, dtype=dtype, weight_dtype=weight_dtype,
                                fused=fused, link=link, link_count=link_count)

        return self._workload(kernels, footprint, name, b, build)

    def train_step(self, batch: object, seq: object, *, tp: object = 1, dtype: object = "bf16",
                   link: str | None = None, link_count: int | None = None) -> Workload:
        """One training step (forward, backward, Adam update) on *batch* x *seq* tokens.

        Backward of a linear layer [m, k] @ [k, n]: the input gradient [m, n] @ [n, k] and the
        weight gradient [k, m] @ [m, n], each a matmul with the forward's FLOPs, so matmul
        FLOPs are 3x the forward's (the 6·params·tokens rule). Fused attention backward: 2.5x
        the forward FLOPs (it recomputes the scores) and 2x its bytes (reads Q, K, V, O, dO,
        writes dQ, dK, dV). Vector kernels: 2x the forward's FLOPs and bytes. Each
        tensor-parallel all-reduce has a backward twin. Loss: softmax cross-entropy over the
        logits. Optimizer: Adam reading and writing fp32 master weights and both moments
        (24 B/param) plus the gradient read and the weight written in dtype. Knob: the batch.
        """
        b = sweep_size(batch, "train_step: batch")
        s = size(seq, "train_step: seq")
        plan = self._plan(tp, dtype, None, None, True, link, link_count)
        self._check_positions(s, "train_step: seq")
        name = self._title("train_step", f"batch={show(b)}, seq={s}", plan)
        decoder = self.config.architecture == "decoder"
        ops = self._ops(plan, b, s, s, decoder, b * s if decoder else 0.0)
        kernels: list[Kernel] = []
        for op in ops:
            kernels.extend(_with_backward(op, plan))
        if decoder:
            kernels.append(softmax_kernel("loss", b * s, float(plan.vocab), plan.act))
        per_chip = self._params_per_chip(plan)
        kernels.append(Kernel("optimizer.adam", ADAM_FLOPS * per_chip,
                              (24.0 + 2.0 * dtypes.ITEMSIZE[plan.act]) * per_chip, 0.0,
                              "vector", "fp32"))
        footprint = self._footprint(plan, b, s, "train").total

        def build(x: int) -> Workload:
            return self.train_step(x, s, tp=tp, dtype=dtype, link=link, link_count=link_count)

        return self._workload(kernels, footprint, name, b, build)

    # -- footprint -------------------------------------------------------------------------

    def footprint(self, batch: object, context: object, *, phase: str = "decode",
                  tp: object = 1, dtype: object = "bf16", weight_dtype: object = None,
                  kv_dtype: object = None) -> Footprint:
        """Bytes resident per chip while running *phase* ("decode", "prefill", "forward" or
        "train") on *batch* sequences of *context* tokens.

        * weights: per-chip parameters at their precision (see the module docstring);
        * kv_cache: batch·context·layers·2·kv_heads·head_dim·|kv_dtype| (decode, prefill);
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
        plan = self._plan(tp, dtype, weight_dtype, kv_dtype, True, None, None)
        return self._footprint(plan, b, ctx, phase)

    def _footprint(self, plan: _Plan, b: Number, context: int, phase: str) -> Footprint:
        c = self.config
        ctx = float(context)
        hd = c.head_dim or 0
        act = dtypes.ITEMSIZE[plan.act]
        tokens = b if phase == "decode" else b * ctx
        per_chip = self._params_per_chip(plan)
        linear = self._linear_params_per_chip(plan)
        weights = linear * dtypes.ITEMSIZE[plan.weight] + (per_chip - linear) * act
        kv_cache: Number = 0.0
        if phase in ("decode", "prefill"):
            # a sliding window keeps a rolling cache of its last W positions
            kept = ctx if c.sliding_window is None else min(ctx, float(c.sliding_window))
            kv_cache = b * kept * c.layers * 2.0 * plan.kv_heads * hd * dtypes.ITEMSIZE[plan.kv]
        qkv = (plan.heads + 2 * plan.kv_heads) * hd
        if c.is_moe:
            k = c.experts_per_token + c.shared_experts
            ffn = k * 3.0 * plan.expert_inter
        else:
            ffn = (3.0 if c.mlp == "gated" else 2.0) * plan.inter
        optimizer: Number = 0.0
        if phase == "train":
            saved = 4.0 * c.hidden + qkv + plan.heads * hd + ffn + (
                c.experts_per_token * c.hidden if c.is_moe else 0.0)
            activations = tokens * (c.layers * saved * act + 4.0 * plan.vocab)
            optimizer = per_chip * (act + ADAM_STATE_BYTES)
        else:
            logits = tokens if phase == "forward" else b
            live = 2.0 * c.hidden + max(qkv + plan.heads * hd, ffn)
            activations = (tokens * live + logits * plan.vocab) * act
        return Footprint(weights, kv_cache, activations, optimizer)

    # -- internals -------------------------------------------------------------------------

    def _need(self, architecture: str, phase: str) -> None:
        if self.config.architecture != architecture:
            raise WorkloadError(f"{self.name} is an {self.config.architecture}: it has no "
                                f"{phase} phase; use forward(batch, seq)")

    def _check_positions(self, tokens: int, what: str) -> None:
        c = self.config
        if c.position == "learned" and tokens > c.max_positions:
            raise WorkloadError(f"{what}={tokens} exceeds {self.name}'s learned position "
                                f"table of {c.max_positions} positions")

    def _plan(self, tp: object, dtype: object, weight_dtype: object, kv_dtype: object,
              fused: bool, link: str | None, link_count: int | None) -> _Plan:
        c = self.config
        chips = size(tp, "tp")
        if not isinstance(fused, bool):
            raise WorkloadError(f"fused must be True or False, got {fused!r}")
        if link is not None and not isinstance(link, str):
            raise WorkloadError(f"link must be a link name such as 'nvlink', or None, got "
                                f"{link!r}")
        lc = None if link_count is None else size(link_count, "link_count")
        act = precision(dtype, "dtype")
        weight = act if weight_dtype is None else precision(weight_dtype, "weight_dtype")
        kv = act if kv_dtype is None else precision(kv_dtype, "kv_dtype")
        compute = resolve_dtypes(act, act, weight, act)[3]
        kv_heads = c.kv_heads or c.heads
        for label, value in (("heads", c.heads), ("intermediate", c.intermediate)):
            if value % chips:
                raise WorkloadError(f"tp={chips} must divide {self.name}'s {label}={value}")
        if kv_heads % chips and chips % kv_heads:
            raise WorkloadError(f"tp={chips} and {self.name}'s kv_heads={kv_heads}: one must "
                                f"divide the other (KV heads are split or replicated)")
        if c.is_moe and c.expert_intermediate % chips:
            raise WorkloadError(f"tp={chips} must divide {self.name}'s "
                                f"moe_intermediate={c.expert_intermediate}")
        return _Plan(chips, act, weight, kv, compute, c.heads // chips,
                     max(1, kv_heads // chips), c.intermediate // chips,
                     c.expert_intermediate // chips, -(-c.vocab // chips), fused, link, lc)

    def _title(self, phase: str, sizes: str, plan: _Plan) -> str:
        parts = [sizes, plan.act]
        if plan.weight != plan.act:
            parts.append(f"{plan.weight} weights")
        if plan.kv != plan.act:
            parts.append(f"{plan.kv} kv")
        if plan.tp > 1:
            parts.append(f"tp={plan.tp}")
        return f"{self.name} {phase}({', '.join(parts)})"

    def _workload(self, kernels: list[Kernel], footprint: Number, name: str, batch: Number,
                  build: Callable[[int], Workload]) -> Workload:
        knob = None if is_array(batch) else Knob("batch", int(batch), build)
        return Workload(kernels, footprint=footprint, name=name, knob=knob)

    def _inference(self, plan: _Plan, batch: Number, q_len: int, kv_len: int, causal: bool,
                   logits: Number) -> list[Kernel]:
        kernels: list[Kernel] = []
        for op in self._ops(plan, batch, q_len, kv_len, causal, logits):
            kernels.append(_materialize(op, plan) if isinstance(op, _Linear) else op)
        return kernels

    def _ops(self, plan: _Plan, batch: Number, q_len: int, kv_len: int, causal: bool,
             logits: Number) -> list[Kernel | _Linear]:
        """The forward pass as kernels and linear layers, layers folded into counts."""
        c = self.config
        h, hd, L = c.hidden, c.head_dim or 0, float(c.layers)
        act, item = plan.act, dtypes.ITEMSIZE[plan.act]
        tokens = batch * q_len
        tables = 1 + (c.position == "learned") + (c.token_types > 0)
        ops: list[Kernel | _Linear] = [
            Kernel("embedding", (tables - 1) * tokens * h, (tables + 1) * tokens * h * item,
                   0.0, "vector", act)]
        ops += self._all_reduce("embedding.all_reduce", tokens, 1.0, plan)
        if c.embedding_norm:
            ops.append(norm_kernel("embedding_norm", c.norm, tokens, h, act))
        ops += [
            norm_kernel("attn_norm", c.norm, tokens, h, act, residual=True, count=L),
            _Linear("qkv_proj", tokens, h, (plan.heads + 2 * plan.kv_heads) * hd, L, True),
            *attention_kernels("attention", batch, q_len, kv_len, plan.heads, plan.kv_heads,
                               hd, causal, plan.fused, act, plan.kv, count=L,
                               window=c.sliding_window if causal else None),
            _Linear("o_proj", tokens, plan.heads * hd, h, L, True),
            *self._all_reduce("attn.all_reduce", tokens, L, plan),
            norm_kernel("mlp_norm", c.norm, tokens, h, act, residual=True, count=L),
        ]
        ops += self._moe(plan, tokens, L) if c.is_moe else self._mlp(plan, tokens, L)
        ops += self._all_reduce("mlp.all_reduce", tokens, L, plan)
        if c.architecture == "decoder":
            ops.append(norm_kernel("final_norm", c.norm, tokens, h, act, residual=True))
        if c.pooler:
            ops += [_Linear("pooler", batch, h, h, 1.0, False),
                    elementwise_kernel("pooler.tanh", batch * h, 1, 1, 1.0, act)]
        if is_array(logits) or logits > 0:
            ops.append(_Linear("lm_head", logits, h, plan.vocab, 1.0, False))
            if plan.tp > 1:
                ops.append(collective_kernel("all_gather", "lm_head.all_gather",
                                             logits * c.vocab, plan.tp, act, plan.link,
                                             plan.link_count))
        return ops

    def _all_reduce(self, name: str, tokens: Number, count: float,
                    plan: _Plan) -> list[Kernel | _Linear]:
        if plan.tp == 1:
            return []
        return [collective_kernel("all_reduce", name, tokens * self.config.hidden, plan.tp,
                                  plan.act, plan.link, plan.link_count, count)]

    def _mlp(self, plan: _Plan, tokens: Number, L: float) -> list[Kernel | _Linear]:
        h, inter, act = self.config.hidden, plan.inter, plan.act
        if self.config.mlp == "gated":
            return [_Linear("gate_up_proj", tokens, h, 2 * inter, L, True),
                    elementwise_kernel("act", tokens * inter, 2, 1, GLU_FLOPS, act, L),
                    _Linear("down_proj", tokens, inter, h, L, True)]
        return [_Linear("up_proj", tokens, h, inter, L, True),
                elementwise_kernel("act", tokens * inter, 1, 1, GELU_FLOPS, act, L),
                _Linear("down_proj", tokens, inter, h, L, True)]

    def _moe(self, plan: _Plan, tokens: Number, L: float) -> list[Kernel | _Linear]:
        c = self.config
        h, inter, act = c.hidden, plan.expert_inter, plan.act
        e, k = float(c.experts), float(c.experts_per_token)
        touched = e * (1.0 - (1.0 - k / e) ** tokens)
        per_expert = tokens * k / touched
        ops: list[Kernel | _Linear] = [
            _Linear("router", tokens, h, c.experts, L, False),
            softmax_kernel("router.softmax_topk", tokens, e, act, L),
            _Linear("experts.gate_up_proj", per_expert, h, 2 * inter, L * touched, True),
            elementwise_kernel("experts.act", tokens * k * inter, 2, 1, GLU_FLOPS, act, L),
            _Linear("experts.down_proj", per_expert, inter, h, L * touched, True),
            elementwise_kernel("experts.combine", tokens * h, k, 1, 2.0 * k, act, L),
        ]
        if c.shared_experts:
            shared = c.shared_experts * inter
            ops += [_Linear("shared.gate_up_proj", tokens, h, 2 * shared, L, True),
                    elementwise_kernel("shared.act", tokens * shared, 2, 1, GLU_FLOPS, act, L),
                    _Linear("shared.down_proj", tokens, shared, h, L, True)]
        return ops

    def _linear_params_per_chip(self, plan: _Plan) -> float:
        """Weights of the blocks' linear layers on one chip (the ones weight_dtype applies to)."""
        c = self.config
        h, hd = c.hidden, c.head_dim or 0
        attention = h * (plan.heads + 2 * plan.kv_heads) * hd + plan.heads * hd * h
        if c.is_moe:
            mlp = (c.experts + c.shared_experts) * 3 * h * plan.expert_inter
        else:
            mlp = (3 if c.mlp == "gated" else 2) * h * plan.inter
        return float(c.layers * (attention + mlp))

    def _params_per_chip(self, plan: _Plan) -> float:
        parts = self.params_breakdown()
        vocab_parallel = (parts["embedding"] + parts["lm_head"]) / plan.tp
        replicated = sum(v for key, v in parts.items() if key not in (
            "embedding", "lm_head", "attention", "mlp"))
        return self._linear_params_per_chip(plan) + vocab_parallel + replicated


def _materialize(op: _Linear, plan: _Plan) -> Kernel:
    weight = plan.weight if op.quantized else plan.act
    compute = plan.compute if op.quantized else plan.act
    return matmul_kernel(op.name, op.m, op.k, op.n, plan.act, weight, plan.act, compute,
                         op.count)


def _with_backward(op: Kernel | _Linear, plan: _Plan) -> list[Kernel]:
    """A forward kernel and its backward kernels (see Transformer.train_step)."""
    act = plan.act
    if isinstance(op, _Linear):
        return [
            matmul_kernel(op.name, op.m, op.k, op.n, act, act, act, act, op.count),
            matmul_kernel(f"{op.name}.dgrad", op.m, op.n, op.k, act, act, act, act, op.count),
            matmul_kernel(f"{op.name}.wgrad", op.k, op.m, op.n, act, act, act, act, op.count),
        ]
    if _positive(op.link_bytes):
        return [op, _rename(op, f"{op.name}.bwd")]
    if op.unit == "matrix":  # fused attention
        return [op, Kernel(f"{op.name}.bwd", op.flops * 2.5, op.bytes * 2.0, 0.0, "matrix",
                           op.dtype, None, None, op.count)]
    return [op, Kernel(f"{op.name}.bwd", op.flops * 2.0, op.bytes * 2.0, 0.0, "vector",
                       op.dtype, None, None, op.count)]


def _positive(value: Any) -> bool:
    return bool(is_array(value) or value > 0)


def _rename(kernel: Kernel, name: str) -> Kernel:
    return Kernel(name, kernel.flops, kernel.bytes, kernel.link_bytes, kernel.unit, kernel.dtype,
                  kernel.link, kernel.link_count, kernel.count)
