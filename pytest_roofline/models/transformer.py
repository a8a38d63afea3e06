"""Transformer language models and encoders, built kernel by kernel from ``ops``.

One layer's kernels are built once and repeated with ``count=layers``, so a model workload
has a few dozen kernels whatever its depth. What each phase reads (per chip):

* **Weights**: every linear layer's weights, once per step. The input embedding table is
  never read in full, only the rows of the step's tokens (a gather); the lm_head reads its
  whole [hidden, vocab] matrix (for tied embeddings, that matrix is the table).
* **KV cache**: decode reads ``context`` positions of K and V per sequence, with the KV head
  count, in ``kv_dtype`` (with a sliding window of W, the last min(context, W), and the cache
  keeps only those; ``local_layers`` limits the window to some layers); prefill reads the K
  and V it has just written. Latent attention (DeepSeek-V2/V3) caches one latent of
  kv_lora_rank + qk_rope_head_dim per position and layer instead (see ``_mla_ops``).
* **Activations**: each kernel reads its inputs and writes its outputs once (see ``ops``).

Fusion follows :mod:`pytest_roofline.fusion`. With ``fusion="epilogue"`` (the default, what
inference engines and compilers do) the residual add runs in the next norm, the MLP's
activation (GELU, or the SwiGLU/GeGLU gate act(gate)·up) in the epilogue of the up/gate
projection (per expert for a mixture of experts, and in the shared experts' projection),
rotary embeddings and biases in the neighbouring kernels. ``fusion="none"`` is eager PyTorch:
each residual add (two a layer in a parallel block) and each activation is a kernel of its
own, reading and writing off-chip memory. Either way attention is FlashAttention-style
(``fused=False`` for the unfused form), and these tensors are handed straight to their only
reader (kept on chip where they fit, see the fusion module): a sequential block's
attention-norm output to qkv_proj (not in a parallel block, where the MLP reads it too), the
MLP norm's output to gate/up (when every layer runs that MLP), the attention output to o_proj
(one length, FlashAttention-style; not through the absorbed latent path's per-head v_up), the
activated intermediate to down_proj (per expert too); in latent attention q_a_proj's output
to q_a_norm and on to q_b_proj. Nothing else is assumed kept.

Mixed lengths: ``prefill``, ``decode`` and ``forward`` take one length for every sequence, or
a list (or 1-D array) of per-sequence lengths, one per sequence of the batch (prompt lengths
for prefill and forward, cached contexts for decode). Padding-free by default (as serving
engines batch): linear layers see the sum of the lengths, attention scores each sequence's
own causal pairs and reads its own context, the KV cache holds each sequence's own positions.
``padded=True`` charges the padded batch instead: every sequence at the longest length.

Quantization: ``weight_dtype`` applies to the linear
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
footprint are per chip. A training step adds sequence parallelism by default
(:mod:`pytest_roofline.models.training`).

Expert parallelism over ``ep`` chips (decode and prefill of a mixture of experts, as DeepSeek
serves V3): every chip holds the attention, the dense layers, the shared experts, the
embedding and the lm_head whole, and E/ep of the routed experts; the batch is spread over the
chips (each runs attention for batch/ep sequences, data-parallel), and each layer sends every
token to the chips of its k experts and back (two all-to-alls of tokens x k x hidden, (ep-1)/ep
of it over the links). With uniform routing each chip computes as many (token, expert) pairs
as its own tokens make, on the experts of its own that the whole step touches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import dtypes
from .. import fusion as _fusion
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
    input_dtype: str | None = None  # the input's precision when not the activations' (a cache)


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
    shared_inter: int = 0
    absorb: bool = False  # latent attention: decode with the up-projections absorbed
    ep: int = 1  # expert parallelism (data-parallel attention, experts split over ep chips)
    fusion: str = _fusion.MODEL_DEFAULT
    sp: bool = False  # sequence parallelism over the tp chips (training)


#: (sequences, q_len, kv_len) of one length of a batch; a mixed-length batch has several.
_Group = tuple[Number, int, int]


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

    def _expert_parallel(self, plan: _Plan, ep: object) -> _Plan:
        """*plan* over ``ep`` chips of expert parallelism (checked)."""
        chips = size(ep, "ep")
        if chips == 1:
            return plan
        c = self.config
        if not c.is_moe:
            raise WorkloadError(f"ep={chips}: {self.name} has no experts to spread; use tp")
        if plan.tp > 1:
            raise WorkloadError(f"ep={chips} with tp={plan.tp} is not modelled: expert "
                                f"parallelism here runs attention data-parallel, one chip "
                                f"per replica")
        if c.experts % chips:
            raise WorkloadError(f"ep={chips} must divide {self.name}'s experts={c.experts}")
        return replace(plan, ep=chips)

    # -- phases ----------------------------------------------------------------------------

    def decode(self, batch: object, context: object, *, tp: object = 1, dtype: object = "bf16",
               weight_dtype: object = None, kv_dtype: object = None, fused: bool = True,
               link: str | None = None, link_count: int | None = None,
               absorb: bool = True, ep: object = 1, fusion: str = _fusion.MODEL_DEFAULT,
               padded: bool = False, overlap: str = "none") -> Workload:
        """One decode step: one new token for each of *batch* sequences, each attending to
        *context* cached positions (or a list of per-sequence contexts, see the module
        docstring). Knob: the batch (a numpy array sweeps it). ``ep``: expert parallelism;
        ``fusion``: "epilogue" or "none" (see the module docstring); ``overlap="full"``: the
        collectives hidden behind the matrix work (:func:`pytest_roofline.overlapped`).

        Latent attention decodes from the latent cache with the key and value
        up-projections absorbed into the query and the output (``absorb=True``, as serving
        engines run it: one KV head of kv_lora_rank + qk_rope_head_dim); ``absorb=False``
        up-projects the whole cached context to per-head K and V every step."""
        self._need("decoder", "decode")
        if not isinstance(absorb, bool):
            raise WorkloadError(f"decode: absorb must be True or False, got {absorb!r}")
        if not absorb and not self.config.is_mla:
            raise WorkloadError(f"decode: absorb=False applies to latent attention only; "
                                f"{self.name} has no kv_lora_rank")
        lengths = _lengths(context, batch, padded, "decode: context")
        plan = replace(self._expert_parallel(
            self._plan(tp, dtype, weight_dtype, kv_dtype, fused, link, link_count, fusion), ep),
            absorb=absorb and self.config.is_mla)
        if lengths is not None:
            return _overlap(self._mixed("decode", plan, lengths, True, False), overlap, "decode")
        b = sweep_size(batch, "decode: batch")
        ctx = size(context, "decode: context")
        self._check_positions(ctx, "decode: context")
        name = self._title("decode", f"batch={show(b)}, context={ctx}", plan)
        local = b / plan.ep  # expert parallelism: each chip decodes its share of the batch
        kernels = self._inference(plan, [(local, 1, ctx)], True, local)
        footprint = self._footprint(plan, [(ctx, local)], "decode").total

        def build(x: int) -> Workload:
            return self.decode(x, ctx, tp=tp, dtype=dtype, weight_dtype=weight_dtype,
                               kv_dtype=kv_dtype, fused=fused, link=link,
                               link_count=link_count, absorb=absorb, ep=ep, fusion=fusion,
                               overlap=overlap)

        return _overlap(self._workload(kernels, footprint, name, b, build), overlap, "decode")

    def prefill(self, batch: object, seq: object, *, tp: object = 1, dtype: object = "bf16",
                weight_dtype: object = None, kv_dtype: object = None, fused: bool = True,
                all_logits: bool = False, link: str | None = None,
                link_count: int | None = None, ep: object = 1,
                fusion: str = _fusion.MODEL_DEFAULT, padded: bool = False,
                overlap: str = "none") -> Workload:
        """Prefill of *batch* prompts of *seq* tokens (or a list of per-prompt lengths; causal),
        writing the KV cache. Logits of the last token per sequence only, unless
        ``all_logits``. Knob: the batch. ``ep``: expert parallelism; ``fusion`` and
        ``padded``: see the module docstring; ``overlap``: as :meth:`decode`."""
        self._need("decoder", "prefill")
        if not isinstance(all_logits, bool):
            raise WorkloadError(f"prefill: all_logits must be True or False, got "
                                f"{all_logits!r}")
        lengths = _lengths(seq, batch, padded, "prefill: seq")
        plan = self._expert_parallel(
            self._plan(tp, dtype, weight_dtype, kv_dtype, fused, link, link_count, fusion), ep)
        if lengths is not None:
            return _overlap(self._mixed("prefill", plan, lengths, True, all_logits), overlap,
                            "prefill")
        b = sweep_size(batch, "prefill: batch")
        s = size(seq, "prefill: seq")
        self._check_positions(s, "prefill: seq")
        name = self._title("prefill", f"batch={show(b)}, seq={s}", plan)
        local = b / plan.ep
        kernels = self._inference(plan, [(local, s, s)], True,
                                  local * s if all_logits else local)
        footprint = self._footprint(plan, [(s, local)], "prefill").total

        def build(x: int) -> Workload:
            return self.prefill(x, s, tp=tp, dtype=dtype, weight_dtype=weight_dtype,
                                kv_dtype=kv_dtype, fused=fused, all_logits=all_logits,
                                link=link, link_count=link_count, ep=ep, fusion=fusion,
                                overlap=overlap)

        return _overlap(self._workload(kernels, footprint, name, b, build), overlap, "prefill")

    def forward(self, batch: object, seq: object, *, tp: object = 1, dtype: object = "bf16",
                weight_dtype: object = None, fused: bool = True, link: str | None = None,
                link_count: int | None = None, fusion: str = _fusion.MODEL_DEFAULT,
                padded: bool = False, overlap: str = "none") -> Workload:
        """A full forward pass over *batch* sequences of *seq* tokens (or a list of
        per-sequence lengths), keeping no KV cache: an encoder's inference (bidirectional
        attention, pooler), or a decoder scoring every position (causal, all logits). Knob:
        the batch. ``fusion`` and ``padded``: see the module docstring; ``overlap``: as
        :meth:`decode`."""
        decoder = self.config.architecture == "decoder"
        lengths = _lengths(seq, batch, padded, "forward: seq")
        plan = self._plan(tp, dtype, weight_dtype, None, fused, link, link_count, fusion)
        if lengths is not None:
            return _overlap(self._mixed("forward", plan, lengths, decoder, decoder), overlap,
                            "forward")
        b = sweep_size(batch, "forward: batch")
        s = size(seq, "forward: seq")
        self._check_positions(s, "forward: seq")
        name = self._title("forward", f"batch={show(b)}, seq={s}", plan)
        kernels = self._inference(plan, [(b, s, s)], decoder, b * s if decoder else 0.0)
        footprint = self._footprint(plan, [(s, b)], "forward").total

        def build(x: int) -> Workload:
            return self.forward(x, s, tp=tp, dtype=dtype, weight_dtype=weight_dtype,
                                fused=fused, link=link, link_count=link_count, fusion=fusion,
                                overlap=overlap)

        return _overlap(self._workload(kernels, footprint, name, b, build), overlap, "forward")

    def _mixed(self, phase: str, plan: _Plan, lengths: list[tuple[int, int]], causal: bool,
               all_logits: bool) -> Workload:
        """A phase over sequences of several lengths ((length, how many) pairs): prompt
        lengths for prefill and forward, cached contexts for decode (one new token each).
        Under expert parallelism each chip runs 1/ep of every length's sequences."""
        what = "context" if phase == "decode" else "seq"
        self._check_positions(max(length for length, _ in lengths), f"{phase}: {what}")
        batch = float(sum(n for _, n in lengths))
        local = [(length, n / plan.ep) for length, n in lengths]
        if phase == "decode":
            groups: list[_Group] = [(n, 1, length) for length, n in local]
            logits = batch / plan.ep
        else:
            groups = [(n, length, length) for length, n in local]
            tokens = float(sum(n * length for length, n in local))
            logits = tokens if all_logits else (batch / plan.ep if phase == "prefill" else 0.0)
        sizes = f"batch={show(batch)}, {what}s={_show_lengths(lengths)}"
        name = self._title(phase, sizes, plan)
        footprint = self._footprint(plan, local, phase).total
        kernels = self._inference(plan, groups, causal, logits)
        return Workload(kernels, footprint=footprint, name=name)

    def train_step(self, batch: object, seq: object, *, tp: object = 1, dtype: object = "bf16",
                   link: str | None = None, link_count: int | None = None, dp: object = 1,
                   zero: int = 0, pp: object = 1, microbatches: object = 1,
                   recompute: str = "none", ep: object = 1, overlap: str = "none",
                   dp_link: str | None = None, pp_link: str | None = None,
                   virtual_stages: object = 1, sp: object = None) -> Workload:
        """One training step (forward, backward, Adam update) on *batch* x *seq* tokens, per
        chip, over ``dp x pp x tp`` chips (:mod:`pytest_roofline.models.training` states the
        parallelism, the communication and the footprint; the defaults are one chip).

        Backward of a linear layer [m, k] @ [k, n]: the input gradient [m, n] @ [n, k] and the
        weight gradient [k, m] @ [m, n], each a matmul with the forward's FLOPs, so matmul
        FLOPs are 3x the forward's (the 6·params·tokens rule). Fused attention backward: 2.5x
        the forward FLOPs (it recomputes the scores) and 2x its bytes (reads Q, K, V, O, dO,
        writes dQ, dK, dV). Vector kernels: 2x the forward's FLOPs and bytes. Each
        tensor-parallel all-reduce has a backward twin. Loss: softmax cross-entropy over the
        logits. Optimizer: Adam reading and writing fp32 master weights and both moments
        (24 B/param) plus the gradient read and the weight written in dtype. *batch* is the
        global batch (all data-parallel replicas). *sp*: sequence parallelism over the tp
        chips (default: on whenever tp > 1; see the training module). Knob: the batch. The
        footprint is :meth:`train_footprint`'s; ``Workload.hint`` names the knob when it
        does not fit.
        """
        from . import training as T

        b = sweep_size(batch, "train_step: batch")
        s = size(seq, "train_step: seq")
        par = T.Parallelism.of(dp=dp, zero=zero, pp=pp, microbatches=microbatches,
                               recompute=recompute, tp=tp, ep=ep, overlap=overlap,
                               virtual_stages=virtual_stages, sp=sp)
        plan = self._train_plan(par, dtype, link, link_count)
        self._check_positions(s, "train_step: seq")
        sizes = f"batch={show(b)}, seq={s}"
        if par.label():
            sizes += f", {par.label()}"
        name = self._title("train_step", sizes, plan)
        decoder = self.config.architecture == "decoder"
        local = b / par.dp  # sequences of this chip's replica
        ops = self._ops(plan, [(local, s, s)], decoder, local * s if decoder else 0.0)
        kernels: list[Kernel] = []
        for op in ops:
            kernels.extend(_with_backward(op, plan))
        if decoder:
            kernels.append(softmax_kernel("loss", local * s, float(plan.vocab), plan.act))
        kernels += self._sequence_parallel_wgrad(plan, local * s, decoder)
        if par.recompute != "none":
            kernels += self._recomputed(ops, plan, par.recompute)
        stage = par.bubble / par.pp  # this stage's share, idle slots included
        if stage != 1.0:
            kernels = [k.scaled(stage) for k in kernels]
        per_chip = self._params_per_chip(plan)
        stage_params = per_chip / par.pp
        shard = stage_params / (par.dp if par.zero >= 1 else 1)
        kernels.append(Kernel("optimizer.adam", ADAM_FLOPS * shard,
                              (24.0 + 2.0 * dtypes.ITEMSIZE[plan.act]) * shard, link_bytes=0.0,
                              unit="vector", dtype="fp32"))
        kernels += T.data_parallel(stage_params, par, plan.act, dp_link or link, link_count)
        kernels += T.pipeline(local * s, self.config.hidden, par, plan.act, pp_link or link,
                              link_count)
        footprint = self._train_footprint(plan, par, local, s)
        def build(x: int) -> Workload:
            return self.train_step(x, s, tp=tp, dtype=dtype, link=link, link_count=link_count,
                                   dp=dp, zero=zero, pp=pp, microbatches=microbatches,
                                   recompute=recompute, ep=ep, overlap=overlap,
                                   dp_link=dp_link, pp_link=pp_link,
                                   virtual_stages=virtual_stages, sp=sp)

        workload = self._workload(kernels, footprint.total, name, b, build,
                                  hint=footprint.hint())
        if par.overlap == "full":
            from ..overlap import overlapped

            workload = overlapped(workload)
        return workload

    def train_footprint(self, batch: object, seq: object, *, tp: object = 1,
                        dtype: object = "bf16", dp: object = 1, zero: int = 0, pp: object = 1,
                        microbatches: object = 1, recompute: str = "none",
                        ep: object = 1, virtual_stages: object = 1, sp: object = None) -> Any:
        """Per-chip bytes of :meth:`train_step` with the same settings: a
        :class:`~pytest_roofline.models.training.TrainingFootprint` (weights, gradients,
        optimizer states, activations; ``total``, ``describe()``, ``hint()``)."""
        from . import training as T

        b = sweep_size(batch, "train_footprint: batch")
        s = size(seq, "train_footprint: seq")
        par = T.Parallelism.of(dp=dp, zero=zero, pp=pp, microbatches=microbatches,
                               recompute=recompute, tp=tp, ep=ep,
                               virtual_stages=virtual_stages, sp=sp)
        plan = self._train_plan(par, dtype, None, None)
        return self._train_footprint(plan, par, b / par.dp, s)

    def _train_plan(self, par: Any, dtype: object, link: str | None,
                    link_count: int | None) -> _Plan:
        chunks, most = par.pp * par.virtual_stages, self.config.layers + 2
        if chunks > most:  # a chunk holds a layer, or the embedding or the output layer alone
            raise WorkloadError(f"train_step: pp={par.pp} x virtual_stages="
                                f"{par.virtual_stages} = {chunks} pipeline chunks, but "
                                f"{self.name} has {self.config.layers} layers: each chunk holds "
                                f"at least one, or the embedding or the output layer alone; "
                                f"allowed pp x virtual_stages <= {most}")
        plan = replace(self._plan(par.tp, dtype, None, None, True, link, link_count),
                             sp=par.sp and par.tp > 1)
        if par.ep > 1:
            if not self.config.is_moe:
                raise WorkloadError(f"train_step: ep={par.ep}: {self.name} has no experts to "
                                    f"spread; use tp or dp")
            plan = self._expert_parallel(plan, par.ep)
        return plan

    def _train_footprint(self, plan: _Plan, par: Any, local: Number, seq: int) -> Any:
        from . import training as T

        c = self.config
        per_chip = self._params_per_chip(plan)
        layer = self._linear_params_per_chip(plan) / c.layers
        return T.footprint(params=per_chip, layer_params=layer, layers=c.layers,
                           saved_per_token=self._saved_per_token(plan), hidden=c.hidden,
                           vocab=plan.vocab, tokens=local * float(seq), p=par, dtype=plan.act)

    def _recomputed(self, ops: list[Kernel | _Linear], plan: _Plan,
                    mode: str) -> list[Kernel]:
        """The forward kernels run again for the backward: every layer's (``"full"``), or
        the attention core's (``"selective"``); never the embedding, lm_head or loss."""
        out: list[Kernel] = []
        for op in ops:
            kernel = _materialize(op, plan) if isinstance(op, _Linear) else op
            if kernel.name.startswith(("embedding", "lm_head")) or (
                    mode == "selective" and not kernel.name.startswith("attention")):
                continue
            out.append(_rename(kernel, f"recompute.{kernel.name}"))
        return out

    # -- footprint -------------------------------------------------------------------------

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
        plan = self._expert_parallel(
            self._plan(tp, dtype, weight_dtype, kv_dtype, True, None, None), ep)
        if phase in ("forward", "train") and plan.ep > 1:
            raise WorkloadError(f"footprint: ep={plan.ep} is modelled for decode and prefill")
        return self._footprint(plan, [(ctx, b / plan.ep)], phase)

    def _footprint(self, plan: _Plan, lengths: Sequence[tuple[int, Number]],
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

    def _saved_per_token(self, plan: _Plan) -> float:
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
              fused: bool, link: str | None, link_count: int | None,
              fusion: object = _fusion.MODEL_DEFAULT) -> _Plan:
        c = self.config
        chips = size(tp, "tp")
        policy = _fusion.policy(fusion)
        if not isinstance(fused, bool):
            raise WorkloadError(f"fused must be True or False, got {fused!r}")
        if link is not None and not isinstance(link, str):
            raise WorkloadError(f"link must be a link name such as 'nvlink', or None, got "
                                f"{link!r}")
        lc = None if link_count is None else size(link_count, "link_count")
        act = precision(dtype, "dtype")
        weight = (c.weight_dtype or act) if weight_dtype is None else precision(
            weight_dtype, "weight_dtype")
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
        if c.shared_width % chips:
            raise WorkloadError(f"tp={chips} must divide {self.name}'s shared experts' width "
                                f"{c.shared_width}")
        return _Plan(chips, act, weight, kv, compute, c.heads // chips,
                     max(1, kv_heads // chips), c.intermediate // chips,
                     c.expert_intermediate // chips, -(-c.vocab // chips), fused, link, lc,
                     c.shared_width // chips, fusion=policy)

    def _title(self, phase: str, sizes: str, plan: _Plan) -> str:
        parts = [sizes, plan.act]
        if plan.weight != plan.act:
            parts.append(f"{plan.weight} weights")
        if plan.kv != plan.act:
            parts.append(f"{plan.kv} kv")
        if plan.tp > 1:
            parts.append(f"tp={plan.tp}")
        if plan.ep > 1:
            parts.append(f"ep={plan.ep}")
        if plan.fusion != _fusion.MODEL_DEFAULT:
            parts.append(f"fusion={plan.fusion}")
        return f"{self.name} {phase}({', '.join(parts)})"

    def _workload(self, kernels: list[Kernel], footprint: Number, name: str, batch: Number,
                  build: Callable[[int], Workload], hint: str = "") -> Workload:
        knob = None if is_array(batch) else Knob("batch", int(batch), build)
        return Workload(kernels, footprint=footprint, name=name, knob=knob, hint=hint)

    def _inference(self, plan: _Plan, groups: Sequence[_Group], causal: bool,
                   logits: Number) -> list[Kernel]:
        kernels: list[Kernel] = []
        for op in self._ops(plan, groups, causal, logits):
            kernels.append(_materialize(op, plan) if isinstance(op, _Linear) else op)
        return _fuse(kernels, plan.fusion, self.config.parallel_block)

    def _ops(self, plan: _Plan, groups: Sequence[_Group], causal: bool,
             logits: Number) -> list[Kernel | _Linear]:
        """The forward pass as kernels and linear layers, layers folded into counts. *groups*:
        (sequences, q_len, kv_len), one per length of the batch."""
        c = self.config
        h, L = c.hidden, float(c.layers)
        act, item = plan.act, dtypes.ITEMSIZE[plan.act]
        batch: Number = sum(n for n, _, _ in groups)
        tokens: Number = sum(n * q for n, q, _ in groups)
        eager = plan.fusion == "none"  # residual adds of their own, not in the next norm
        tables = 1 + (c.position == "learned") + (c.token_types > 0)
        ops: list[Kernel | _Linear] = [
            Kernel("embedding", (tables - 1) * tokens * h, (tables + 1) * tokens * h * item,
                   unit="vector", dtype=act)]
        ops += self._all_reduce("embedding", tokens, 1.0, plan)
        # sequence parallelism: what runs between the blocks' matmuls (norms, residual adds)
        # runs on this chip's 1/tp of the tokens (Korthikanti et al. 2022)
        seq: Number = tokens / plan.tp if plan.sp else tokens
        if c.embedding_norm:
            ops.append(norm_kernel("embedding_norm", c.norm, seq, h, act))
        # a parallel block adds the attention and the MLP outputs to the residual: two adds
        ops += _residual_add("attn_residual", seq, h, act, L * (1 + c.parallel_block), eager)
        ops.append(norm_kernel("attn_norm", c.norm, seq, h, act, residual=not eager,
                               count=L))
        ops += self._all_gather("block" if c.parallel_block else "attn", tokens, L, plan)
        ops += self._attention_ops(plan, groups, causal)
        if not c.parallel_block:
            ops += self._all_reduce("attn", tokens, L, plan)
        if c.block_norms >= 2:
            ops += _residual_add("mlp_residual", seq, h, act, L, eager)
            ops.append(norm_kernel("mlp_norm", c.norm, seq, h, act, residual=not eager,
                                   count=L))
            ops += self._all_gather("mlp", tokens, L, plan)
        if c.block_norms > 2:  # Gemma 2/3: a norm after attention and after the MLP too
            ops.append(norm_kernel("post_norms", c.norm, seq, h, act,
                                   count=L * (c.block_norms - 2)))
        dense = float(c.layers - c.moe_layers)
        if dense:
            ops += self._mlp(plan, tokens, dense)
        if c.moe_layers:
            ops += self._moe(plan, tokens, float(c.moe_layers))
        ops += self._all_reduce("block" if c.parallel_block else "mlp", tokens, L, plan)
        if c.architecture == "decoder":
            ops += _residual_add("final_residual", seq, h, act, 1.0, eager)
            ops.append(norm_kernel("final_norm", c.norm, seq, h, act, residual=not eager))
        if c.pooler:
            ops += [_Linear("pooler", batch, h, h, 1.0, False),
                    elementwise_kernel("pooler.tanh", batch * h, 1, 1, 1.0, act)]
        if is_array(logits) or logits > 0:
            ops += self._all_gather("lm_head.input", logits, 1.0, plan)
            ops.append(_Linear("lm_head", logits, h, plan.vocab, 1.0, False))
            if plan.tp > 1:
                ops.append(collective_kernel("all_gather", "lm_head.all_gather",
                                             logits * c.vocab, plan.tp, act, plan.link,
                                             plan.link_count))
        return ops

    def _all_reduce(self, where: str, tokens: Number, count: float,
                    plan: _Plan) -> list[Kernel | _Linear]:
        """The sum of the tp chips' partial [tokens, hidden] outputs at *where*: an
        all-reduce, or under sequence parallelism a reduce-scatter (each chip keeps its 1/tp
        of the tokens; the same bytes a chip sends, half the all-reduce's steps)."""
        if plan.tp == 1:
            return []
        kind = "reduce_scatter" if plan.sp else "all_reduce"
        return [collective_kernel(kind, f"{where}.{kind}", tokens * self.config.hidden,
                                  plan.tp, plan.act, plan.link, plan.link_count, count)]

    def _all_gather(self, where: str, tokens: Number, count: float,
                    plan: _Plan) -> list[Kernel | _Linear]:
        """Under sequence parallelism, the [tokens, hidden] input of the tensor-parallel
        matmuls at *where* gathered from the tp chips' shards of the tokens."""
        if not plan.sp:
            return []
        return [collective_kernel("all_gather", f"{where}.all_gather",
                                  tokens * self.config.hidden, plan.tp, plan.act, plan.link,
                                  plan.link_count, count)]

    def _sequence_parallel_wgrad(self, plan: _Plan, tokens: Number,
                                 decoder: bool) -> list[Kernel]:
        """Sequence parallelism keeps 1/tp of each gathered matmul input; the backward
        gathers it again for the weight gradient (Korthikanti et al. 2022, section 4.2.2):
        one all-gather per gathered input of the forward."""
        if not plan.sp:
            return []
        c = self.config
        inputs = [("block" if c.parallel_block else "attn", float(c.layers))]
        if c.block_norms >= 2:
            inputs.append(("mlp", float(c.layers)))
        if decoder:
            inputs.append(("lm_head.input", 1.0))
        out: list[Kernel] = []
        for where, count in inputs:
            out += [_rename(k, f"{k.name}.wgrad") for k in self._all_gather(
                where, tokens, count, plan) if isinstance(k, Kernel)]
        return out

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
        e, k, ep = float(c.experts), float(c.experts_per_token), plan.ep
        # this chip's E/ep experts, among those the step's tokens on all ep chips touch; with
        # uniform routing a chip computes as many (token, expert) pairs as its tokens make
        touched = e / ep * (1.0 - (1.0 - k / e) ** (tokens * ep))
        per_expert = tokens * k / touched
        ops: list[Kernel | _Linear] = [
            _Linear("router", tokens, h, c.experts, L, False),
            softmax_kernel("router.softmax_topk", tokens, e, act, L)]
        if ep > 1:
            ops.append(collective_kernel("all_to_all", "experts.dispatch", tokens * k * h, ep,
                                         act, plan.link, plan.link_count, L))
        ops += [
            _Linear("experts.gate_up_proj", per_expert, h, 2 * inter, L * touched, True),
            # per touched expert, like the projections around it (so it fuses into them)
            elementwise_kernel("experts.act", per_expert * inter, 2, 1, GLU_FLOPS, act,
                               L * touched),
            _Linear("experts.down_proj", per_expert, inter, h, L * touched, True)]
        if ep > 1:
            ops.append(collective_kernel("all_to_all", "experts.combine_all_to_all",
                                         tokens * k * h, ep, act, plan.link, plan.link_count, L))
        ops.append(elementwise_kernel("experts.combine", tokens * h, k, 1, 2.0 * k, act, L))
        if c.shared_expert_gate:
            ops.append(_Linear("shared.gate", tokens, h, 1, L, False))
        if c.shared_experts:
            shared = plan.shared_inter
            ops += [_Linear("shared.gate_up_proj", tokens, h, 2 * shared, L, True),
                    elementwise_kernel("shared.act", tokens * shared, 2, 1, GLU_FLOPS, act, L),
                    _Linear("shared.down_proj", tokens, shared, h, L, True)]
        return ops

    def _attention_ops(self, plan: _Plan, groups: Sequence[_Group],
                       causal: bool) -> list[Kernel | _Linear]:
        """Projections and attention of every layer; windowed layers apart from global ones;
        attention per length of a mixed-length batch (each sequence its own pairs)."""
        c = self.config
        if c.is_mla:
            return self._mla_ops(plan, groups, causal)
        h, hd, vd, L = c.hidden, c.head_dim or 0, c.v_head_dim or 0, float(c.layers)
        tokens: Number = sum(n * q for n, q, _ in groups)
        local = float(c.windowed_layers) if causal else 0.0
        ops: list[Kernel | _Linear] = [
            _Linear("qkv_proj", tokens, h, plan.heads * hd + plan.kv_heads * (hd + vd), L, True)]
        for name, count, window in (("attention", L - local, None),
                                    ("attention.local", local, c.sliding_window)):
            if count:
                for n, q_len, kv_len in groups:
                    ops += attention_kernels(
                        _group_name("attention" if local == L else name, groups, kv_len), n,
                        q_len, kv_len, plan.heads, plan.kv_heads, hd, causal, plan.fused,
                        plan.act, plan.kv, count=count, window=window, v_head_dim=vd)
        ops.append(_Linear("o_proj", tokens, plan.heads * vd, h, L, True))
        return ops

    def _mla_ops(self, plan: _Plan, groups: Sequence[_Group],
                 causal: bool) -> list[Kernel | _Linear]:
        """Multi-head latent attention (DeepSeek-V2/V3) of every layer.

        The latent (kv_lora_rank) and the rotary key (qk_rope_head_dim) are what the cache
        keeps. Absorbed (decode's default): queries are multiplied into the latent space
        (q_absorb, the key half of kv_b_proj), attention runs as one KV head of kv_lora_rank +
        qk_rope_head_dim whose first kv_lora_rank columns are V, read once, and v_up (the value
        half of kv_b_proj) brings each head back to v_head_dim. Not absorbed (prefill, or
        decode with absorb=False): kv_b_proj up-projects every cached position to per-head K
        and V, then multi-head attention with head_dim for Q·Kᵀ and v_head_dim for P·V."""
        c = self.config
        h, hd, vd, L, act = c.hidden, c.head_dim or 0, c.v_head_dim or 0, float(c.layers), plan.act
        kvl, rope, heads = c.kv_lora_rank or 0, c.qk_rope_head_dim, plan.heads
        tokens: Number = sum(n * q for n, q, _ in groups)
        ops: list[Kernel | _Linear] = []
        if c.q_lora_rank:
            ops += [_Linear("q_a_proj", tokens, h, c.q_lora_rank, L, True),
                    norm_kernel("q_a_norm", c.norm, tokens, c.q_lora_rank, act, count=L),
                    _Linear("q_b_proj", tokens, c.q_lora_rank, heads * hd, L, True)]
        else:
            ops.append(_Linear("q_proj", tokens, h, heads * hd, L, True))
        ops += [_Linear("kv_a_proj", tokens, h, kvl + rope, L, True),
                norm_kernel("kv_a_norm", c.norm, tokens, kvl, act, count=L)]
        if plan.absorb:
            ops.append(_Linear("q_absorb", tokens, hd - rope, kvl, L * heads, True))
            for n, q_len, kv_len in groups:
                ops += attention_kernels(_group_name("attention", groups, kv_len), n, q_len,
                                         kv_len, heads, 1, kvl + rope, causal, plan.fused, act,
                                         plan.kv, count=L, v_head_dim=kvl, shared_kv=True)
            ops.append(_Linear("v_up", tokens, kvl, vd, L * heads, True))
        else:
            # decode up-projects the cache (in its precision); prefill the K and V just made
            cached = plan.kv if groups[0][1] < groups[0][2] else act
            ops.append(_Linear("kv_b_proj", sum(n * kv for n, _, kv in groups), kvl,
                               heads * (hd - rope + vd), L, True, cached))
            for n, q_len, kv_len in groups:
                ops += attention_kernels(_group_name("attention", groups, kv_len), n, q_len,
                                         kv_len, heads, heads, hd, causal, plan.fused, act, act,
                                         count=L, v_head_dim=vd)
        ops.append(_Linear("o_proj", tokens, heads * vd, h, L, True))
        return ops

    def _linear_params_per_chip(self, plan: _Plan) -> float:
        """Weights of the blocks' linear layers on one chip (the ones weight_dtype applies to)."""
        c = self.config
        attention = self._attention_weights(plan.heads, plan.kv_heads)
        dense, moe = self._mlp_weights(plan.inter, plan.expert_inter, plan.shared_inter,
                                       self.config.experts // plan.ep)
        return float(c.layers * attention + (c.layers - c.moe_layers) * dense
                     + c.moe_layers * moe)

    def _params_per_chip(self, plan: _Plan) -> float:
        parts = self.params_breakdown()
        vocab_parallel = (parts["embedding"] + parts["lm_head"]) / plan.tp
        replicated = sum(v for key, v in parts.items() if key not in (
            "embedding", "lm_head", "attention", "mlp"))
        return self._linear_params_per_chip(plan) + vocab_parallel + replicated


def _overlap(workload: Workload, overlap: object, phase: str) -> Workload:
    """``overlap=`` of a phase (see :mod:`pytest_roofline.overlap`)."""
    if overlap == "none":
        return workload
    from ..overlap import apply

    return apply(workload, overlap, phase)


def _materialize(op: _Linear, plan: _Plan) -> Kernel:
    weight = plan.weight if op.quantized else plan.act
    compute = plan.compute if op.quantized else plan.act
    return matmul_kernel(op.name, op.m, op.k, op.n, op.input_dtype or plan.act, weight,
                         plan.act, compute, op.count)


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
        return [op, Kernel(f"{op.name}.bwd", op.flops * 2.5, op.bytes * 2.0, unit="matrix",
                           dtype=op.dtype, count=op.count)]
    return [op, Kernel(f"{op.name}.bwd", op.flops * 2.0, op.bytes * 2.0, unit="vector",
                       dtype=op.dtype, count=op.count)]


def _positive(value: Any) -> bool:
    return bool(is_array(value) or value > 0)


def _rename(kernel: Kernel, name: str) -> Kernel:
    return Kernel(name, kernel.flops, kernel.bytes, link_bytes=kernel.link_bytes,
                  unit=kernel.unit, dtype=kernel.dtype, link=kernel.link,
                  link_count=kernel.link_count, count=kernel.count,
                  link_steps=kernel.link_steps)


#: (producer, consumer) names of the tensors a layer hands straight to their only reader.
_HANDOFFS = frozenset({
    ("attn_norm", "qkv_proj"), ("attention", "o_proj"), ("mlp_norm", "gate_up_proj"),
    ("mlp_norm", "up_proj"), ("gate_up_proj", "act"), ("up_proj", "act"), ("act", "down_proj"),
    ("shared.gate_up_proj", "shared.act"), ("shared.act", "shared.down_proj"),
    ("experts.gate_up_proj", "experts.act"), ("experts.act", "experts.down_proj"),
    ("q_a_proj", "q_a_norm"), ("q_a_norm", "q_b_proj")})
_PRODUCERS = frozenset(producer for producer, _ in _HANDOFFS)
#: (producer, elementwise consumer) pairs that epilogue fusion runs as one.
_EPILOGUES = frozenset({("gate_up_proj", "act"), ("up_proj", "act"),
                        ("shared.gate_up_proj", "shared.act"),
                        ("experts.gate_up_proj", "experts.act")})


def _fuse(kernels: list[Kernel], policy: str, parallel_block: bool) -> list[Kernel]:
    """Apply the fusion model to one layer's kernels (see the module docstring): each
    activation in its projection's epilogue (``policy="epilogue"``), then the handed tensors
    marked. A producer and its reader must run equally often (a norm feeding dense and MoE
    layers hands nothing), and a parallel block's attention norm is read by the MLP too."""
    out: list[Kernel] = []
    for kernel in kernels:
        if policy == "epilogue" and out and (out[-1].name, kernel.name) in _EPILOGUES:
            out[-1], kernel = _fusion.epilogue(out[-1], kernel)
        out.append(kernel)
    for i in range(len(out) - 1):
        if out[i].name not in _PRODUCERS:
            continue
        j = i + 1
        if out[j].name == "attention.softmax" and j + 1 < len(out):
            j += 1  # fused attention's softmax: vector work inside the attention kernel
        first, second = out[i], out[j]
        if ((first.name, second.name) in _HANDOFFS and second.epilogue_of is None
                and not (parallel_block and first.name == "attn_norm")
                and _fusion._same(first.count, second.count) and _positive(first.out_bytes)):
            out[i], out[j] = _fusion.handoff(first, second)
    return out


def _residual_add(name: str, tokens: Number, hidden: int, act: str, count: float,
                  eager: bool) -> list[Kernel | _Linear]:
    """The residual add as its own kernel (eager: read two, write one), or nothing (run in
    the next norm)."""
    if not eager:
        return []
    return [elementwise_kernel(name, tokens * hidden, 2, 1, 1.0, act, count)]


def _group_name(name: str, groups: Sequence[_Group], kv_len: int) -> str:
    return f"{name}[kv={kv_len}]" if len(groups) > 1 else name


def _lengths(value: object, batch: object, padded: object,
             what: str) -> list[tuple[int, int]] | None:
    """Per-sequence lengths as sorted (length, how many) pairs, or None for one length."""
    if not isinstance(padded, bool):
        raise WorkloadError(f"padded must be True or False, got {padded!r}")
    if isinstance(value, (list, tuple)) or (is_array(value) and getattr(value, "ndim", 0) == 1):
        values: Sequence[object] = list(value)  # type: ignore[call-overload]
        if not values:
            raise WorkloadError(f"{what}: give at least one sequence length, got an empty "
                                f"{type(value).__name__}")
        items = [size(v, f"{what}[{i}]") for i, v in enumerate(values)]
        phase = what.split(":")[0]
        if is_array(batch) or size(batch, f"{phase}: batch") != len(items):
            raise WorkloadError(f"{what}: {len(items)} per-sequence lengths for batch="
                                f"{batch!r}; the batch must be the number of lengths")
        if padded:
            return [(max(items), len(items))]
        counts: dict[int, int] = {}
        for length in items:
            counts[length] = counts.get(length, 0) + 1
        return sorted(counts.items())
    if padded:
        raise WorkloadError(f"{what}: padded=True needs a list of per-sequence lengths, got "
                            f"{value!r}")
    return None


def _show_lengths(lengths: list[tuple[int, int]]) -> str:
    return "[" + ", ".join(f"{length}x{n}" if n > 1 else str(length)
                           for length, n in lengths) + "]"
