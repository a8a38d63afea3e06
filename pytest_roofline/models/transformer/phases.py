"""A transformer's phases: decode, prefill, forward and one training step, each a Workload
whose knob is the batch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ... import dtypes
from ...engine import fusion as _fusion
from ...engine.overlap import overlapped
from ...engine.workload import Kernel, Knob, Number, Workload, is_array
from ...errors import WorkloadError
from ...ops._common import show, size, sweep_size
from ...ops._family import ADAM_FLOPS, adam_step_bytes
from ...ops.vector import softmax_kernel
from .. import training as T
from .footprint import Footprints
from .graph import KernelGraph, Linear, attention_dims, materialize, rename, with_backward
from .options import Group, PhaseOptions, Plan, expert_parallel_plan, plan_for


@dataclass(frozen=True)
class TrainParts:
    """One training step in parts (see :meth:`Transformer.train_parts`)."""

    stage: tuple[Kernel, ...]  # this stage's kernels, one pass (before the bubble)
    rest: tuple[Kernel, ...]  # once a step: optimizer, data-parallel and pipeline traffic
    stage_scale: float  # what the step scales the stage by: the bubble over pp
    parallelism: Any  # the checked training.Parallelism
    plan: Plan  # the model's kernel plan for these settings


class Transformer(Footprints, KernelGraph):
    """A transformer model: exact parameter count, inference phases and a training step."""

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
        options = PhaseOptions.of(
            "decode", tp=tp, dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
            fused=fused, link=link, link_count=link_count, ep=ep, fusion=fusion, padded=padded,
            overlap=overlap)
        return self._decode(batch, context, options, absorb)

    def _decode(self, batch: object, context: object, options: PhaseOptions,
                absorb: bool) -> Workload:
        lengths = _lengths(context, batch, options.padded, "decode: context")
        plan = replace(plan_for(self.config, options), absorb=absorb and self.config.is_mla)
        if lengths is not None:
            return _overlap(self._mixed("decode", plan, lengths, True, False), options)
        b = sweep_size(batch, "decode: batch")
        ctx = size(context, "decode: context")
        self._check_positions(ctx, "decode: context")
        name = self._title("decode", f"batch={show(b)}, context={ctx}", plan)
        local = b / plan.ep  # expert parallelism: each chip decodes its share of the batch
        kernels = self._inference(plan, [(local, 1, ctx)], True, local)
        footprint = self._footprint(plan, [(ctx, local)], "decode").total

        def build(x: int) -> Workload:
            return self._decode(x, ctx, options, absorb)

        return _overlap(self._workload(kernels, footprint, name, b, build), options)

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
        options = PhaseOptions.of(
            "prefill", tp=tp, dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
            fused=fused, link=link, link_count=link_count, ep=ep, fusion=fusion, padded=padded,
            overlap=overlap)
        return self._prefill(batch, seq, options, all_logits)

    def _prefill(self, batch: object, seq: object, options: PhaseOptions,
                 all_logits: bool) -> Workload:
        lengths = _lengths(seq, batch, options.padded, "prefill: seq")
        plan = plan_for(self.config, options)
        if lengths is not None:
            return _overlap(self._mixed("prefill", plan, lengths, True, all_logits), options)
        b = sweep_size(batch, "prefill: batch")
        s = size(seq, "prefill: seq")
        self._check_positions(s, "prefill: seq")
        name = self._title("prefill", f"batch={show(b)}, seq={s}", plan)
        local = b / plan.ep
        kernels = self._inference(plan, [(local, s, s)], True,
                                  local * s if all_logits else local)
        footprint = self._footprint(plan, [(s, local)], "prefill").total

        def build(x: int) -> Workload:
            return self._prefill(x, s, options, all_logits)

        return _overlap(self._workload(kernels, footprint, name, b, build), options)

    def forward(self, batch: object, seq: object, *, tp: object = 1, dtype: object = "bf16",
                weight_dtype: object = None, fused: bool = True, link: str | None = None,
                link_count: int | None = None, fusion: str = _fusion.MODEL_DEFAULT,
                padded: bool = False, overlap: str = "none") -> Workload:
        """A full forward pass over *batch* sequences of *seq* tokens (or a list of
        per-sequence lengths), keeping no KV cache: an encoder's inference (bidirectional
        attention, pooler), or a decoder scoring every position (causal, all logits). Knob:
        the batch. ``fusion`` and ``padded``: see the module docstring; ``overlap``: as
        :meth:`decode`."""
        options = PhaseOptions.of(
            "forward", tp=tp, dtype=dtype, weight_dtype=weight_dtype, fused=fused, link=link,
            link_count=link_count, fusion=fusion, padded=padded, overlap=overlap)
        return self._forward(batch, seq, options)

    def _forward(self, batch: object, seq: object, options: PhaseOptions) -> Workload:
        decoder = self.config.architecture == "decoder"
        lengths = _lengths(seq, batch, options.padded, "forward: seq")
        plan = plan_for(self.config, options)
        if lengths is not None:
            return _overlap(self._mixed("forward", plan, lengths, decoder, decoder), options)
        b = sweep_size(batch, "forward: batch")
        s = size(seq, "forward: seq")
        self._check_positions(s, "forward: seq")
        name = self._title("forward", f"batch={show(b)}, seq={s}", plan)
        kernels = self._inference(plan, [(b, s, s)], decoder, b * s if decoder else 0.0)
        footprint = self._footprint(plan, [(s, b)], "forward").total

        def build(x: int) -> Workload:
            return self._forward(x, s, options)

        return _overlap(self._workload(kernels, footprint, name, b, build), options)

    def _mixed(self, phase: str, plan: Plan, lengths: list[tuple[int, int]], causal: bool,
               all_logits: bool) -> Workload:
        """A phase over sequences of several lengths ((length, how many) pairs): prompt
        lengths for prefill and forward, cached contexts for decode (one new token each).
        Under expert parallelism each chip runs 1/ep of every length's sequences."""
        what = "context" if phase == "decode" else "seq"
        self._check_positions(max(length for length, _ in lengths), f"{phase}: {what}")
        batch = float(sum(n for _, n in lengths))
        local = [(length, n / plan.ep) for length, n in lengths]
        if phase == "decode":
            groups: list[Group] = [(n, 1, length) for length, n in local]
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
        b = sweep_size(batch, "train_step: batch")
        s = size(seq, "train_step: seq")
        parts = self.train_parts(b, s, tp=tp, dtype=dtype, link=link, link_count=link_count,
                                 dp=dp, zero=zero, pp=pp, microbatches=microbatches,
                                 recompute=recompute, ep=ep, overlap=overlap,
                                 dp_link=dp_link, pp_link=pp_link,
                                 virtual_stages=virtual_stages, sp=sp)
        par, plan = parts.parallelism, parts.plan
        sizes = f"batch={show(b)}, seq={s}"
        if par.label():
            sizes += f", {par.label()}"
        name = self._title("train_step", sizes, plan)
        local = b / par.dp  # sequences of this chip's replica
        stage = parts.stage_scale
        kernels = [k.scaled(stage) for k in parts.stage] if stage != 1.0 else list(parts.stage)
        kernels += parts.rest
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
            workload = overlapped(workload)
        return workload

    def train_parts(self, batch: object, seq: object, *, tp: object = 1,
                    dtype: object = "bf16", link: str | None = None,
                    link_count: int | None = None, dp: object = 1, zero: int = 0,
                    pp: object = 1, microbatches: object = 1, recompute: str = "none",
                    ep: object = 1, overlap: str = "none", dp_link: str | None = None,
                    pp_link: str | None = None, virtual_stages: object = 1,
                    sp: object = None) -> TrainParts:
        """The parts :meth:`train_step` (same arguments) adds up: this pipeline stage's
        forward, backward, recomputation and loss kernels for one pass of its share of the
        batch (``stage``, which the step scales by ``stage_scale``, the pipeline bubble over
        pp), and the once-a-step kernels (``rest``: the optimizer update, data-parallel and
        pipeline communication). A planner varies the microbatch count by rescaling
        ``stage`` alone, without reading kernel names."""
        b = sweep_size(batch, "train_step: batch")
        s = size(seq, "train_step: seq")
        par = T.Parallelism.of(dp=dp, zero=zero, pp=pp, microbatches=microbatches,
                               recompute=recompute, tp=tp, ep=ep, overlap=overlap,
                               virtual_stages=virtual_stages, sp=sp)
        T.check_links("train_step", link=link, dp_link=dp_link, pp_link=pp_link,
                      link_count=link_count)
        plan = self._train_plan(par, dtype, link, link_count)
        T.check_batch(b, par, "train_step")
        self._check_positions(s, "train_step: seq")
        decoder = self.config.architecture == "decoder"
        local = b / par.dp  # sequences of this chip's replica
        ops = self._ops(plan, [(local, s, s)], decoder, local * s if decoder else 0.0)
        stage: list[Kernel] = []
        dims = attention_dims(self.config, plan)
        for op in ops:
            stage.extend(with_backward(op, plan, dims))
        if decoder:
            stage.append(softmax_kernel("loss", local * s, float(plan.vocab), plan.act))
        stage += self._sequence_parallel_wgrad(plan, local * s, decoder)
        if par.recompute != "none":
            stage += self._recomputed(ops, plan, par.recompute)
        per_chip = self._params_per_chip(plan)
        stage_params = per_chip / par.pp
        shard = stage_params / (par.dp if par.zero >= 1 else 1)
        rest = [Kernel("optimizer.adam", ADAM_FLOPS * shard,
                       adam_step_bytes(dtypes.ITEMSIZE[plan.act]) * shard, link_bytes=0.0,
                       unit="vector", dtype="fp32")]
        rest += T.data_parallel(stage_params, par, plan.act, dp_link or link, link_count)
        rest += T.pipeline(local * s, self.config.hidden, par, plan.act, pp_link or link,
                           link_count)
        return TrainParts(stage=tuple(stage), rest=tuple(rest),
                          stage_scale=par.stage_scale, parallelism=par, plan=plan)

    def train_footprint(self, batch: object, seq: object, *, tp: object = 1,
                        dtype: object = "bf16", dp: object = 1, zero: int = 0, pp: object = 1,
                        microbatches: object = 1, recompute: str = "none",
                        ep: object = 1, virtual_stages: object = 1, sp: object = None) -> Any:
        """Per-chip bytes of :meth:`train_step` with the same settings: a
        :class:`~pytest_roofline.models.training.TrainingFootprint` (weights, gradients,
        optimizer states, activations; ``total``, ``describe()``, ``hint()``)."""
        b = sweep_size(batch, "train_footprint: batch")
        s = size(seq, "train_footprint: seq")
        par = T.Parallelism.of(dp=dp, zero=zero, pp=pp, microbatches=microbatches,
                               recompute=recompute, tp=tp, ep=ep,
                               virtual_stages=virtual_stages, sp=sp)
        plan = self._train_plan(par, dtype, None, None)
        T.check_batch(b, par, "train_footprint")
        return self._train_footprint(plan, par, b / par.dp, s)

    def _train_plan(self, par: Any, dtype: object, link: str | None,
                    link_count: int | None) -> Plan:
        chunks, most = par.pp * par.virtual_stages, self.config.layers + 2
        if chunks > most:  # a chunk holds a layer, or the embedding or the output layer alone
            raise WorkloadError(f"train_step: pp={par.pp} x virtual_stages="
                                f"{par.virtual_stages} = {chunks} pipeline chunks, but "
                                f"{self.name} has {self.config.layers} layers: each chunk holds "
                                f"at least one, or the embedding or the output layer alone; "
                                f"allowed pp x virtual_stages <= {most}")
        options = PhaseOptions.of("train_step", tp=par.tp, dtype=dtype, link=link,
                                  link_count=link_count)
        plan = replace(plan_for(self.config, options, expert_parallel=False),
                       sp=par.sp and par.tp > 1)
        if par.ep > 1:
            if not self.config.is_moe:
                raise WorkloadError(f"train_step: ep={par.ep}: {self.name} has no experts to "
                                    f"spread; use tp or dp")
            plan = expert_parallel_plan(self.config, plan, par.ep)
        return plan

    def _train_footprint(self, plan: Plan, par: Any, local: Number, seq: int) -> Any:
        c = self.config
        per_chip = self._params_per_chip(plan)
        layer = self._linear_params_per_chip(plan) / c.layers
        return T.footprint(params=per_chip, layer_params=layer, layers=c.layers,
                           saved_per_token=self._saved_per_token(plan), hidden=c.hidden,
                           vocab=plan.vocab, tokens=local * float(seq), p=par, dtype=plan.act)

    def _recomputed(self, ops: list[Kernel | Linear], plan: Plan,
                    mode: str) -> list[Kernel]:
        """The forward kernels run again for the backward: every layer's (``"full"``), or
        the attention core's (``"selective"``); never the embedding, lm_head or loss."""
        out: list[Kernel] = []
        for op in ops:
            kernel = materialize(op, plan) if isinstance(op, Linear) else op
            if kernel.name.startswith(("embedding", "lm_head")) or (
                    mode == "selective" and not kernel.name.startswith("attention")):
                continue
            out.append(rename(kernel, f"recompute.{kernel.name}"))
        return out

    # -- footprint -------------------------------------------------------------------------

    def _need(self, architecture: str, phase: str) -> None:
        if self.config.architecture != architecture:
            raise WorkloadError(f"{self.name} is an {self.config.architecture}: it has no "
                                f"{phase} phase; use forward(batch, seq)")

    def _check_positions(self, tokens: int, what: str) -> None:
        c = self.config
        if c.position == "learned" and tokens > c.max_positions:
            raise WorkloadError(f"{what}={tokens} exceeds {self.name}'s learned position "
                                f"table of {c.max_positions} positions")

    def _title(self, phase: str, sizes: str, plan: Plan) -> str:
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


def _overlap(workload: Workload, options: PhaseOptions) -> Workload:
    """``overlap=`` of a phase (see :mod:`pytest_roofline.engine.overlap`): checked in *options*."""
    if options.overlap == "none":
        return workload
    return overlapped(workload)


def _lengths(value: object, batch: object, padded: bool,
             what: str) -> list[tuple[int, int]] | None:
    """Per-sequence lengths as sorted (length, how many) pairs, or None for one length."""
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
