"""Which configuration serves a model within latency targets? ``plan(model, hw, chips=8, ...)``.

The search covers tensor parallelism (tp), pipeline parallelism (pp), expert parallelism (ep,
mixtures of experts) and the batch, for every split of *chips* into replicas of tp x pp x ep
chips, and keeps the configurations that fit in memory and meet the targets, ranked by
output tokens per second per chip. Each figure is a roofline bound (no configuration runs
faster), per chip:

* **TPOT** (time per output token): one decode step of the replica's batch at the mean
  context of a request, ISL + OSL/2 (the mean over its decode steps; attention is linear in
  the context). A pipeline of pp stages runs pp batches at once, one in each stage; each
  token passes every stage, so a token takes the whole model's step time, and a chip holds
  1/pp of the weights and the KV cache of its layers for every sequence in flight: the same
  per-chip cache as one batch of the whole model.
* **TTFT** (time to first token): the prefill of one request of ISL tokens on the replica
  (the best case: no queueing, no other request in the batch).
* **Throughput per chip**: batch x pp sequences each receive a token per TPOT, over the
  replica's tp x pp x ep chips (so batch / (TPOT x tp x ep)).
* **Fits**: weights / pp (pp at most the layers + 2: a stage holds a layer, the embedding or
  the output layer), the KV cache
  at the full context ISL + OSL, and the activations of a step, within the chip's memory.

Vectorized: one decode, prefill and footprint per (tp, pp, ep), on a numpy array of every
batch from 1 to ``max_batch``; the rest is array arithmetic (``benchmarks/bench_plan.py``
measures it beside one configuration at a time). The limit of each configuration is the
constraint that stops its batch from growing: ``memory`` (the next batch does not fit),
``tpot`` (the next misses the TPOT target) or ``max_batch`` (the end of the search).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import dtypes, units
from .analysis import analyze
from .errors import RooflineError, WorkloadError, brief
from .hardware import Hardware, get_hardware
from .sweeps import sweep
from .workload import Workload

LIMITS = ("memory", "tpot", "max_batch")


@dataclass(frozen=True)
class Config:
    """One serving configuration and its bounds (times in s, throughput in tokens/s/chip)."""

    tp: int
    pp: int
    ep: int
    batch: int  # sequences decoded together in one stage (pp x batch in flight a replica)
    replicas: int
    ttft: float
    tpot: float
    throughput: float  # output tokens per second per chip
    footprint: float  # bytes per chip
    regime: str  # the decode step's regime
    limit: str  # what stops the batch from growing: one of LIMITS

    @property
    def chips(self) -> int:
        return self.tp * self.pp * self.ep

    def label(self) -> str:
        parts = [f"tp={self.tp}", f"pp={self.pp}"]
        if self.ep > 1:
            parts.append(f"ep={self.ep}")
        flight = f" (x{self.pp} in flight)" if self.pp > 1 else ""
        return ", ".join(parts) + f", batch={self.batch}{flight}"


@dataclass(frozen=True)
class Plan:
    """The configurations that fit and meet the targets, best first, and what was searched."""

    model: str
    hw: str
    chips: int
    ttft_target: float | None
    tpot_target: float | None
    isl: int
    osl: int
    configs: tuple[Config, ...]
    searched: int  # configurations evaluated
    rejected: tuple[str, ...]  # (tp, pp, ep) splits with no configuration, and why

    @property
    def best(self) -> Config | None:
        return self.configs[0] if self.configs else None

    def table(self, top: int = 10) -> str:
        """The ranked configurations as text."""
        from .text_table import render

        fmt = units.format_time
        rows = [[str(i + 1), c.label(), str(c.replicas), fmt(c.ttft), fmt(c.tpot),
                 f"{c.throughput:,.0f}", units.si(c.footprint, "B"), c.regime, c.limit]
                for i, c in enumerate(self.configs[:top])]
        head = (f"{self.model} on {self.chips} x {self.hw}, ISL {self.isl} / OSL {self.osl}"
                + (f", TTFT <= {fmt(self.ttft_target)}" if self.ttft_target else "")
                + (f", TPOT <= {fmt(self.tpot_target)}" if self.tpot_target else "")
                + f": {len(self.configs)} of {self.searched} configurations qualify")
        if not rows:
            return head + "".join(f"\n  {why}" for why in self.rejected)
        body = render(["#", "configuration", "replicas", "TTFT", "TPOT", "tok/s/chip",
                       "memory/chip", "regime", "limit"], rows)
        return "\n".join([head, *body])


def _target(value: object, what: str) -> float | None:
    if value is None:
        return None
    try:
        return units.parse(value, "time", what=what)
    except (ValueError, OverflowError) as exc:
        raise RooflineError(str(exc)) from None


def _whole(value: object, what: str, least: int = 1, where: str = "plan") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise RooflineError(f"{where}: {what} must be a whole number >= {least}, got "
                            f"{brief(value)}")
    return value


def _precisions(what: str, **given: object) -> None:
    """Refuse an unknown precision up front: every configuration would reject it, and an
    empty plan would hide the typo."""
    for name, value in given.items():
        if value is not None:
            try:
                dtypes.canonical(value)
            except RooflineError as exc:
                raise RooflineError(f"{what}: {name}: {exc}") from None


def _splits(chips: int, moe: bool) -> list[tuple[int, int, int]]:
    """(tp, pp, ep) with tp x pp x ep dividing *chips*; ep only for experts, without tp."""
    out = []
    for tp in range(1, chips + 1):
        for pp in range(1, chips // tp + 1):
            for ep in range(1, chips // (tp * pp) + 1):
                n = tp * pp * ep
                if chips % n or (ep > 1 and (not moe or tp > 1)):
                    continue
                out.append((tp, pp, ep))
    return out


def plan(model: Any, hw: Hardware | str, *, chips: int, ttft: object = None,
         tpot: object = None, isl: int = 1024, osl: int = 256, dtype: str = "bf16",
         weight_dtype: str | None = None, kv_dtype: str | None = None,
         max_batch: int = 1024, link: str | None = None) -> Plan:
    """Search serving configurations of *model* (a name or a Transformer) on *chips* x *hw*
    (see the module docstring); targets are seconds or strings such as ``"50 ms"``."""
    import numpy as np

    from .models import Transformer, load

    transformer = load(model) if isinstance(model, str) else model
    if not isinstance(transformer, Transformer) or transformer.config.architecture != "decoder":
        raise RooflineError(f"plan: the model must be a decoder LLM (a name such as "
                            f"'llama-3-70b' or a models.Transformer), got {brief(model)}")
    chip = hw if isinstance(hw, Hardware) else get_hardware(hw)
    chips = _whole(chips, "chips")
    isl, osl = _whole(isl, "isl"), _whole(osl, "osl")
    max_batch = _whole(max_batch, "max_batch")
    ttft_s, tpot_s = _target(ttft, "plan: ttft"), _target(tpot, "plan: tpot")
    _precisions("plan", dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    batches = np.arange(1, max_batch + 1, dtype=float)
    capacity = chip.memory_capacity
    mean_ctx, full_ctx = isl + osl // 2, isl + osl
    found: list[Config] = []
    rejected: list[str] = []
    searched = 0
    common: dict[str, Any] = {"dtype": dtype, "weight_dtype": weight_dtype,
                              "kv_dtype": kv_dtype}
    for tp, pp, ep in _splits(chips, transformer.config.is_moe):
        where = f"tp={tp}, pp={pp}" + (f", ep={ep}" if ep > 1 else "")
        if pp > transformer.config.layers + 2:
            rejected.append(f"{where}: more stages than {transformer.name}'s "
                            f"{transformer.config.layers} layers, its embedding and its output "
                            f"layer (a stage holds at least one of them)")
            continue
        try:
            step = transformer.decode(batches * ep, mean_ctx, tp=tp, ep=ep, link=link,
                                      **common)
            first = transformer.prefill(1, isl, tp=tp, link=link, **common)
            fp = transformer.footprint(batches * ep, full_ctx, phase="decode", tp=tp, ep=ep,
                                       **common)
        except WorkloadError as exc:
            rejected.append(f"{where}: {exc}")
            continue
        searched += len(batches)
        r = sweep(step, chip)
        t_first = analyze(first, chip).time
        t_step = r.time
        memory = np.asarray(fp.weights / pp + fp.kv_cache + fp.activations, dtype=float)
        fits = np.asarray(memory <= capacity)
        fast = np.asarray(t_step <= tpot_s) if tpot_s is not None else np.ones_like(fits)
        ok = fits & fast
        if ttft_s is not None and t_first > ttft_s:
            rejected.append(f"{where}: TTFT bound {units.format_time(t_first)} > target")
            continue
        if not ok.any():
            why = "does not fit" if not fits.any() else "misses the TPOT target at every batch"
            rejected.append(f"{where}: {why}")
            continue
        throughput = batches * ep / (t_step * tp * ep)
        best = int(np.argmax(np.where(ok, throughput, -1.0)))
        nxt = best + 1
        limit = ("max_batch" if nxt >= len(batches) else "memory" if not fits[nxt]
                 else "tpot" if not fast[nxt] else "max_batch")
        regimes = str(r.regime[best])
        found.append(Config(tp=tp, pp=pp, ep=ep, batch=int(batches[best]) * ep,
                            replicas=chips // (tp * pp * ep), ttft=t_first,
                            tpot=float(t_step[best]), throughput=float(throughput[best]),
                            footprint=float(memory[best]), regime=regimes, limit=limit))
    found.sort(key=lambda c: (-c.throughput, c.tpot, c.chips))
    return Plan(model=transformer.name, hw=chip.name, chips=chips, ttft_target=ttft_s,
                tpot_target=tpot_s, isl=isl, osl=osl, configs=tuple(found), searched=searched,
                rejected=tuple(rejected))


def decode_step(model: Any, config: Config, *, isl: int, osl: int, dtype: str = "bf16",
                weight_dtype: str | None = None, kv_dtype: str | None = None,
                link: str | None = None) -> Workload:
    """The per-chip decode step a configuration stands for: what a test marked with
    ``max_time=`` (the TPOT target) checks on a chip."""
    from .models import load

    transformer: Any = load(model) if isinstance(model, str) else model
    step: Workload = transformer.decode(config.batch, isl + osl // 2, tp=config.tp, ep=config.ep,
                              dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                              link=link)
    return step


# -- training ---------------------------------------------------------------------------------

RECOMPUTES = ("none", "selective", "full")


@dataclass(frozen=True)
class TrainingConfig:
    """One training configuration and its bound (s a step, tokens/s per chip)."""

    dp: int
    tp: int
    pp: int
    zero: int
    microbatches: int
    recompute: str
    step_time: float
    throughput: float  # training tokens per second per chip
    footprint: float  # bytes per chip
    regime: str  # the step's regime: the resource that holds most of its time

    def label(self) -> str:
        parts = [f"dp={self.dp}", f"tp={self.tp}", f"pp={self.pp}", f"zero={self.zero}"]
        if self.microbatches > 1:
            parts.append(f"microbatches={self.microbatches}")
        if self.recompute != "none":
            parts.append(f"recompute={self.recompute}")
        return ", ".join(parts)


@dataclass(frozen=True)
class TrainingPlan:
    """The training configurations that fit (and meet the step-time target), best first."""

    model: str
    hw: str
    chips: int
    batch: int
    seq: int
    step_target: float | None
    configs: tuple[TrainingConfig, ...]
    searched: int

    @property
    def best(self) -> TrainingConfig | None:
        return self.configs[0] if self.configs else None

    def table(self, top: int = 10) -> str:
        from .text_table import render

        fmt = units.format_time
        head = (f"{self.model} training on {self.chips} x {self.hw}, batch {self.batch} x "
                f"{self.seq} tokens" + (f", step <= {fmt(self.step_target)}"
                                        if self.step_target else "")
                + f": {len(self.configs)} of {self.searched} configurations qualify")
        rows = [[str(i + 1), c.label(), fmt(c.step_time), f"{c.throughput:,.0f}",
                 units.si(c.footprint, "B"), c.regime] for i, c in enumerate(self.configs[:top])]
        if not rows:
            return head
        body = render(["#", "configuration", "step", "tok/s/chip", "memory/chip", "regime"],
                      rows)
        return "\n".join([head, *body])


def _divisors(n: int, most: int) -> list[int]:
    return [d for d in range(1, min(n, most) + 1) if n % d == 0]


def plan_training(model: Any, hw: Hardware | str, *, chips: int, batch: int, seq: int,
                  step_time: object = None, dtype: str = "bf16", link: str | None = None,
                  max_microbatches: int = 64) -> TrainingPlan:
    """Search training configurations of *model* on *chips* x *hw* for a global *batch* of
    *seq*-token sequences: dp x tp x pp = chips, ZeRO 0-3, microbatches dividing each
    replica's batch (up to *max_microbatches*), and recomputation; keep those that fit (and
    take at most *step_time*), ranked by tokens per second per chip
    (:meth:`Transformer.train_step` prices each; ``models.training`` states its rules).

    One step is analyzed per (dp, tp, pp, zero, recompute); the microbatches change only the
    pipeline bubble, which scales the stage's kernels (their times are linear in their
    counts), and the activations, so each count costs a footprint and no analysis."""
    from .models import Transformer, load

    transformer = load(model) if isinstance(model, str) else model
    if not isinstance(transformer, Transformer) or transformer.config.architecture != "decoder":
        raise RooflineError(f"plan_training: the model must be a decoder LLM, got "
                            f"{brief(model)}")
    chip = hw if isinstance(hw, Hardware) else get_hardware(hw)
    where = "plan_training"
    chips = _whole(chips, "chips", where=where)
    batch, seq = _whole(batch, "batch", where=where), _whole(seq, "seq", where=where)
    max_microbatches = _whole(max_microbatches, "max_microbatches", where=where)
    target = _target(step_time, "plan_training: step_time")
    _precisions("plan_training", dtype=dtype)
    found: list[TrainingConfig] = []
    searched = 0
    for tp, pp, _ in _splits(chips, False):
        dp = chips // (tp * pp)
        if batch % dp:
            continue
        for zero in (0, 1, 2, 3):
            for recompute in RECOMPUTES:
                try:
                    step = transformer.train_step(batch, seq, tp=tp, dp=dp, pp=pp, zero=zero,
                                                  recompute=recompute, dtype=dtype, link=link)
                except WorkloadError:
                    break
                r = analyze(step, chip)
                stage = sum(k.time for k in r.kernels
                            if not k.name.startswith(("optimizer.", "dp.", "pp.")))
                rest = r.time - stage
                first_bubble = float(pp)  # microbatches=1: 1 + (pp - 1)
                for m in _divisors(batch // dp, max_microbatches):
                    searched += 1
                    fp = transformer.train_footprint(batch, seq, tp=tp, dp=dp, pp=pp,
                                                     zero=zero, microbatches=m,
                                                     recompute=recompute, dtype=dtype)
                    memory = float(fp.total)
                    seconds = stage / first_bubble * (1.0 + (pp - 1) / m) + rest
                    if memory > chip.memory_capacity or (target is not None
                                                         and seconds > target):
                        continue
                    found.append(TrainingConfig(
                        dp=dp, tp=tp, pp=pp, zero=zero, microbatches=m, recompute=recompute,
                        step_time=seconds, throughput=batch * seq / (seconds * chips),
                        footprint=memory, regime=r.regime))
    found.sort(key=lambda c: (-c.throughput, c.footprint))
    return TrainingPlan(model=transformer.name, hw=chip.name, chips=chips, batch=batch,
                        seq=seq, step_target=target, configs=tuple(found), searched=searched)
