"""Training at scale: data, ZeRO/FSDP, pipeline, tensor and expert parallelism, recomputation.

A step trains on *batch* sequences of *seq* tokens over ``dp x pp x tp`` chips (expert
parallelism ``ep`` runs inside the data-parallel chips: ep divides dp). Everything is per chip,
for the chip of the first pipeline stage:

* **Work.** Each data-parallel replica trains on batch/dp sequences, split into
  ``microbatches``. A pipeline of pp stages gives each chip 1/pp of the model's work (a
  balanced split: layers, and the embedding and lm_head shared out, a lower bound for any
  real split; pp need not divide the layers, as Llama 3 trains 126 layers on 16 stages),
  and every stage idles (pp - 1) microbatch slots of the schedule (GPipe, 1F1B): the stage's
  kernels are counted 1 + (pp - 1)/(v·m) times (the bubble; their FLOPs then include the idle
  slots, so a model-FLOPs utilization takes the FLOPs of ``pp=1`` over pp), v being the
  ``virtual_stages`` of an interleaved schedule (Narayanan et al. 2021; 1 without one).
  Recomputation adds a forward pass: ``"full"`` of every layer (activation checkpointing of
  each block), ``"selective"`` of the attention core only (Korthikanti et al. 2022; with
  FlashAttention nothing else of it is stored anyway).
* **Communication (link bytes per chip, ``ops.collectives``' ring forms).** Tensor parallelism
  all-reduces each layer's attention and MLP outputs, forward and backward, over the tp chips
  (``link``). Data parallelism, over the dp chips (``dp_link``, default ``link``): ZeRO 0
  all-reduces the gradients (2·G·(dp-1)/dp, G the chip's gradient bytes); ZeRO 1 and 2
  reduce-scatter them and all-gather the updated weights (the same bytes); ZeRO 3 (FSDP)
  all-gathers the weights before the forward and again before the backward and
  reduce-scatters the gradients (3·G·(dp-1)/dp): once per step, however many microbatches (a
  lower bound; FSDP without ``reshard_after_forward`` gathers no more). A pipeline sends
  each microbatch's activations [tokens, hidden] to the next stage and their gradients back
  (``pp_link``, default ``link``): a middle stage sends both, each stage of a two-stage
  pipeline one of them, and each of a stage's tp chips 1/tp (Narayanan et al. 2021, 4.1).
  Expert parallelism sends each token to its experts' chips and back, forward and backward
  (all-to-alls, as in inference).
* **Sequence parallelism** (``sp``, on by default whenever tp > 1, as Megatron-LM and NeMo run
  tensor parallelism at scale; Korthikanti et al. 2022, section 4.2.2): the tensors tensor
  parallelism leaves whole on every chip (residual stream, norms) are split along the
  sequence. Each tensor-parallel all-reduce becomes a reduce-scatter after the block's
  matmuls and an all-gather before the next (the same bytes), norms and residual adds run on
  1/tp of the tokens, a layer keeps 1/tp of its input, and the backward gathers that input
  again for the weight gradient.
* **Footprint per chip** (:class:`TrainingFootprint`): weights in ``dtype`` (1/dp of them
  under ZeRO 3, plus two layers gathered whole: the one computing and the one prefetched);
  gradients in ``dtype`` (1/dp from ZeRO 2); Adam's fp32 master weights and two moments,
  12 B a parameter (1/dp from ZeRO 1); activations of the microbatches in flight
  (:attr:`Parallelism.in_flight`: one without a pipeline, as gradient accumulation runs them
  one after another; min(pp, m) in the first stage of a 1F1B schedule; more under an
  interleaved one). What a layer keeps for its backward is Korthikanti et al. 2022's
  accounting without dropout masks or attention scores (``Transformer._saved_per_token``);
  ``recompute="full"`` keeps each layer's input only (1/tp of it under sequence
  parallelism), plus one layer's full set while it is recomputed. Logits in fp32 for one
  microbatch, without a pipeline only (with one they lie on the last stage).

Overlap (``overlap=``): ``"none"`` (default) adds every collective after the work it
follows; ``"full"`` hides the data-parallel and pipeline transfers and the tensor-parallel
all-reduces behind the step's compute, as FSDP prefetch, bucketed gradient reduction and
async tensor parallelism do: the step's time is then the larger of its compute-and-memory time
and its link time, per the network's share (see :func:`pytest_roofline.models.overlapped`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes, units
from ..engine.workload import Kernel, Number, is_array
from ..errors import WorkloadError, brief
from ..ops._common import size
from ..ops._family import ADAM_STATE_BYTES
from ..ops.collectives import collective_kernel

RECOMPUTE = ("none", "selective", "full")
OVERLAP = ("none", "full")
ZERO = (0, 1, 2, 3)


@dataclass(frozen=True)
class Parallelism:
    """How a training step is spread over chips (validated; see the module docstring)."""

    dp: int = 1
    zero: int = 0
    pp: int = 1
    microbatches: int = 1
    recompute: str = "none"
    tp: int = 1
    ep: int = 1
    overlap: str = "none"
    virtual_stages: int = 1
    sp: bool | None = None  # None: sequence parallelism whenever tp > 1

    def __post_init__(self) -> None:
        for attr in ("dp", "pp", "microbatches", "tp", "ep", "virtual_stages"):
            object.__setattr__(self, attr, size(getattr(self, attr), f"train_step: {attr}"))
        if isinstance(self.zero, bool) or self.zero not in ZERO:
            raise WorkloadError(f"train_step: zero must be 0, 1, 2 or 3 (FSDP is 3), got "
                                f"{brief(self.zero)}")
        if not isinstance(self.recompute, str) or self.recompute not in RECOMPUTE:
            raise WorkloadError(f"train_step: recompute must be one of "
                                f"{', '.join(map(repr, RECOMPUTE))}, got {brief(self.recompute)}")
        if not isinstance(self.overlap, str) or self.overlap not in OVERLAP:
            raise WorkloadError(f"train_step: overlap must be one of "
                                f"{', '.join(map(repr, OVERLAP))}, got {brief(self.overlap)}")
        if self.dp % self.ep:
            raise WorkloadError(f"train_step: ep={self.ep} must divide dp={self.dp} (expert "
                                f"parallelism runs inside the data-parallel chips)")
        if self.sp is None:
            object.__setattr__(self, "sp", self.tp > 1)
        if not isinstance(self.sp, bool):
            raise WorkloadError(f"train_step: sp must be True, False or None (sequence "
                                f"parallelism whenever tp > 1), got {brief(self.sp)}")

    @classmethod
    def of(cls, *, dp: object = 1, zero: object = 0, pp: object = 1, microbatches: object = 1,
           recompute: object = "none", tp: object = 1, ep: object = 1,
           overlap: object = "none", virtual_stages: object = 1,
           sp: object = None) -> Parallelism:
        """Checked settings from a caller's values (sizes are whole numbers >= 1)."""
        sizes = {k: size(v, f"train_step: {k}") for k, v in (
            ("dp", dp), ("pp", pp), ("microbatches", microbatches), ("tp", tp), ("ep", ep),
            ("virtual_stages", virtual_stages))}
        return cls(zero=zero, recompute=recompute, overlap=overlap,  # type: ignore[arg-type]
                   **sizes, sp=sp)  # type: ignore[arg-type]

    @property
    def chips(self) -> int:
        return self.dp * self.pp * self.tp

    @property
    def bubble(self) -> float:
        """Schedule slots per slot of useful work (:func:`bubble`)."""
        return bubble(self.pp, self.microbatches, self.virtual_stages)

    @property
    def stage_scale(self) -> float:
        """What the step scales the stage's kernels by (:func:`stage_scale`)."""
        return stage_scale(self.pp, self.microbatches, self.virtual_stages)

    @property
    def sequence_shards(self) -> int:
        """How many chips share the tensors of a layer that tensor parallelism replicates."""
        return self.tp if self.sp else 1

    @property
    def in_flight(self) -> float:
        """Microbatches of the stage's layers whose activations the first stage holds at once:
        1 without a pipeline; min(pp, m) under 1F1B; under an interleaved 1F1B of v virtual
        stages, min(m·v, (v + 1)·pp - 1) chunks of 1/v of the stage's layers (the first
        rank's warm-up of 2·(pp - 1) + (v - 1)·pp chunks, as Megatron-LM schedules it, and
        the one whose backward runs next): pp·(1 + (pp - 1)/(pp·v)) microbatches when m·v is
        large, Korthikanti et al. 2022, section 4.2.3."""
        if self.pp == 1:
            return 1.0
        v = self.virtual_stages
        if v == 1:
            return float(min(self.pp, self.microbatches))
        return min(self.microbatches * v, (v + 1) * self.pp - 1) / v

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in (("dp", self.dp), ("pp", self.pp)) if v > 1]
        if self.zero:
            parts.append(f"zero={self.zero}")
        if self.microbatches > 1:
            parts.append(f"microbatches={self.microbatches}")
        if self.virtual_stages > 1:
            parts.append(f"virtual_stages={self.virtual_stages}")
        if self.recompute != "none":
            parts.append(f"recompute={self.recompute}")
        if self.overlap != "none":
            parts.append(f"overlap={self.overlap}")
        if self.tp > 1 and not self.sp:
            parts.append("sp=False")
        return ", ".join(parts)


def bubble(pp: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Schedule slots per slot of useful work of a pipeline of *pp* stages running
    *microbatches* microbatches over *virtual_stages* interleaved chunks a stage (1F1B):
    1 + (pp - 1) / (v·m)."""
    return 1.0 + (pp - 1) / (virtual_stages * microbatches)


def stage_scale(pp: int, microbatches: int, virtual_stages: int = 1) -> float:
    """What a step scales one stage's kernels (one pass over the batch) by: the stage runs
    1/pp of the model's work, stretched by the :func:`bubble`. The one rule the training
    step and the training planner both apply."""
    return bubble(pp, microbatches, virtual_stages) / pp


def check_batch(batch: Number, p: Parallelism, where: str) -> None:
    """Refuse a global *batch* that the data-parallel replicas cannot share in whole
    sequences, or a replica's batch the microbatches do not divide (a sequence is never cut,
    the rule :func:`pytest_roofline.planning.plan_training` searches by)."""
    import numpy as np

    values = np.atleast_1d(np.asarray(batch, dtype=float))
    if np.any(values % p.dp):
        bad = next(v for v in values if v % p.dp)
        raise WorkloadError(f"{where}: batch={bad:g} sequences cannot be shared by dp={p.dp} "
                            f"data-parallel replicas in whole sequences; allowed: a batch that "
                            f"is a multiple of dp")
    replica = values / p.dp
    if np.any(replica % p.microbatches):
        bad = next(v for v in replica if v % p.microbatches)
        raise WorkloadError(f"{where}: microbatches={p.microbatches} must divide each "
                            f"replica's batch of {bad:g} sequences (batch / dp); allowed: a "
                            f"divisor of it")


def check_links(where: str, **links: object) -> None:
    """Refuse a link argument that is not a link name (``link``, ``dp_link``, ``pp_link``),
    or a ``link_count`` that is not a size, naming the argument and the value."""
    for name, value in links.items():
        if value is None:
            continue
        if name == "link_count":
            size(value, f"{where}: link_count")
        elif not isinstance(value, str):
            raise WorkloadError(f"{where}: {name} must be a link name such as 'nvlink' or "
                                f"'ici', or None for the chip's default link, got "
                                f"{brief(value)}")


def _largest(value: Number) -> float:
    """A figure, or the largest of a sweep's (the one that decides whether all fit)."""
    if is_array(value):
        import numpy as np

        return float(np.max(value))
    return float(value)


@dataclass(frozen=True)
class TrainingFootprint:
    """Bytes resident on one chip during a training step (see the module docstring)."""

    weights: Number
    gradients: Number
    optimizer: Number
    activations: Number
    parallelism: Parallelism

    @property
    def total(self) -> Number:
        return self.weights + self.gradients + self.optimizer + self.activations

    def describe(self) -> str:
        si = units.si
        return (f"weights {si(_largest(self.weights), 'B')}, gradients "
                f"{si(_largest(self.gradients), 'B')}, optimizer states "
                f"{si(_largest(self.optimizer), 'B')}, activations "
                f"{si(_largest(self.activations), 'B')} per chip")

    def hint(self) -> str:
        """The knobs that shrink the footprint, the larger share's first."""
        p = self.parallelism
        si = units.si
        states = self.weights + self.gradients + self.optimizer
        if p.zero < 3:
            shard = (f"zero=3 (FSDP) with dp > 1 shards the weights, gradients and optimizer "
                     f"states (now zero={p.zero}, dp={p.dp}), as tp and pp do")
        else:
            shard = f"more data-parallel chips (dp={p.dp}), tp or pp shard the states further"
        if p.recompute != "full":
            keep = (f"recompute='full' (now {p.recompute!r}), more microbatches "
                    f"(now {p.microbatches}) or a smaller batch shrink the activations")
        else:
            keep = (f"more microbatches (now {p.microbatches}) or a smaller batch shrink the "
                    f"activations")
        held, kept = _largest(states), _largest(self.activations)
        parts = [(held, f"states {si(held, 'B')}: {shard}"),
                 (kept, f"activations {si(kept, 'B')}: {keep}")]
        parts.sort(key=lambda part: -part[0])
        return f"{self.describe()}; knobs: " + "; ".join(text for _, text in parts)


def data_parallel(gradient_elements: Number, p: Parallelism, dtype: str, link: str | None,
                  link_count: int | None) -> list[Kernel]:
    """The data-parallel collectives of a step on one chip (see the module docstring)."""
    if p.dp == 1:
        return []
    n = p.dp
    if p.zero == 0:
        return [collective_kernel("all_reduce", "dp.grads.all_reduce", gradient_elements, n,
                                  dtype, link, link_count)]
    kernels = [collective_kernel("reduce_scatter", "dp.grads.reduce_scatter",
                                 gradient_elements, n, dtype, link, link_count)]
    gathers = 2.0 if p.zero == 3 else 1.0  # forward and backward, or the updated weights
    name = "dp.weights.all_gather" if p.zero == 3 else "dp.updated_weights.all_gather"
    kernels.append(collective_kernel("all_gather", name, gradient_elements, n, dtype, link,
                                     link_count, gathers))
    return kernels


def pipeline(tokens: Number, hidden: int, p: Parallelism, dtype: str, link: str | None,
             link_count: int | None) -> list[Kernel]:
    """Activations to the next stage and their gradients back, for every microbatch.

    Bytes a chip sends: a middle stage sends the activations forward and the gradients back
    (2x), while with two stages each sends only one of them (1x); each of the tp chips of a
    stage sends 1/tp of the tensor (Megatron-LM's scatter/gather of the transfer, Narayanan
    et al. 2021, section 4.1; under sequence parallelism each already holds only its share).
    """
    if p.pp == 1:
        return []
    sends = 2.0 if p.pp > 2 else 1.0
    return [collective_kernel("point_to_point", "pp.activations.send",
                              tokens * hidden / p.tp, 2, dtype, link, link_count, sends)]


def footprint(*, params: float, layer_params: float, layers: int, saved_per_token: Number,
              hidden: int, vocab: int, tokens: Number, p: Parallelism,
              dtype: str) -> TrainingFootprint:
    """Per-chip bytes of a step (*params*: the chip's parameters before pipeline and ZeRO
    sharding; *saved_per_token*: elements one layer keeps per token for its backward)."""
    act = dtypes.ITEMSIZE[dtype]
    stage = params / p.pp
    weights = stage * act / (p.dp if p.zero == 3 else 1)
    if p.zero == 3 and p.dp > 1:
        weights += 2.0 * layer_params * act  # the layer gathered whole, and the next one
    gradients = stage * act / (p.dp if p.zero >= 2 else 1)
    optimizer = stage * ADAM_STATE_BYTES / (p.dp if p.zero >= 1 else 1)
    micro = tokens / p.microbatches  # one microbatch's tokens on this chip
    stage_layers = layers / p.pp
    if p.recompute == "full":
        layer_input = hidden / p.sequence_shards
        kept = micro * p.in_flight * stage_layers * layer_input + micro * saved_per_token
    else:
        kept = micro * p.in_flight * stage_layers * saved_per_token
    # fp32 logits of one microbatch, on the last stage: not the first stage's under a
    # pipeline (Korthikanti et al. 2022, section 4.3, count the output layer on the last)
    logits = micro * 4.0 * vocab if p.pp == 1 else 0.0
    activations = kept * act + logits
    return TrainingFootprint(weights, gradients, optimizer, activations, p)
