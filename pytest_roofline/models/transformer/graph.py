"""One forward pass of a transformer as kernels: every layer's kernels built once and counted
``layers`` times, with the fusion model applied (see the package docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ... import dtypes
from ...engine import fusion as _fusion
from ...engine.workload import Kernel, Number, is_array
from ...ops import _family
from ...ops._family import GELU_FLOPS, GLU_FLOPS
from ...ops.attention import attention_kernels, backward_kernels
from ...ops.collectives import collective_kernel
from ...ops.matmul import matmul_kernel
from ...ops.vector import distinct_rows, elementwise_kernel, norm_kernel, softmax_kernel
from .options import Group, Plan
from .params import ParameterCounts


@dataclass(frozen=True)
class Linear:
    """A linear layer applied to m rows: [m, k] @ [k, n]; ``quantized`` if in weight_dtype."""

    name: str
    m: Number
    k: int
    n: int
    count: Number
    quantized: bool
    input_dtype: str | None = None  # the input's precision when not the activations' (a cache)



class KernelGraph(ParameterCounts):
    """The kernels of a forward pass (a base of Transformer)."""

    def _inference(self, plan: Plan, groups: Sequence[Group], causal: bool,
                   logits: Number) -> list[Kernel]:
        kernels: list[Kernel] = []
        for op in self._ops(plan, groups, causal, logits):
            kernels.append(materialize(op, plan) if isinstance(op, Linear) else op)
        return _fuse(kernels, plan.fusion, self.config.parallel_block)

    def _ops(self, plan: Plan, groups: Sequence[Group], causal: bool,
             logits: Number) -> list[Kernel | Linear]:
        """The forward pass as kernels and linear layers, layers folded into counts. *groups*:
        (sequences, q_len, kv_len), one per length of the batch."""
        c = self.config
        h, L = c.hidden, float(c.layers)
        act, item = plan.act, dtypes.ITEMSIZE[plan.act]
        batch: Number = sum(n for n, _, _ in groups)
        tokens: Number = sum(n * q for n, q, _ in groups)
        eager = plan.fusion == "none"  # residual adds of their own, not in the next norm
        tables = 1 + (c.position == "learned") + (c.token_types > 0)
        # each table's distinct rows read once (at most its rows), one row a token written
        read = distinct_rows(tokens, float(plan.vocab))
        if c.position == "learned":
            read = read + distinct_rows(tokens, float(c.max_positions))
        if c.token_types > 0:
            read = read + distinct_rows(tokens, float(c.token_types))
        ops: list[Kernel | Linear] = [
            Kernel("embedding", (tables - 1) * tokens * h, (read + tokens) * h * item,
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
            ops += [Linear("pooler", batch, h, h, 1.0, False),
                    elementwise_kernel("pooler.tanh", batch * h, 1, 1, 1.0, act)]
        if is_array(logits) or logits > 0:
            ops += self._all_gather("lm_head.input", logits, 1.0, plan)
            ops.append(Linear("lm_head", logits, h, plan.vocab, 1.0, False))
            if plan.tp > 1:
                ops.append(collective_kernel("all_gather", "lm_head.all_gather",
                                             logits * c.vocab, plan.tp, act, plan.link,
                                             plan.link_count))
        return ops

    def _all_reduce(self, where: str, tokens: Number, count: float,
                    plan: Plan) -> list[Kernel | Linear]:
        """The sum of the tp chips' partial [tokens, hidden] outputs at *where*: an
        all-reduce, or under sequence parallelism a reduce-scatter (each chip keeps its 1/tp
        of the tokens; the same bytes a chip sends, half the all-reduce's steps)."""
        if plan.tp == 1:
            return []
        kind = "reduce_scatter" if plan.sp else "all_reduce"
        return [collective_kernel(kind, f"{where}.{kind}", tokens * self.config.hidden,
                                  plan.tp, plan.act, plan.link, plan.link_count, count)]

    def _all_gather(self, where: str, tokens: Number, count: float,
                    plan: Plan) -> list[Kernel | Linear]:
        """Under sequence parallelism, the [tokens, hidden] input of the tensor-parallel
        matmuls at *where* gathered from the tp chips' shards of the tokens."""
        if not plan.sp:
            return []
        return [collective_kernel("all_gather", f"{where}.all_gather",
                                  tokens * self.config.hidden, plan.tp, plan.act, plan.link,
                                  plan.link_count, count)]

    def _sequence_parallel_wgrad(self, plan: Plan, tokens: Number,
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
            out += [rename(k, f"{k.name}.wgrad") for k in self._all_gather(
                where, tokens, count, plan) if isinstance(k, Kernel)]
        return out

    def _mlp(self, plan: Plan, tokens: Number, L: float) -> list[Kernel | Linear]:
        h, inter, act = self.config.hidden, plan.inter, plan.act
        if self.config.mlp == "gated":
            return [Linear("gate_up_proj", tokens, h, 2 * inter, L, True),
                    elementwise_kernel("act", tokens * inter, 2, 1, GLU_FLOPS, act, L),
                    Linear("down_proj", tokens, inter, h, L, True)]
        return [Linear("up_proj", tokens, h, inter, L, True),
                elementwise_kernel("act", tokens * inter, 1, 1, GELU_FLOPS, act, L),
                Linear("down_proj", tokens, inter, h, L, True)]

    def _moe(self, plan: Plan, tokens: Number, L: float) -> list[Kernel | Linear]:
        c = self.config
        h, inter, act = c.hidden, plan.expert_inter, plan.act
        e, k, ep = float(c.experts), float(c.experts_per_token), plan.ep
        # this chip's E/ep experts, among those the step's tokens on all ep chips touch; with
        # uniform routing a chip computes as many (token, expert) pairs as its tokens make
        touched = e / ep * (1.0 - (1.0 - k / e) ** (tokens * ep))
        per_expert = tokens * k / touched
        ops: list[Kernel | Linear] = [
            Linear("router", tokens, h, c.experts, L, False),
            softmax_kernel("router.softmax_topk", tokens, e, act, L)]
        if ep > 1:
            ops.append(collective_kernel("all_to_all", "experts.dispatch", tokens * k * h, ep,
                                         act, plan.link, plan.link_count, L))
        ops += [
            Linear("experts.gate_up_proj", per_expert, h, 2 * inter, L * touched, True),
            # per touched expert, like the projections around it (so it fuses into them)
            elementwise_kernel("experts.act", per_expert * inter, 2, 1, GLU_FLOPS, act,
                               L * touched),
            Linear("experts.down_proj", per_expert, inter, h, L * touched, True)]
        if ep > 1:
            ops.append(collective_kernel("all_to_all", "experts.combine_all_to_all",
                                         tokens * k * h, ep, act, plan.link, plan.link_count, L))
        ops.append(elementwise_kernel("experts.combine", tokens * h, k, 1, 2.0 * k, act, L))
        if c.shared_expert_gate:
            ops.append(Linear("shared.gate", tokens, h, 1, L, False))
        if c.shared_experts:
            shared = plan.shared_inter
            ops += [Linear("shared.gate_up_proj", tokens, h, 2 * shared, L, True),
                    elementwise_kernel("shared.act", tokens * shared, 2, 1, GLU_FLOPS, act, L),
                    Linear("shared.down_proj", tokens, shared, h, L, True)]
        return ops

    def _attention_ops(self, plan: Plan, groups: Sequence[Group],
                       causal: bool) -> list[Kernel | Linear]:
        """Projections and attention of every layer; windowed layers apart from global ones;
        attention per length of a mixed-length batch (each sequence its own pairs)."""
        c = self.config
        if c.is_mla:
            return self._mla_ops(plan, groups, causal)
        h, hd, vd, L = c.hidden, c.head_dim or 0, c.v_head_dim or 0, float(c.layers)
        tokens: Number = sum(n * q for n, q, _ in groups)
        local = float(c.windowed_layers) if causal else 0.0
        ops: list[Kernel | Linear] = [
            Linear("qkv_proj", tokens, h, plan.heads * hd + plan.kv_heads * (hd + vd), L, True)]
        for name, count, window in (("attention", L - local, None),
                                    ("attention.local", local, c.sliding_window)):
            if count:
                for n, q_len, kv_len in groups:
                    ops += attention_kernels(
                        _group_name("attention" if local == L else name, groups, kv_len), n,
                        q_len, kv_len, plan.heads, plan.kv_heads, hd, causal, plan.fused,
                        plan.act, plan.kv, count=count, window=window, v_head_dim=vd)
        ops.append(Linear("o_proj", tokens, plan.heads * vd, h, L, True))
        return ops

    def _mla_ops(self, plan: Plan, groups: Sequence[Group],
                 causal: bool) -> list[Kernel | Linear]:
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
        ops: list[Kernel | Linear] = []
        if c.q_lora_rank:
            ops += [Linear("q_a_proj", tokens, h, c.q_lora_rank, L, True),
                    norm_kernel("q_a_norm", c.norm, tokens, c.q_lora_rank, act, count=L),
                    Linear("q_b_proj", tokens, c.q_lora_rank, heads * hd, L, True)]
        else:
            ops.append(Linear("q_proj", tokens, h, heads * hd, L, True))
        ops += [Linear("kv_a_proj", tokens, h, kvl + rope, L, True),
                norm_kernel("kv_a_norm", c.norm, tokens, kvl, act, count=L)]
        if plan.absorb:
            ops.append(Linear("q_absorb", tokens, hd - rope, kvl, L * heads, True))
            for n, q_len, kv_len in groups:
                ops += attention_kernels(_group_name("attention", groups, kv_len), n, q_len,
                                         kv_len, heads, 1, kvl + rope, causal, plan.fused, act,
                                         plan.kv, count=L, v_head_dim=kvl, shared_kv=True)
            ops.append(Linear("v_up", tokens, kvl, vd, L * heads, True))
        else:
            # decode up-projects the cache (in its precision); prefill the K and V just made
            cached = plan.kv if groups[0][1] < groups[0][2] else act
            ops.append(Linear("kv_b_proj", sum(n * kv for n, _, kv in groups), kvl,
                               heads * (hd - rope + vd), L, True, cached))
            for n, q_len, kv_len in groups:
                ops += attention_kernels(_group_name("attention", groups, kv_len), n, q_len,
                                         kv_len, heads, heads, hd, causal, plan.fused, act, act,
                                         count=L, v_head_dim=vd)
        ops.append(Linear("o_proj", tokens, heads * vd, h, L, True))
        return ops


def attention_dims(config: Any, plan: Plan) -> tuple[int, int]:
    """The query/key and value head sizes fused attention runs with (multi-head latent
    attention absorbed: one head of kv_lora_rank + qk_rope_head_dim, V its first
    kv_lora_rank columns)."""
    if config.is_mla and plan.absorb:
        kvl = config.kv_lora_rank or 0
        return kvl + config.qk_rope_head_dim, kvl
    return config.head_dim or 0, config.v_head_dim or 0


def materialize(op: Linear, plan: Plan) -> Kernel:
    weight = plan.weight if op.quantized else plan.act
    compute = plan.compute if op.quantized else plan.act
    return matmul_kernel(op.name, op.m, op.k, op.n, op.input_dtype or plan.act, weight,
                         plan.act, compute, op.count)


def with_backward(op: Kernel | Linear, plan: Plan, head_dims: tuple[int, int]
                  ) -> list[Kernel]:
    """A forward kernel and its backward kernels (see Transformer.train_step). Fused
    attention's backward is ``ops.attention.backward_kernels`` (the one rule every path
    prices it by), over the pairs its forward scored (*head_dims*: its query and value
    heads' sizes); its softmax's backward runs inside it."""
    act = plan.act
    if isinstance(op, Linear):
        return [
            matmul_kernel(op.name, op.m, op.k, op.n, act, act, act, act, op.count),
            matmul_kernel(f"{op.name}.dgrad", op.m, op.n, op.k, act, act, act, act, op.count),
            matmul_kernel(f"{op.name}.wgrad", op.k, op.m, op.n, act, act, act, act, op.count),
        ]
    if positive(op.link_bytes):
        return [op, rename(op, f"{op.name}.bwd")]
    if op.unit == "matrix":  # fused attention
        d, dv = head_dims
        pairs = op.flops / (2.0 * _family.attention_forward_macs(1.0, d, dv))
        # the log-sum-exp: fp32, one a query and head (O holds dv of act's a query and head)
        lse = _family.lse_bytes(op.out_bytes / (dv * dtypes.ITEMSIZE[act]))
        # the forward's bytes are Q, K, V (here together) and O, each once
        nbytes = _family.attention_backward_bytes(q=op.bytes - op.out_bytes, k=0.0, v=0.0,
                                                  o=op.out_bytes, lse=lse)
        return [op, *backward_kernels(f"{op.name}.bwd", pairs=pairs, head_dim=d,
                                      value_dim=dv, nbytes=nbytes, dtype=op.dtype or act,
                                      softmax_dtype=act, count=op.count)]
    if op.name == f"{op.epilogue_of}.softmax":  # its backward is in the products' backward
        return [op]
    return [op, Kernel(f"{op.name}.bwd", op.flops * 2.0, op.bytes * 2.0, unit="vector",
                       dtype=op.dtype, count=op.count)]


def positive(value: Any) -> bool:
    return bool(is_array(value) or value > 0)


def rename(kernel: Kernel, name: str) -> Kernel:
    return Kernel(name, kernel.flops, kernel.bytes, link_bytes=kernel.link_bytes,
                  unit=kernel.unit, dtype=kernel.dtype, link=kernel.link,
                  link_count=kernel.link_count, count=kernel.count,
                  link_steps=kernel.link_steps, link_options=kernel.link_options)


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
                and _fusion._same(first.count, second.count) and positive(first.out_bytes)):
            out[i], out[j] = _fusion.handoff(first, second)
    return out


def _residual_add(name: str, tokens: Number, hidden: int, act: str, count: float,
                  eager: bool) -> list[Kernel | Linear]:
    """The residual add as its own kernel (eager: read two, write one), or nothing (run in
    the next norm)."""
    if not eager:
        return []
    return [elementwise_kernel(name, tokens * hidden, 2, 1, 1.0, act, count)]


def _group_name(name: str, groups: Sequence[Group], kv_len: int) -> str:
    return f"{name}[kv={kv_len}]" if len(groups) > 1 else name
